"""The API's refusals and bounds, read from the spec (spec/data/api.toml and errors.toml).

A refused request is answered ``{"error": CODE, "message": one line}``: CODE is an outcome
code of errors.toml (status ``outcome_status.default``) or one of api.toml's HTTP-only
refusals (each with its own status). Nothing here writes a code, a status or a bound itself.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from pydantic import BaseModel, ConfigDict, Field

from rtwo_vm.runtime.catalog import runtime_spec


@dataclass(frozen=True)
class Bounds:
    max_body_bytes: int
    max_query_bytes: int
    default_page_size: int
    max_page_size: int
    max_text_chars: int
    readiness_max_age_seconds: int
    max_counted: int
    max_header_bytes: int
    header_timeout_seconds: int
    body_timeout_seconds: int
    keep_alive_seconds: int
    max_connections: int
    live_max_streams: int
    live_lifetime_seconds: int
    live_replay_events: int


@functools.cache
def bounds() -> Bounds:
    return Bounds(**runtime_spec().raw("api")["bounds"])


@dataclass(frozen=True)
class Headers:
    single: frozenset[str]        # headers a request may give at most once (lowercase)
    loopback_hosts: tuple[str, ...]   # the Host names served by default


@functools.cache
def headers() -> Headers:
    doc = runtime_spec().raw("api")["headers"]
    return Headers(frozenset(doc["single_headers"]), tuple(doc["loopback_hosts"]))


@functools.cache
def statuses() -> Mapping[str, int]:
    """Every code the API answers with -> its HTTP status: errors.toml's codes (refused
    content) and api.toml's refusals. A code in both files is a spec inconsistency."""
    doc = runtime_spec().raw("api")
    outcome = {code: doc["outcome_status"]["default"] for code in runtime_spec().errors}
    http = {r["code"]: r["status"] for r in doc["refusal"]}
    both = sorted(set(outcome) & set(http))
    if both:
        raise ValueError(f"api.toml repeats the errors.toml code {both[0]}")
    return MappingProxyType({**outcome, **http})


def status_of(code: str) -> int:
    return statuses()[code]


def refusal_body(code: str, message: str) -> bytes:
    """A refusal as the answer's JSON body (for the layers that answer below the application)."""
    return json.dumps({"error": code, "message": message}).encode()


class ApiError(Exception):
    """A refusal: a spec code and a one-line message (the status follows from the code)."""

    def __init__(self, code: str, message: str):
        if code not in statuses():
            raise ValueError(f"{code} is not a code of errors.toml or api.toml")
        lines = str(message).splitlines()
        super().__init__(lines[0] if lines else code)
        self.code = code
        self.message = lines[0] if lines else code
        self.status = status_of(code)


class ErrorBody(BaseModel):
    """A refusal as the API answers it."""

    model_config = ConfigDict(extra="forbid")
    error: str = Field(description="a code of spec/data/errors.toml or spec/data/api.toml",
                       pattern="^[A-Z][A-Z0-9_]*$")
    message: str = Field(description="one line saying why")


def refusals(*codes: str) -> dict[int | str, dict]:
    """The ``responses`` entry of a route: these codes' statuses answer with ErrorBody."""
    out: dict[int | str, dict] = {}
    for code in codes:
        status = status_of(code)
        entry = out.setdefault(status, {"model": ErrorBody, "description": ""})
        entry["description"] = ", ".join(filter(None, (entry["description"], code)))
    return out
