"""The dashboard as a person uses it (issue 26, items 4 and 5): Chromium, driven by Playwright,
against a real ``rtwo-vm serve`` on 127.0.0.1 started here.

Open the overview, deploy and call through the HTTP API, watch the new context and the VM
the first call registered appear on the open page without a reload, and the readiness
report the API serves, follow it to its timeline, result and accounting pages, and
compare what they show with the database (read back with rtwo_vm.runtime.Runtime) and with
values derived by hand from the contract below. A call made meanwhile by another process
(the CLI) appears live too. Each page's screenshot is saved under tmp_path (and copied to
$RTWO_VM_ARTIFACTS when set). Browser: Debian's Chromium (scripts/install-chromium.sh);
Playwright downloads none.

The server runs from tmp_path, so nothing is read or written outside it.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
sync_api = pytest.importorskip("playwright.sync_api")

import spec  # noqa: E402
from server_support import VERSION  # noqa: E402
from test_runtime_support import DEFAULT_VMS  # noqa: E402
from reference_vm import assemble  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# storage[0] += 1; emit LOG1 topic "DASH" with the new count as data; return the count as
# one little-endian word. Call n therefore returns n, changes slot 0 from n-1 to n and emits
# one event (address 0x100, topic 0x44415348, data: n as 8 little-endian bytes).
CONTRACT = """
    push 0
    sload
    push 1
    add
    push 0
    dup2
    sstore
    push 0
    swap1
    mstore
    push 0
    push 8
    push 0x44415348
    log1
    push 0
    push 8
    return
"""
ADDRESS = "0x100"
TOPIC = "0x44415348"


def le_word(n: int) -> str:
    return "0x" + n.to_bytes(8, "little").hex()


START = re.compile(r"^rtwo-vm serve: http://127\.0\.0\.1:(\d+)/ over ", re.M)


def env() -> dict[str, str]:
    """The checkout's packages first, so the server runs the code under test."""
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


