"""Access and bounds: bearer tokens for actions, limits on request bodies and queries."""

from __future__ import annotations

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Add the access rules to ``app`` (filled in by the API's work)."""
