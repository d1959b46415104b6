"""Property-based testing of the API from its own OpenAPI document (schemathesis) against a
live ``rtwo-vm serve``: read routes and actions (with the token), derandomized and bounded.
No answer may be a 5xx, differ from its declared schema or carry an undeclared status."""

from __future__ import annotations

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    response_schema_conformance, status_code_conformance,
)

from server_support import AUTH, STORES, TRAPS, code_hex, serving

EXAMPLES = 20   # per operation: about thirty operations, well under a minute in all


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schemathesis")
    with serving(tmp) as srv:
        with httpx.Client(base_url=srv.url, headers=AUTH, timeout=60) as c:
            c.post("/api/v1/contracts", json={"code": code_hex(STORES)})
            c.post("/api/v1/contracts", json={"code": code_hex(TRAPS), "address": "0x200"})
            c.post("/api/v1/calls", json={"to": "0x100"})
            c.post("/api/v1/calls", json={"to": "0x200"})
        yield srv


def test_no_server_error_and_no_schema_violation(live):
    schema = schemathesis.openapi.from_url(live.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        def check(case) -> None:
            case.call_and_validate(base_url=live.url, headers=AUTH,
                                   checks=[not_a_server_error, response_schema_conformance,
                                           status_code_conformance])

        check()
