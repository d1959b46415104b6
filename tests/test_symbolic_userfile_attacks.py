"""``rtwo-vm symbolic --properties FILE`` with properties files that behave while loaded (only
their declarations run then) and attack when their claims are built — run as a user runs
it, a real ``rtwo-vm`` process, on a real contract that traps when the first byte of the
call data is 7. The file's functions run only in a confined child (spec/confined.py), over
placeholders of the call; the claims come back as text the parent reads and decides with
its own solver (proofs/symbolic/userfile.py, claimtext.py). So:

- a claim function that hangs is an ``error`` verdict naming the safety net (exit 3) within
  ``--file-seconds``, never a hang;
- one that writes a file outside its folder writes nothing;
- one that leaves a grandchild behind (fork, setsid, fork) leaves nothing: the grandchild is
  dead when ``rtwo-vm`` has exited;
- one that monkeypatches ``z3.Solver.check`` to answer unsat patches only its own process:
  the trapping path is still the claim's counterexample (exit 1), never ``proved``;
- a child that forges its report with a free variable named like the call's caller does not
  alias it: a free variable is universally quantified, so the claim is refuted;
- ``z3.Int2BV`` (outside the supported integer fragment) is an ``error`` verdict naming it,
  never an internal error (exit 70) or a traceback.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-m", "rtwo_vm.cli"]
TRAP = """\
; traps when the first byte of the call data is 7, else stops
    push 0
    calldataload
    push 255
    and
    push 7
    eq
    jumpi boom
    stop
boom:
    trap
"""
HEAD = "import os, sys, time\nimport z3\nfrom proofs.symbolic.properties import contract_property\n"


def symbolic(props: str, *extra: str, timeout: float = 90) -> subprocess.CompletedProcess:
    Path("trap.rasm").write_text(TRAP)
    Path("props.py").write_text(HEAD + props)
    return subprocess.run([*CLI, "symbolic", "trap.rasm", "--properties", "props.py",
                           "--max-calldata", "8", "--counterexamples", "cex", *extra],
                          capture_output=True, text=True, timeout=timeout)


def claim(body: str, returns: str = "[c.success]") -> str:
    indented = "".join(f"    {line}\n" for line in body.splitlines())
    return (f"@contract_property('never_traps')\ndef never_traps(c):\n{indented}"
            f"    return {returns}\n")


def test_a_claim_function_that_hangs_is_an_error_verdict_within_the_deadline():
    start = time.monotonic()
    done = symbolic(claim("while True:\n    pass"), "--file-seconds", "2")
    assert done.returncode == 3, done.stderr
    assert "property never_traps: error" in done.stdout
    assert "took more than 2 s (the wall-clock safety net" in done.stdout
    assert time.monotonic() - start < 60
    assert "Traceback" not in done.stderr


def test_a_claim_function_writes_nothing_outside_its_folder(tmp_path):
    outside = tmp_path / "outside.txt"
    done = symbolic(claim(f"open({str(outside)!r}, 'w').write('written by the file')"))
    assert not outside.exists()
    assert done.returncode == 3 and "PermissionError" in done.stdout, done.stdout + done.stderr


GRANDCHILD = """\
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(2, f"GRANDCHILD {os.getpid()}\\n".encode())
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        time.sleep(60)
    os._exit(0)
time.sleep(0.5)"""


def test_a_claim_function_leaves_no_grandchild_alive():
    done = symbolic(claim(GRANDCHILD))
    pids = [int(p) for p in re.findall(r"GRANDCHILD (\d+)", done.stderr)]
    try:
        assert pids, done.stderr
        for pid in pids:
            assert not Path(f"/proc/{pid}").exists() or _zombie(pid) is None, f"{pid} is alive"
        assert done.returncode == 1 and "never_traps: counterexample" in done.stdout
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _zombie(pid: int):
    """None when ``pid`` is gone (or a zombie of another parent): only a live one counts."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return None if state == "Z" else state


def test_a_monkeypatched_solver_in_the_file_cannot_prove_a_trapping_contract():
    done = symbolic(claim("z3.Solver.check = lambda self, *a, **k: z3.unsat\n"
                          "z3.Optimize.check = lambda self, *a, **k: z3.unsat"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "property never_traps: counterexample" in done.stdout
    assert "call data 0x07" in done.stdout      # the trapping input, found by the parent


FORGED = """\
import json
report = {"properties": {"never_traps": {"assume": None, "ends": [
    {"claims": ["(= caller rtwo_view_caller)"], "names": [], "keys": [],
     "fresh": [["caller", "(_ BitVec 64)", 0]]}] * COUNT}}}
os.write(3, json.dumps(report).encode())
os._exit(0)"""


def test_a_forged_report_cannot_alias_the_calls_inputs():
    """The child writes its own report: the claim 'caller == the call's caller' with
    ``caller`` listed as a free variable. In the parent the free variable is a symbol of its
    own (user_caller), universally quantified, never the input: refuted."""
    done = symbolic(claim(FORGED.replace("COUNT", "2")))
    assert ": 2 paths (" in done.stdout     # the trapping path and the stopping one
    assert done.returncode == 1, done.stdout + done.stderr
    assert "property never_traps: counterexample" in done.stdout


def test_int2bv_in_a_property_is_an_error_verdict_naming_it():
    done = symbolic(claim("pass", "[z3.Int2BV(c.int(c.caller) + 1, 64) == c.caller + 1]"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "property never_traps: error" in done.stdout
    assert "z3.Int2BV" in done.stdout and "outside the supported fragment" in done.stdout
    assert "Traceback" not in done.stderr
