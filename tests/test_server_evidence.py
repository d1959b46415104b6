"""The server finds its evidence in the data directory, never under its working directory, and
says where (issue 39, item 4): the start line, the API's readiness answer (``evidenceFrom``,
as ``rtwo-vm readiness --json``), the dashboard's readiness section and its /reports page.

A real ``rtwo-vm serve`` process runs from a folder of the user's own that holds a decoy
``build/`` (what the server read before the data directory); the data directory (inside
tmp_path) holds reports written by real ``rtwo-vm prove`` and ``rtwo-vm conformance run``
runs, and the full proofs report readiness reads, built as a complete run writes it.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from server_support import ROOT, serving  # noqa: E402
from test_runtime_readiness import complete_report  # noqa: E402


def rtwo(*args: str, cwd: Path, data: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--data-dir", str(data)],
                          cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


@pytest.fixture
def folders(tmp_path):
    """(the user's folder with a decoy build/, the data directory with real reports)."""
    user, data = tmp_path / "my-project", tmp_path / "rtwo-data"
    (user / "build" / "conformance").mkdir(parents=True)
    decoy = complete_report("counterexample")
    (user / "build" / "proofs-report.json").write_text(json.dumps(decoy))
    (user / "build" / "conformance" / "report.json").write_text(json.dumps({"ok": False}))
    rtwo("prove", "--opcode", "ADD", "--width", "64", "--no-agreement", "--no-table",
         cwd=user, data=data)
    rtwo("conformance", "run", "--filter", "hash/*", "--spec-version", "1.0", "--repeat", "0",
         "--fresh", "0", cwd=user, data=data)
    (data / "proofs-report.json").write_text(json.dumps(complete_report()))
    return user, data


def test_the_server_reads_and_names_the_data_directory_from_any_folder(tmp_path, folders):
    user, data = folders
    full, partial = data / "proofs-report.json", data / "proofs-partial-report.json"
    conformance = data / "conformance" / "1.0" / "report.json"
    with serving(tmp_path, cwd=user, extra=("--data-dir", str(data))) as server, \
            server.client() as c:
        assert f"evidence from {data} (--data-dir, $RTWO_VM_DATA)" in server.start_line
        # The API's readiness answer says where, before and after the report is computed.
        where = {"dataDir": str(data), "proofsReport": str(full)}
        answer = c.get("/api/v1/readiness").json()
        assert answer["evidenceFrom"] == where
        deadline = time.monotonic() + 120
        while answer["report"] is None or answer["state"] != "computed":
            assert time.monotonic() < deadline, answer
            time.sleep(0.2)
            answer = c.get("/api/v1/readiness").json()
        assert answer["evidenceFrom"] == where
        check = next(x for x in answer["report"]["checks"] if x["name"] == "proof_results")
        rows = len(complete_report()["results"])
        assert check["status"] == "passed", check
        assert check["evidence"].startswith(f"{rows} results in {full}: ")
        assert "complete and current" in check["evidence"]
        # The dashboard's readiness section says the same.
        overview = text_of(c.get("/").text)
        assert (f"evidence read from the data directory {data} (rtwo-vm serve --data-dir, "
                f"$RTWO_VM_DATA); proofs report {full}") in overview
        # /reports: the data directory's reports, never the decoy under the working directory.
        page = c.get("/reports").text
        shown = text_of(page)
    assert f"read from the data directory {data} " in shown
    assert str(user) not in shown and "build/" not in shown
    written = json.loads(partial.read_text())
    statuses: dict[str, int] = {}
    for row in written["results"]:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    assert f"file {full} counts for readiness yes" in shown
    assert (f"file {partial} counts for readiness no" in shown
            and f"rows {len(written['results'])} statuses "
                + ", ".join(f"{k} {v}" for k, v in statuses.items()) in shown)
    report = json.loads(conformance.read_text())
    corpus = report["corpus"]
    assert f"Conformance report, spec 1.0 file {conformance} all passed True" in shown
    assert f"{corpus['selected']} of {corpus['vector_count']} vectors" in shown
    assert 'id="conformance-runs-1-0"' in page and report["implementations"][0]["name"] in shown
    # Spec 1.1 has no conformance report in the data directory: the page names where it looked.
    assert f"no {data / 'conformance' / '1.1' / 'report.json'} (`rtwo-vm conformance run`" in shown


def test_without_the_option_the_server_reads_rtwo_vm_data(tmp_path):
    user, data = tmp_path / "my-project", tmp_path / "rtwo-data"
    user.mkdir()
    with serving(tmp_path, cwd=user, env={"RTWO_VM_DATA": str(data)}) as server, \
            server.client() as c:
        assert f"evidence from {data} (--data-dir, $RTWO_VM_DATA)" in server.start_line
        assert c.get("/api/v1/readiness").json()["evidenceFrom"] == {
            "dataDir": str(data), "proofsReport": str(data / "proofs-report.json")}
        assert f"read from the data directory {data} " in text_of(c.get("/reports").text)


def test_an_application_given_no_data_directory_reads_no_evidence_and_says_so(tmp_path,
                                                                              monkeypatch):
    """In process (create_app without data_dir, as a library user may): nothing is read, not
    the working directory's build/ either, and the answers say so."""
    from fastapi.testclient import TestClient
    from rtwo_vm.server import create_app
    monkeypatch.chdir(tmp_path)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "proofs-report.json").write_text(json.dumps(complete_report()))
    app = create_app(tmp_path / "r.db")
    with TestClient(app, base_url="http://localhost") as c:
        assert c.get("/api/v1/readiness").json()["evidenceFrom"] == {"dataDir": None,
                                                                     "proofsReport": None}
        assert "no data directory given to the server (rtwo-vm serve --data-dir), so no report " \
               "is read" in text_of(c.get("/reports").text)
        assert "no data directory given to the server" in text_of(c.get("/").text)
