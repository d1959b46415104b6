"""Readiness on the dashboard is current or says its age (issue 39, item 3): the overview shows
how long ago readiness was computed, "recompute now" (the page's form and ``POST
/api/v1/readiness/recompute``) computes it again, after which the figures shown next to each
other agree; and no page runs the readiness checks itself, so a page costs the same at any
size of the database. Counts are derived by hand: each call of a contract that stops records
one context."""

from __future__ import annotations

import html
import re
import shutil
import time

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from reference_vm import assemble  # noqa: E402
from server_support import AUTH, STOPS, TOKEN, VERSION, serving  # noqa: E402
from rtwo_vm.runtime import Runtime  # noqa: E402
from rtwo_vm.runtime.readiness import VMReadinessService  # noqa: E402

API = "/api/v1"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
LOCAL = "http://localhost"   # a Host and an origin the application serves


def _calls(db, n: int) -> None:
    with Runtime(db) as rt:
        for _ in range(n):
            assert rt.call(to=0x100, caller=1).result.execution_status == "success"


def _database(tmp_path):
    """A database of three calls and one sink (nothing delivered)."""
    db = tmp_path / "rtwo-vm.db"
    with Runtime(db) as rt:
        rt.deploy(assemble(STOPS, VERSION), 0x100)
        rt.events.add_sink("jsonl", str(tmp_path / "events.jsonl"))
    _calls(db, 3)
    return db


@pytest.fixture
def served(tmp_path):
    """An application over :func:`_database`, its first readiness report computed."""
    from rtwo_vm.server import create_app
    db = _database(tmp_path)
    app = create_app(db, token=TOKEN)
    with TestClient(app, base_url=LOCAL) as c:
        app.state.readiness.refresh()
        assert app.state.readiness.wait(120)
        yield app, c, db


