"""Evidence lives in the data directory, never under the working directory (issue 39, item 4).

Every command runs as the installed ``rtwo-vm`` does (``python -m rtwo_vm.cli``, a real
process) from a folder of the user's own that holds nothing of RTWO VM; the data directory is
named by ``$RTWO_VM_DATA`` or ``--data-dir`` (both inside tmp_path). Each command that reads or
writes evidence must find or put it there and print where.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_runtime_readiness import complete_report


def rtwo(*args: str, cwd: Path, data: Path | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RTWO_VM_DATA"}
    if data is not None:
        env["RTWO_VM_DATA"] = str(data)
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def folders(tmp_path: Path) -> tuple[Path, Path]:
    user = tmp_path / "my-project"       # the user's own folder: nothing of RTWO VM in it
    user.mkdir()
    return user, tmp_path / "rtwo-data"


def test_readiness_finds_the_proofs_report_in_the_data_directory_from_any_folder(tmp_path):
    user, data = folders(tmp_path)
    data.mkdir()
    doc = complete_report()
    (data / "proofs-report.json").write_text(json.dumps(doc))
    done = rtwo("readiness", "--only", "proof_results", "--json", cwd=user, data=data)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    check = answer["checks"][0]
    assert check["status"] == "passed", check
    assert check["evidence"].startswith(f"{len(doc['results'])} results in {data / 'proofs-report.json'}")
    assert answer["readiness"] == "ready"
    assert answer["evidenceFrom"] == {"dataDir": str(data), "proofsReport": str(data / "proofs-report.json")}
    text = rtwo("readiness", "--only", "proof_results", cwd=user, data=data)
    assert text.returncode == 0, text.stderr
    assert f"evidence: data directory {data} (--data-dir, $RTWO_VM_DATA)" in text.stdout
    assert "readiness: ready" in text.stdout
    # --data-dir wins over the variable; from a third folder the same answer
    other = tmp_path / "other-data"
    other.mkdir()
    (other / "proofs-report.json").write_text(json.dumps(doc))
    elsewhere = rtwo("readiness", "--only", "proof_results", "--json", "--data-dir", str(other),
                     cwd=tmp_path, data=tmp_path / "nowhere")
    assert json.loads(elsewhere.stdout)["checks"][0]["status"] == "passed"
    assert json.loads(elsewhere.stdout)["evidenceFrom"]["dataDir"] == str(other)


def test_a_missing_report_names_the_data_directory_not_the_working_directory(tmp_path):
    user, data = folders(tmp_path)
    done = rtwo("readiness", "--only", "proof_results", cwd=user, data=data)
    assert done.returncode == 0, done.stderr
    assert f"no proof report at {data / 'proofs-report.json'} (`rtwo-vm prove` writes it there)" in done.stdout
    assert str(user) not in done.stdout
    assert "readiness: partial" in done.stdout


def test_prove_writes_its_report_where_readiness_looks(tmp_path):
    user, data = folders(tmp_path)
    done = rtwo("prove", "--opcode", "NOP", "--no-agreement", "--no-table", cwd=user, data=data)
    assert done.returncode == 0, done.stderr
    partial = data / "proofs-partial-report.json"
    assert f"report in {partial}" in done.stdout
    assert json.loads(partial.read_text())["scope"]["opcodes"] == ["NOP"]
    assert list(user.iterdir()) == []               # nothing written under the working directory
    # A partial report is never the one readiness reads: readiness names the full one's place.
    ready = rtwo("readiness", "--only", "proof_results", "--json", cwd=user, data=data)
    assert json.loads(ready.stdout)["evidenceFrom"]["proofsReport"] == str(data / "proofs-report.json")


def test_conformance_reports_go_to_the_data_directory(tmp_path):
    user, data = folders(tmp_path)
    done = rtwo("conformance", "run", "--filter", "hash/*", "--spec-version", "1.0", "--repeat", "0",
                "--fresh", "0", cwd=user, data=data)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    folder = data / "conformance" / "1.0"
    assert f"report: {folder / 'report.json'}" in done.stdout
    assert json.loads((folder / "report.json").read_text())
    assert list(user.iterdir()) == []


def test_prove_diff_writes_its_report_and_vectors_to_the_data_directory(tmp_path):
    user, data = folders(tmp_path)
    done = rtwo("prove", "--diff", "1.0", "1.1", "--opcode", "SHA256", cwd=user, data=data)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = data / "proofs-diff-1.0-1.1.json"
    assert f"report in {report}" in done.stdout and json.loads(report.read_text())
    assert f"witness vectors in {data / 'proofs-diff-vectors'}" in done.stdout
    assert list(user.iterdir()) == []
