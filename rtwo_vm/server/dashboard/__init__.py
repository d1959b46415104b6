"""The dashboard: the seed's page with real content, the pages behind it and live events."""

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Add the dashboard's routes and static assets to ``app``."""
