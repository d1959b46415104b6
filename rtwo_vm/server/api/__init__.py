"""The JSON API, ``/api/v1/...``: collections, records and actions over the runtime's services."""

from fastapi import APIRouter

router = APIRouter()
