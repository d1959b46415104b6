"""The dashboard passes axe-core on every page (issue 39, item 9): Chromium, driven by
Playwright, opens each page of a real ``rtwo-vm serve`` (every GET route of the dashboard's
router, with records to show: a call of a long program that succeeds, one that traps into a
violation)
and runs axe-core inside it; no rule may be violated, whatever its impact.

axe-core comes from the npm registry at a pinned version and checksum
(scripts/install-axe-core.sh, run by scripts/install-chromium.sh) into .cache/axe-core/ of the
checkout; the browser is Debian's Chromium. The pages' Content-Security-Policy allows no
script but their own, so the browser context bypasses it to let axe in; nothing else changes.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api")

from server_support import AUTH, ROOT, STORES, TRAPS, code_hex, serving  # noqa: E402

# A program long enough that its disassembly on /results/{id} scrolls (pre.code stops at 40em):
# 120 instructions, then it writes slot 3 := 1 (STORES).
LONG = "push 1\npop\n" * 60 + STORES
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
AXE = ROOT / ".cache" / "axe-core" / "axe.min.js"
API = "/api/v1"
# The routes that are no page: the live stream, the overview's JSON, the form's target.
NOT_PAGES = {"/live", "/overview/sections", "/readiness/recompute"}

RUN_AXE = """async () => {
  const found = await axe.run(document, {resultTypes: ["violations"]});
  return found.violations.map(v => ({rule: v.id, impact: v.impact, help: v.help,
                                     nodes: v.nodes.map(n => n.target.join(" "))}));
}"""


def needs() -> None:
    """Chromium and axe-core, installed by scripts/install-chromium.sh: skipped without them,
    except in CI (``CI`` set, as .ci/run does), where a missing one is a failure."""
    missing = [what for what, there in (("Chromium", CHROMIUM), ("axe-core", AXE.is_file()))
               if not there]
    if missing and not os.environ.get("CI"):
        pytest.skip(f"no {' or '.join(missing)} (scripts/install-chromium.sh)")
    assert not missing, f"{' and '.join(missing)} missing: scripts/install-chromium.sh"


def dashboard_routes() -> set[str]:
    """Every page route of the dashboard (its router's GET routes)."""
    from fastapi.routing import APIRoute
    from rtwo_vm.server.dashboard import router
    return {r.path for r in router.routes
            if isinstance(r, APIRoute) and "GET" in (r.methods or ()) and r.path not in NOT_PAGES}


def test_every_dashboard_page_passes_axe(tmp_path):
    needs()
    with serving(tmp_path) as srv:
        with httpx.Client(base_url=srv.url, headers=AUTH, timeout=60) as c:
            c.post(f"{API}/contracts", json={"code": code_hex(LONG), "address": "0x100"})
            c.post(f"{API}/contracts", json={"code": code_hex(TRAPS), "address": "0x200"})
            ok = c.post(f"{API}/calls", json={"to": "0x100"}).json()
            trap = c.post(f"{API}/calls", json={"to": "0x200"}).json()
        assert trap["violations"], trap
        deadline = time.monotonic() + 120      # the overview with its readiness report
        while httpx.get(srv.url + f"{API}/readiness", timeout=30).json()["state"] != "computed":
            assert time.monotonic() < deadline, "no readiness report within 120 s"
            time.sleep(0.2)
        context, result = ok["context"]["contextId"], ok["result"]["resultId"]
        pages = {"/": "/", "/contexts": "/contexts",
                 "/contexts/{context_id:path}": f"/contexts/{context}",
                 "/results/{result_id:path}": f"/results/{result}",
                 "/accounting/{context_id:path}": f"/accounting/{context}",
                 "/violations": "/violations", "/instructions": "/instructions",
                 "/events": "/events", "/reports": "/reports"}
        assert set(pages) == dashboard_routes(), "a dashboard page this test does not open"
        urls = [*pages.values(), f"/contexts/{trap['context']['contextId']}",
                f"/results/{trap['result']['resultId']}", "/contexts?status=committed",
                "/contexts/ctx_none"]                                # and the 404 page
        found: dict[str, list] = {}
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"],
                                         headless=True)
            try:
                context_ = browser.new_context(bypass_csp=True,
                                               viewport={"width": 1280, "height": 900})
                page = context_.new_page()
                for url in urls:
                    page.goto(srv.url + url)
                    if url == "/":
                        assert page.locator("#recompute").count() == 1
                    page.add_script_tag(path=str(AXE))
                    violations = page.evaluate(RUN_AXE)
                    if violations:
                        found[url] = violations
            finally:
                browser.close()
        assert not found, found


def test_axe_is_pinned_and_installed_by_the_ci_install_step():
    script = (ROOT / "scripts" / "install-axe-core.sh").read_text()
    assert "VERSION=" in script and "INTEGRITY=sha512-" in script
    assert "install-axe-core.sh" in (ROOT / "scripts" / "install-chromium.sh").read_text()
    assert "scripts/install-chromium.sh" in (ROOT / ".ci" / "run").read_text()
    assert ".cache/" in (ROOT / ".gitignore").read_text().splitlines()
