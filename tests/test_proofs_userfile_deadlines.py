"""``rtwo-vm prove --theorems FILE`` with files that hang, run as a user runs them (a real
``rtwo-vm`` process): every process that runs the file is a confined child with a wall-clock
deadline (``--file-seconds``, spec/confined.py), so

- a file that hangs while it is loaded is one line and exit 2 within the deadline;
- a theorem whose builder hangs in its task's process is a ``timeout`` row that says the
  safety net killed it (exit 1), and the file's other theorem is still proved;
- a file that hangs only when it runs again in a task's process (it behaved while loaded)
  is the same ``timeout`` row, never a hang of ``prove``;
- each task's rows come back as JSON and are checked: a task that reports a row of another
  theorem, or a status that is none, is an ``error`` row;
- a task writes its SMT-LIB texts into ``--export-smt2 DIR`` and nothing anywhere else.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-m", "rtwo_vm.cli"]
LAW = ("import sys, time\n"
       "from proofs.registry import word_law, words\n"
       "@word_law({name!r}, 'SUB', widths=(8,))\n"
       "def {name}(bits, op):\n"
       "    a, b = words(bits, 'a b')\n"
       "    {body}\n"
       "    return [op('SUB', op('ADD', a, b), b) == a]\n")


def law(name: str, body: str = "pass") -> str:
    return LAW.format(name=name, body=body)


def prove(text: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    Path("mine.theorems").write_text(text)
    start = time.monotonic()
    done = subprocess.run([*CLI, "prove", "--theorems", "mine.theorems", "--file-seconds", "3",
                           "--report", "r.json", "--quiet", "--solver", "z3"],
                          capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - start


def rows() -> dict:
    return {r["theorem"]: r for r in json.loads(Path("r.json").read_text())["results"]}


def test_a_file_that_hangs_while_loaded_is_one_line_within_the_deadline():
    done, seconds = prove("while True:\n    pass\n")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("rtwo-vm: error: --theorems: mine.theorems: loading the file "
                                  "took more than 3 s") and done.stderr.count("\n") == 1
    assert seconds < 60 and not Path("r.json").exists()


def test_a_theorem_whose_builder_hangs_is_a_timeout_row():
    done, seconds = prove(law("hangs", "time.sleep(3600)") + law("fine"))
    assert done.returncode == 1, done.stderr
    got = rows()
    assert got["hangs"]["status"] == "timeout"
    assert "took more than 3 s (the wall-clock safety net" in got["hangs"]["error"]
    assert "hangs SUB w8: timeout: the task's process took more than 3 s" in done.stderr
    assert got["fine"]["status"] == "proved"
    assert seconds < 60


# While the file is loaded the runner has not registered any theorem yet; in a task's
# process it has: the file hangs only there.
IN_A_TASK = ("runner = sys.modules.get('proofs.runner')\n"
             "if runner is not None and runner._THEOREMS:\n"
             "    while True:\n"
             "        pass\n")


def test_a_file_that_hangs_only_in_a_tasks_process_is_a_timeout_row():
    done, seconds = prove(law("fine") + IN_A_TASK)
    assert done.returncode == 1, done.stderr
    assert rows()["fine"]["status"] == "timeout"
    assert seconds < 60


def test_a_task_that_reports_another_theorems_row_is_an_error_row():
    """The task's process writes its own report (fd 3 is the report's pipe) and ends."""
    forged = ("import json, os; "
              "report = {'rows': [{'theorem': 'other', 'opcode': 'SUB', 'width': 8, "
              "'status': 'proved', 'seconds': 0.0}]}; "
              "os.write(3, json.dumps(report).encode()); "
              "os._exit(0)")
    done, _ = prove(law("lies", forged))
    assert done.returncode == 1, done.stderr
    assert rows()["lies"]["status"] == "error"
    assert "the task's report is malformed (a row of another theorem)" in rows()["lies"]["error"]


def test_the_tasks_write_their_texts_into_the_export_folder_and_nowhere_else(tmp_path):
    """The task's process works in an empty folder of its own and may change files only
    beneath --export-smt2 DIR (given relative to the user's folder)."""
    outside = tmp_path / "outside.txt"
    Path("mine.theorems").write_text(law("fine") + law("writes", f"open({str(outside)!r}, 'w')"))
    done = subprocess.run([*CLI, "prove", "--theorems", "mine.theorems", "--export-smt2", "out",
                           "--report", "r.json", "--quiet", "--solver", "z3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert rows()["fine"]["status"] == "proved" and rows()["writes"]["status"] == "error"
    assert "PermissionError" in rows()["writes"]["error"] and not outside.exists()
    assert sorted(p.name for p in Path("out").iterdir()) == ["fine__SUB__w8__000.smt2"]
