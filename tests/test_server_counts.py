"""Counts that stop at a bound (issue 26, item 7): a page's ``total``, the overview's counts
and the dashboard's breakdowns read at most api.toml ``bounds.max_counted`` records; up to
the bound a figure is exact, past it the answer says "more than" the bound. The expectations
are derived by hand from a database of five calls (four successes at 0x100, one trap at
0x200 with its violation) and small bounds put in place of the spec's."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from reference_vm import assemble  # noqa: E402
from server_support import VERSION  # noqa: E402
from test_runtime_support import DEFAULT_VMS  # noqa: E402
from rtwo_vm.runtime import Runtime  # noqa: E402
from rtwo_vm.runtime.records import breakdown, count_at_most  # noqa: E402
from rtwo_vm.server.api import codes  # noqa: E402

API = "/api/v1"
LOCAL = "http://localhost"   # a Host the application serves (the loopback names)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "rtwo-vm.db"
    with Runtime(path) as rt:
        rt.deploy(assemble("stop", VERSION), 0x100)
        rt.deploy(assemble("trap", VERSION), 0x200)
        for _ in range(4):
            assert rt.call(to=0x100, caller=1).result.execution_status == "success"
        assert rt.call(to=0x200, caller=1).result.execution_status == "fault"
    return path


def _bound(monkeypatch, n: int) -> None:
    """api.toml's bounds with max_counted = n, wherever the server reads them."""
    from rtwo_vm.server.api import paging, records
    from rtwo_vm.server.dashboard import executions, overview
    patched = dataclasses.replace(codes.bounds(), max_counted=n)
    for module in (paging, records, executions, overview):
        monkeypatch.setattr(module, "bounds", lambda: patched)


def test_a_count_is_exact_up_to_the_bound_and_more_than_it_past_it(db):
    with Runtime(db) as rt:
        # five contexts: counted exactly with a bound of 5 or more, "more than 4" with 4
        assert count_at_most(rt.store, "contexts", (), 6) == (5, True)
        assert count_at_most(rt.store, "contexts", (), 5) == (5, True)
        assert count_at_most(rt.store, "contexts", (), 4) == (4, False)
        assert count_at_most(rt.store, "contexts", (), 1) == (1, False)
        assert count_at_most(rt.store, "contexts") == (5, True)   # no bound: exact
        with pytest.raises(ValueError):
            count_at_most(rt.store, "contexts", (), 0)
        page = rt.contexts.page(limit=2, count_bound=4)
        assert (page.total, page.exact, len(page.items)) == (4, False, 2)
        page = rt.contexts.page(limit=2, count_bound=5)
        assert (page.total, page.exact) == (5, True)
        # four successes: exact at a bound of 4, "more than 3" at 3; the one fault exact
        page = rt.results.page(limit=50, execution_status="success", count_bound=4)
        assert (page.total, page.exact, len(page.items)) == (4, True, 4)
        page = rt.results.page(limit=50, execution_status="success", count_bound=3)
        assert (page.total, page.exact, len(page.items)) == (3, False, 4)
        page = rt.violations.page(limit=50, count_bound=1)
        assert (page.total, page.exact) == (1, True)
        assert breakdown(rt.store, "results", "execution_status", 3) == (
            {"fault": (1, True), "success": (3, False)}, False)
        assert breakdown(rt.store, "results", "execution_status", 4) == (
            {"fault": (1, True), "success": (4, True)}, True)
        assert breakdown(rt.store, "violations", "severity", 1)[1] is True


def test_the_api_says_when_a_total_is_more_than_the_bound(db, monkeypatch):
    from rtwo_vm.server import create_app
    _bound(monkeypatch, 4)
    with TestClient(create_app(db), base_url=LOCAL) as c:
        doc = c.get(f"{API}/contexts", params={"limit": 2}).json()
        assert (doc["total"], doc["totalExact"], len(doc["items"])) == (4, False, 2)
        doc = c.get(f"{API}/results", params={"executionStatus": "success"}).json()
        assert (doc["total"], doc["totalExact"]) == (4, True)
        doc = c.get(f"{API}/violations").json()
        assert (doc["total"], doc["totalExact"]) == (1, True)
        doc = c.get(f"{API}/contracts").json()
        assert (doc["total"], doc["totalExact"]) == (2, True)
        doc = c.get(f"{API}/events").json()   # every call records more than one event
        assert (doc["total"], doc["totalExact"]) == (4, False)
        overview = c.get(f"{API}/overview").json()
        assert overview["models"]["RTWOExecutionContext"] == 4
        assert overview["modelsExact"]["RTWOExecutionContext"] is False
        assert overview["models"]["RTWOSandboxViolation"] == 1
        assert overview["modelsExact"]["RTWOSandboxViolation"] is True
        assert overview["services"]["lifecycle"] == {
            "count": 4, "countExact": False, "lastAt": overview["services"]["contexts"]["lastAt"]}
        # One VM per version and mode, counted up to the bound of 4 like the rest.
        assert overview["services"]["vms"]["count"] == min(DEFAULT_VMS, 4)
        assert overview["services"]["vms"]["countExact"] is (DEFAULT_VMS <= 4)

        page = c.get("/").text
        assert "more than 4 records" in page                          # contexts, sandboxes ...
        assert "more than 4 contexts, last at" in page
        assert "5 results (1 fault, 4 success)" in page                # each value within 4
        assert "more than 4 contexts charged" in page                  # sums not computed
        assert "more than 4</span> contexts recorded" in c.get("/contexts").text
    _bound(monkeypatch, 3)
    with TestClient(create_app(db), base_url=LOCAL) as c:
        assert "more than 4 results (1 fault, more than 3 success)" in c.get("/").text
        summary = c.get("/overview/sections").json()["summary"]
        assert summary["models"]["RTWOExecutionResult"] == 3
        assert summary["modelsExact"]["RTWOExecutionResult"] is False
    _bound(monkeypatch, 5)
    with TestClient(create_app(db), base_url=LOCAL) as c:
        doc = c.get(f"{API}/contexts").json()
        assert (doc["total"], doc["totalExact"]) == (5, True)
        page = c.get("/").text
        # Within the bound of 5 the contexts, results and charges are exact (the VMs, one per
        # version and mode, and their events may be more).
        for counted in ("contexts", "results"):
            assert f"more than 5 {counted}" not in page
        assert "5 contexts charged" in page and "5 results (1 fault, 4 success)" in page


def test_no_pages_that_load_scripts_from_a_cdn(db):
    from rtwo_vm.server import create_app
    with TestClient(create_app(db), base_url=LOCAL) as c:
        assert c.get("/docs").status_code == 404
        assert c.get("/redoc").status_code == 404
        assert c.get("/openapi.json").json()["info"]["title"] == "RTWO VM"
