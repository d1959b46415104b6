"""Concurrent first use of a fresh database, by real processes (issue 13, item 2).

Each child process imports everything, says it is ready and waits for the word to go; the
parent releases them all at once, so their first transactions contend. Every call must
succeed and the database must hold one VM and one default policy.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COUNTER = str(ROOT / "examples" / "counter.rasm")
N = 6
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_runtime_support import DEFAULT_VMS  # noqa: E402

CHILD = r"""
import io, sys
from contextlib import redirect_stdout
from rtwo_vm.cli import main
db, address, deploy = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
print("ready", flush=True)
sys.stdin.readline()  # go
with redirect_stdout(io.StringIO()):
    if deploy:
        code = main(["deploy", sys.argv[4], "--address", address, "--db", db])
        if code:
            sys.exit(10 + code)
    sys.exit(main(["call", address, "--db", db]))
"""


def _race(db: Path, *, deploy: bool) -> list[tuple[int, str]]:
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(db), hex(0x100 + i),
                                  "1" if deploy else "0", COUNTER],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, cwd=ROOT)
                for i in range(N)]
    try:
        pipes = []
        for child in children:
            assert child.stdin is not None and child.stdout is not None and child.stderr is not None
            pipes.append((child.stdin, child.stdout, child.stderr))
        for _, stdout, _ in pipes:
            assert stdout.readline().strip() == "ready"
        for stdin, _, _ in pipes:
            stdin.write("go\n")
            stdin.flush()
        return [(child.wait(timeout=120), stderr.read()) for child, (_, _, stderr) in zip(children, pipes)]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()


def _counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("vms", "policies", "contracts", "contexts")}
    finally:
        conn.close()


def test_concurrent_first_calls_make_one_vm_and_one_default_policy(tmp_path):
    db = tmp_path / "fresh.db"
    for i in range(N):  # contracts exist; no VM and no policy yet
        assert subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "deploy", COUNTER,
                               "--address", hex(0x100 + i), "--db", str(db)],
                              capture_output=True, timeout=120).returncode == 0
    outcomes = _race(db, deploy=False)
    assert all(code == 0 for code, _ in outcomes), outcomes
    assert _counts(db) == {"vms": DEFAULT_VMS, "policies": 1, "contracts": N, "contexts": N}


def test_concurrent_first_opens_of_a_new_file_migrate_it_once(tmp_path):
    db = tmp_path / "new.db"  # does not exist: every child creates, migrates, deploys, calls
    outcomes = _race(db, deploy=True)
    assert all(code == 0 for code, _ in outcomes), outcomes
    assert _counts(db) == {"vms": DEFAULT_VMS, "policies": 1, "contracts": N, "contexts": N}
    conn = sqlite3.connect(db)
    try:
        vm_events = conn.execute("SELECT type FROM outbox WHERE stream LIKE 'vm:%' "
                                 "ORDER BY event_id").fetchall()
    finally:
        conn.close()
    assert [t for (t,) in vm_events] == ["vm.registered", "vm.status_changed"] * DEFAULT_VMS