def figures(page: str) -> dict[str, tuple[int, int]]:
    """(contexts, undelivered) as the readiness evidence and as the service lines say them."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    evidence = re.search(r"(\d+) contexts \(\d+ entry\).*?(\d+) undelivered to ", text)
    contexts = re.search(r"([\d,]+) contexts, last at", text)
    pending = re.search(r"sink: \S+ ([\d,]+) undelivered", text)
    assert evidence and contexts and pending, text[:3000]
    return {"readiness": (int(evidence[1]), int(evidence[2])),
            "services": (int(contexts[1].replace(",", "")), int(pending[1].replace(",", "")))}


def test_the_page_shows_the_age_and_recompute_makes_the_figures_agree(served):
    app, c, db = served
    page = c.get("/").text
    shown = figures(page)
    assert shown["readiness"] == shown["services"] and shown["readiness"][0] == 3
    assert re.search(r'<time datetime="[^"]+" data-age="\d+" class="age"', page)
    assert "computed just now" in page or re.search(r"computed \d+ s ago", page)
    assert "computed from evidence when the page is asked for" not in page
    assert 'action="/readiness/recompute"' in page

    # Two more calls (as another process would make them): the service lines count them at
    # once, the readiness report is older and says how old.
    _calls(db, 2)
    app.state.readiness._done_at -= 180            # as if computed three minutes ago
    page = c.get("/").text
    shown = figures(page)
    assert shown["services"][0] == 5 and shown["readiness"][0] == 3
    assert shown["services"][1] > shown["readiness"][1]
    assert "computed 3 min ago" in page

    # Recompute now through the API: an action (the token), answered at once.
    assert c.post(f"{API}/readiness/recompute").status_code == 401
    answer = c.post(f"{API}/readiness/recompute", headers=AUTH)
    assert answer.status_code == 202 and answer.json()["state"] == "computing"
    assert answer.json()["computingSince"] is not None
    assert app.state.readiness.wait(120)
    doc = c.get(f"{API}/readiness").json()
    assert doc["state"] == "computed" and doc["ageSeconds"] < 60
    page = c.get("/").text
    shown = figures(page)
    assert shown["readiness"] == shown["services"] and shown["readiness"][0] == 5
    assert "computed 3 min ago" not in page

    # And through the page's form: two more calls, the button, the figures agree again.
    _calls(db, 2)
    pressed = c.post("/readiness/recompute", headers={"Origin": LOCAL}, follow_redirects=False)
    assert pressed.status_code == 303 and pressed.headers["location"] == "/#readiness-section"
    assert app.state.readiness.wait(120)
    shown = figures(c.get("/").text)
    assert shown["readiness"] == shown["services"] and shown["readiness"][0] == 7


def test_the_form_is_refused_from_another_site(served):
    app, c, _ = served
    before = app.state.readiness.version
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"}):
        answer = c.post("/readiness/recompute", headers=headers, follow_redirects=False)
        assert answer.status_code == 403 and answer.json()["error"] == "FORBIDDEN_ORIGIN"
    assert app.state.readiness.version == before      # nothing started


def test_pages_never_run_the_readiness_checks(served, monkeypatch):
    """The checks read every context (seconds at 100,000): pages and the API's reads serve
    the computed report and never run them; only a recompute (or a report older than
    api.toml bounds.readiness_max_age_seconds) starts one, in the background."""
    app, c, _ = served
    runs: list[int] = []
    real = VMReadinessService.run

    def counted(self, *args, **kwargs):
        runs.append(1)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(VMReadinessService, "run", counted)
    for _ in range(3):
        for path in ("/", "/overview/sections", "/instructions", f"{API}/readiness",
                     f"{API}/overview", f"{API}/readiness/database"):
            assert c.get(path).status_code == 200, path
    assert runs == []
    assert c.post(f"{API}/readiness/recompute", headers=AUTH).status_code == 202
    assert app.state.readiness.wait(120)
    assert runs == [1]


def test_a_recompute_asked_during_a_computation_gets_one_after_it(served, monkeypatch):
    """A report that started before the request may miss what it asked to count: one more
    computation follows the running one (and only one, however often it is asked)."""
    import threading
    app, c, _ = served
    gate = threading.Event()
    runs: list[int] = []
    real = VMReadinessService.run

    def slow(self, *args, **kwargs):
        runs.append(1)
        gate.wait(60)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(VMReadinessService, "run", slow)
    cache = app.state.readiness
    cache.recompute()                        # starts one, held at the gate
    for _ in range(3):
        assert c.post(f"{API}/readiness/recompute", headers=AUTH).status_code == 202
    gate.set()
    assert cache.wait(120)
    assert runs == [1, 1]


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (scripts/install-chromium.sh)")
def test_the_recompute_button_in_a_browser(tmp_path):
    """Chromium (Playwright) on a real ``rtwo-vm serve``: the open overview shows the age,
    the button recomputes, and the new report appears (the live script) agreeing with the
    service lines."""
    sync_api = pytest.importorskip("playwright.sync_api")
    db = _database(tmp_path)
    with serving(tmp_path, db=db) as srv, sync_api.sync_playwright() as pw:
        deadline = time.monotonic() + 120
        while srv.client().get(f"{API}/readiness").json()["state"] != "computed":
            assert time.monotonic() < deadline, "no readiness report within 120 s"
            time.sleep(0.2)
        _calls(db, 2)
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"],
                                     headless=True)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(srv.url + "/")
            assert page.inner_text("#readiness-section time.age").startswith("computed ")
            shown = figures(page.content())
            assert shown["services"][0] == 5 and shown["readiness"][0] == 3
            page.click("#recompute")
            page.wait_for_url("**/#readiness-section")
            page.wait_for_selector('#checks td:has-text("5 contexts (5 entry)")',
                                   timeout=120000)
            shown = figures(page.content())
            assert shown["readiness"] == shown["services"] and shown["readiness"][0] == 5
            assert not errors, errors
        finally:
            browser.close()
