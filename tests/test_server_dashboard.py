"""The dashboard without a browser (issue 26, item 4): hostile record values are escaped on
every page, unknown ids give the 404 page, bad filters a 400; and the database stays shared
with other processes while the server holds several connections (the pool's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from reference_vm import assemble  # noqa: E402
from server_support import VERSION  # noqa: E402
from test_runtime_support import DEFAULT_VMS  # noqa: E402
from rtwo_vm.runtime import Runtime  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
COUNTER = (ROOT / "examples" / "counter.rasm").read_text()


@pytest.fixture
def client(tmp_path):
    from rtwo_vm.server import create_app
    db = tmp_path / "rtwo-vm.db"
    with Runtime(db) as rt:
        rt.deploy(assemble(COUNTER, VERSION), 0x100)
        recorded = rt.call(to=0x100, caller=1, transaction_reference=HOSTILE)
        rt.vms.register(HOSTILE)
    app = create_app(db)
    with TestClient(app, base_url="http://localhost") as c:   # a served Host
        app.state.readiness.refresh()
        assert app.state.readiness.wait(120)
        yield c, recorded


def test_hostile_values_are_escaped_on_every_page(client):
    c, recorded = client
    ctx, res = recorded.context.context_id, recorded.result.result_id
    pages = ["/", "/contexts", f"/contexts/{ctx}", f"/results/{res}", f"/accounting/{ctx}",
             "/violations", "/instructions", "/events", "/reports",
             f"/contexts?contract={HOSTILE}", f"/contexts/{HOSTILE}", f"/violations?type={HOSTILE}"]
    escaped = "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    for path in pages:
        response = c.get(path)
        assert response.headers["content-type"].startswith("text/html"), path
        assert "<script>alert" not in response.text and "<img src=x" not in response.text, path
        assert "script-src 'self'" in response.headers["content-security-policy"]
    # The hostile VM name and transaction reference are shown, as text.
    assert escaped in c.get("/").text
    assert escaped in c.get(f"/contexts/{ctx}").text


def test_unknown_ids_give_the_404_page_and_bad_filters_a_400(client):
    c, _ = client
    for path in ("/contexts/ctx_missing", "/results/res_missing", "/accounting/ctx_missing",
                 "/contexts/..%2F..%2Fetc%2Fpasswd", "/results/%2Fetc%2Fpasswd"):
        response = c.get(path)
        assert response.status_code == 404, path
        assert "Not found" in response.text and "root:" not in response.text
    for path in ("/contexts?status=bogus", "/contexts?result=bogus", "/contexts?contract=zz",
                 "/contexts?before=-1", "/violations?type=bogus", "/events?before=x"):
        assert c.get(path).status_code == 400, path


def test_pages_show_the_records(client):
    c, recorded = client
    ctx = recorded.context.context_id
    # counter.rasm: the first call sets slot 0 from 0 to 1 and returns 1 (one LE word).
    result = c.get(f"/results/{recorded.result.result_id}").text
    assert '<code id="output">0x0100000000000000</code>' in result
    assert "<td>0x100</td><td>0x0</td><td>0x0</td><td>0x1</td>" in result
    timeline = c.get(f"/contexts/{ctx}").text
    assert timeline.count('class="entered"') == 10
    overview = c.get("/").text
    assert 'data-model="RTWOExecutionContext">1 record<' in overview
    assert 'data-service="contexts">operational<' in overview


def test_the_overview_reads_like_the_evidence(client):
    """Model descriptions show docstring literals as code, never raw double backquotes; each
    service line reads "state: evidence"; the readiness shown is the API's report."""
    c, recorded = client
    overview = c.get("/").text
    assert "``" not in overview
    assert "<code>allowedOperations</code> None allows every operation" in overview
    assert ('data-service="contexts">operational</span>: <span data-evidence="contexts">'
            f"1 context, last at {recorded.context.created_at}</span>") in overview
    assert 'data-service="violations">idle</span>: <span data-evidence="violations">' \
           "no violations recorded yet</span>" in overview
    report = c.get("/api/v1/readiness").json()["report"]
    assert f'<strong id="readiness">{report["readiness"]}</strong>' in overview


def test_the_live_sections_are_the_pages(client):
    """/overview/sections: the VM and readiness sections as the overview renders them, for
    the live script; the VM section follows the registry."""
    c, _ = client
    doc = c.get("/overview/sections").json()
    assert set(doc["sections"]) == {"vm", "readiness"}
    overview = c.get("/").text
    # An age is said at each rendering ("computed just now", data-age in seconds): the
    # two renderings may be a second apart, so the ages are compared apart from the rest.
    aged = re.compile(r'data-age="\d+"(?P<rest>[^>]*>)computed [^<]*</time>')
    for html in doc["sections"].values():
        assert html.startswith("<section") and aged.sub(r"\g<rest></time>", html) in \
            aged.sub(r"\g<rest></time>", overview)
    assert len(aged.findall(doc["sections"]["readiness"])) == 1
    assert doc["summary"]["services"]["vms"]["state"] == "operational"
    assert doc["summary"]["models"]["RTWOVirtualMachine"] == DEFAULT_VMS + 1   # and the one the test registered


def test_one_readiness_computation_per_process(client):
    """The dashboard shows the API's readiness cache: no second computation of its own."""
    import threading
    c, _ = client
    c.get("/")
    c.get("/api/v1/readiness")
    assert [t.name for t in threading.enumerate()].count("rtwo-readiness") <= 1
    assert not any(t.name == "dashboard-readiness" for t in threading.enumerate())


def test_a_second_connection_keeps_the_database_shared(tmp_path):
    """Two connections of one process (a server's pool) and a writer in another process:
    the writer's close must not take itself for the last connection and delete the -wal and
    -shm files under the open ones (rtwo_vm/runtime/trust.py, _OPEN)."""
    db = tmp_path / "shared.db"
    first = Runtime(db)
    first.deploy(assemble(COUNTER, VERSION), 0x100)
    second = Runtime(db)           # opened while the first is open, as the pool does
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
        for _ in range(2):
            out = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "call", "0x100", "--db",
                                  str(db)], capture_output=True, text=True, env=env, timeout=120)
            assert out.returncode == 0, out.stderr
        assert Path(str(db) + "-shm").exists()
        assert first.contexts.count() == second.contexts.count() == 2
    finally:
        first.close()
        second.close()