class Server:
    def __init__(self, tmp_path: Path):
        self.db = tmp_path / "rtwo-vm.db"
        self.token = secrets.token_hex(24)
        self.deployed = False
        token_file = tmp_path / "token"
        token_file.write_text(self.token + "\n")
        self.log = open(tmp_path / "server.log", "wb")
        # Port 0: the server binds a free port and names it in its start line (a port picked
        # here could be taken before the server binds it, by another xdist worker's server).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rtwo_vm.cli", "serve", "--db", str(self.db), "--port", "0",
             "--token-file", str(token_file)],
            cwd=tmp_path, env=env(), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while (found := START.search(self.output())) is None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not start: {self.output()}")
            time.sleep(0.1)
        self.port = int(found.group(1))
        self.base = f"http://127.0.0.1:{self.port}"
        while True:
            try:
                if httpx.get(self.base + "/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not start: {self.output()}")
            time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    def api(self, method: str, path: str, body: dict) -> dict:
        response = httpx.request(method, self.base + "/api/v1" + path, json=body, timeout=30,
                                 headers={"Authorization": f"Bearer {self.token}"})
        assert response.status_code in (200, 201), (path, response.status_code, response.text)
        return response.json()

    def stop(self) -> float:
        """SIGINT (as Ctrl-C), then kill if it has not exited after 15 s; the seconds taken."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
        return time.monotonic() - started


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path)
    try:
        yield srv
    finally:
        srv.stop()


def deploy_and_call(srv: Server, code: bytes) -> None:
    """Deploy the contract at 0x100 through the API (once) and call it from 0x1."""
    if not srv.deployed:
        srv.api("POST", "/contracts", {"code": code.hex(), "address": ADDRESS})
        srv.deployed = True
    srv.api("POST", "/calls", {"to": ADDRESS, "caller": "0x1", "callData": ""})


class Shots:
    def __init__(self, tmp_path: Path):
        self.dir = tmp_path / "screenshots"
        self.dir.mkdir()
        self.copy_to = os.environ.get("RTWO_VM_ARTIFACTS")

    def take(self, page, name: str) -> None:
        path = self.dir / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        if self.copy_to:
            Path(self.copy_to).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(self.copy_to) / path.name)


def db_records(db: Path):
    """Every entry context in the database, oldest first, with its records."""
    from rtwo_vm.runtime import Runtime
    with Runtime(db, create=False) as rt:
        out = []
        for ctx in rt.contexts.list(roots_only=True):
            out.append({"context": ctx, "history": rt.contexts.history(ctx.context_id),
                        "result": rt.results.for_context(ctx.context_id),
                        "accounting": rt.accounting.for_context(ctx.context_id),
                        "sandbox": rt.sandboxes.for_context(ctx.context_id)})
        return out


def db_vms(db: Path):
    """The VMs in the database, as the registry lists them."""
    from rtwo_vm.runtime import Runtime
    with Runtime(db, create=False) as rt:
        return rt.vms.list(limit=20)


def wait_for(predicate, timeout: float = 20.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (scripts/install-chromium.sh)")
def test_dashboard_in_a_browser(server, tmp_path):
    code = assemble(CONTRACT, VERSION)
    shots = Shots(tmp_path)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

            # A fresh database: no VM, no contexts, and the banner.
            page.goto(server.base + "/")
            assert "Truthful Data Policy Enforced" in page.inner_text(".banner")
            assert page.inner_text("#vm-none") == "no VM registered yet"
            assert page.inner_text('[data-model="RTWOExecutionContext"]') == "0 records"
            assert page.inner_text('[data-service="contexts"]') == "idle"
            assert page.locator("#services tbody tr").count() == 11
            assert page.locator(".model").count() == 8
            page.wait_for_selector("body[data-live-state=open]", timeout=15000)
            page.evaluate("window.notReloaded = true")

            # Deploy and call through the API: the context appears on the open page.
            deploy_and_call(server, code)
            first = wait_for(lambda: db_records(server.db), what="the call's records")[0]
            first_id = first["context"].context_id
            page.wait_for_selector(f'#contexts-live tr[data-context="{first_id}"]', timeout=15000)
            page.wait_for_function(
                "document.querySelector('[data-model=\"RTWOExecutionContext\"]').textContent"
                " === '1 record'", timeout=15000)
            assert page.inner_text('[data-service="contexts"]') == "operational"
            # The first call registered the VMs (one per version and mode): their identities,
            # versions and modes appear on the open page, as the database holds them.
            vms = wait_for(lambda: db_vms(server.db), what="the registered VMs")
            assert len(vms) == DEFAULT_VMS
            page.wait_for_selector(f'#vms tbody tr:has-text("{vms[-1].vm_id}")', timeout=15000)
            assert page.locator("#vm-none").count() == 0
            cells = page.eval_on_selector_all(
                "#vms tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
            assert cells == [[vm.vm_id, vm.vm_name, vm.vm_version,
                              ", ".join(vm.runtime_compatibility), vm.execution_mode, vm.status,
                              vm.created_at] for vm in vms]
            page.wait_for_function(
                "document.querySelector('[data-service=\"vms\"]').textContent === 'operational'",
                timeout=15000)
            # Readiness: the report the API serves (one cache for both), without a reload.
            page.wait_for_selector("#readiness", timeout=120000)
            report = wait_for(lambda: httpx.get(server.base + "/api/v1/readiness",
                                                timeout=10).json()["report"],
                              timeout=120, what="the readiness report")
            assert page.inner_text("#readiness") == report["readiness"]
            assert page.eval_on_selector_all(
                "#checks tbody tr", "rows => rows.map(r => r.cells[0].textContent)") == [
                c["name"] for c in report["checks"]]
            assert page.evaluate("window.notReloaded") is True
            shots.take(page, "overview")

            # The contexts page, live: a call from another process (the CLI) appears too.
            page.goto(server.base + "/contexts")
            page.wait_for_selector("body[data-live-state=open]", timeout=15000)
            page.evaluate("window.notReloaded = true")
            cli = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "call", ADDRESS, "--db",
                                  str(server.db), "--caller", "0x2"], cwd=tmp_path, env=env(),
                                 capture_output=True, text=True, timeout=60)
            assert cli.returncode == 0, cli.stderr
            records = db_records(server.db)
            assert len(records) == 2
            second_id = records[1]["context"].context_id
            page.wait_for_selector(f'#contexts-live tr[data-context="{second_id}"]', timeout=15000)
            assert page.evaluate("window.notReloaded") is True
            ids = page.eval_on_selector_all("#contexts tbody tr",
                                            "rows => rows.map(r => r.dataset.context)")
            assert ids == [second_id, first_id]      # newest first
            shots.take(page, "contexts")

            # Follow the first context to its timeline: ten stages, as recorded.
            page.click(f'#contexts-live tr[data-context="{first_id}"] a')
            page.wait_for_url(f"**/contexts/{first_id}")
            steps = page.locator("#timeline li")
            assert steps.count() == 10
            entered = page.eval_on_selector_all(
                "#timeline li.entered", "items => items.map(li => [li.querySelector('.stage')"
                ".textContent, li.querySelector('time').textContent])")
            assert entered == [[e.stage, e.at] for e in first["history"]]
            # A successful call passes every stage and commits (chapter 8).
            assert [s for s, _ in entered] == [
                "requested", "validated", "policy_bound", "sandbox_provisioned", "state_loaded",
                "executing", "executed", "accounted", "committed", "finalized"]
            shots.take(page, "timeline")

            # Its result: output, state change, event, the code's disassembly.
            page.click("#result-link")
            page.wait_for_url(f"**/results/{first['result'].result_id}")
            assert page.inner_text("#output") == le_word(1) == first["result"].output
            changes = page.eval_on_selector_all(
                "#state-changes tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
            assert changes == [[ADDRESS, "0x0", "0x0", "0x1"]]
            assert changes == [[c["address"], c["key"], c["before"], c["after"]]
                               for c in first["result"].state_changes]
            events = page.eval_on_selector_all(
                "#events tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
            assert events == [[ADDRESS, TOPIC, le_word(1)]]
            listing = page.inner_text("#disassembly")
            for mnemonic in ("sload", "sstore", "mstore", "log1", "return"):
                assert mnemonic in listing
            shots.take(page, "result")

            # Its accounting: usage against the sandbox's limits, per dimension.
            page.goto(server.base + f"/contexts/{first_id}")
            page.click("#accounting-link")
            page.wait_for_url(f"**/accounting/{first_id}")
            acc, box = first["accounting"], first["sandbox"]
            for dimension, used, limit in (
                    ("compute", acc.compute_units, box.compute_limit_reference),
                    ("memory", acc.memory_units, box.memory_limit_reference),
                    ("storage", acc.storage_units, box.storage_limit_reference)):
                row = page.locator(f'#bars tr[data-dimension="{dimension}"]')
                meter = row.locator("meter")
                assert int(meter.get_attribute("value")) == used
                assert int(meter.get_attribute("max")) == limit
                assert f"{used:,} of {limit:,}" in row.inner_text()
            # Limits of spec/data/limits.toml [default]; the contract touches one memory page.
            defaults = spec.load(VERSION).limits["default"]
            assert box.compute_limit_reference == defaults["compute"]
            assert acc.memory_units == 1
            shots.take(page, "accounting")

            # The instruction registry sorts in the browser.
            page.goto(server.base + "/instructions")
            rows = page.locator("#instructions tbody tr")
            assert rows.count() == len(spec.load(VERSION).instructions)
            page.click("#instructions th:nth-child(1) button")       # ascending
            page.click("#instructions th:nth-child(1) button")       # descending
            top = max(i.opcode for i in spec.load(VERSION).instructions)
            assert rows.first.locator("td").first.inner_text() == f"0x{top:02x}"
            shots.take(page, "instructions")

            for name in ("violations", "events", "reports"):
                page.goto(server.base + f"/{name}")
                assert page.title().startswith(name.capitalize())
                shots.take(page, name)
            page.goto(server.base + "/")
            assert page.inner_text('[data-model="RTWOExecutionContext"]') == "2 records"
            shots.take(page, "overview-after")
            assert not errors, errors
        finally:
            browser.close()


def test_live_stream_ends_with_its_client_and_with_the_server(server):
    """A /live stream ends when its client goes away, and an open one does not keep the
    server from shutting down (uvicorn waits for open responses before it stops)."""
    def open_streams() -> int:
        text = httpx.get(server.base + "/events", timeout=10).text
        return int(text.split('id="live-streams">')[1].split("<")[0])

    with httpx.stream("GET", server.base + "/live", timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()     # kept: dropping the iterator closes the response
        assert next(lines) == "retry: 2000"
        assert wait_for(lambda: open_streams() == 1, what="one open stream")
    wait_for(lambda: open_streams() == 0, what="the stream to end with its client")

    with httpx.stream("GET", server.base + "/live", timeout=10) as response:
        lines = response.iter_lines()
        next(lines)
        assert wait_for(lambda: open_streams() == 1, what="one open stream")
        seconds = server.stop()
    assert server.proc.returncode is not None
    assert seconds < 8, f"the server took {seconds:.1f} s to stop with a live stream open"
