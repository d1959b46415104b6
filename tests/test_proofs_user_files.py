"""``prove --theorems FILE`` with hostile or unusual files: any file name is read as Python
source (bounded, regular files only), two theorems of one name are refused in one line, and a
file that ends its process (``os._exit(0)``) while loading, or while a theorem is built, can
never make ``prove`` exit 0: loading is a one-line error (exit 2), building an ERROR row
(exit 1) with the report written."""

from __future__ import annotations

import json
import os
from pathlib import Path

from proofs.runner import ERROR, PROVED
from rtwo_vm.cli import main

# 8-bit SUB undoes ADD: proved in well under a second.
LAW = ("from proofs.registry import word_law, words\n"
       "@word_law({name!r}, 'SUB', widths=(8,))\n"
       "def law(bits, op):\n"
       "    a, b = words(bits, 'a b')\n"
       "    {body}\n"
       "    return [op('SUB', op('ADD', a, b), b) == a]\n")


def law(name: str = "sub_undoes_add", body: str = "pass") -> str:
    return LAW.format(name=name, body=body)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, err
    return err


def prove(*args: str) -> int:
    return main(["prove", *args, "--report", "r.json", "--quiet"])


def test_a_theorem_file_without_the_py_suffix_is_loaded_and_proved(tmp_path):
    Path("mine.theorems").write_text(law())
    assert prove("--theorems", "mine.theorems") == 0
    (row,) = json.loads(Path("r.json").read_text())["results"]
    assert (row["theorem"], row["opcode"], row["width"], row["status"]) == ("sub_undoes_add", "SUB", 8, PROVED)


def test_two_theorems_of_one_name_are_refused_in_one_line(capsys):
    Path("twice.py").write_text(law("same_name") + law("same_name").split("\n", 1)[1].replace("def law", "def law2"))
    assert prove("--theorems", "twice.py") == 2
    assert "two theorems are named 'same_name'" in one_line_error(capsys)
    assert not Path("r.json").exists()


def test_a_file_that_exits_with_success_while_loading_is_an_error_not_a_pass(capsys):
    Path("exits.py").write_text("import os\nos._exit(0)\n")
    assert prove("--theorems", "exits.py") == 2
    err = one_line_error(capsys)
    assert "ended its process (exit status 0) before it reported its theorems" in err, err
    assert not Path("r.json").exists()


def test_a_file_that_kills_itself_while_loading_is_an_error(capsys):
    Path("killed.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert prove("--theorems", "killed.py") == 2
    assert "killed by signal 9" in one_line_error(capsys)


def test_a_theorem_that_exits_with_success_while_built_is_an_error_row(capsys):
    Path("late.py").write_text(law("exits_when_built", "import os; os._exit(0)") + law("fine").split("\n", 1)[1]
                               .replace("def law", "def law2"))
    assert prove("--theorems", "late.py") == 1
    rows = {r["theorem"]: r for r in json.loads(Path("r.json").read_text())["results"]}
    assert rows["exits_when_built"]["status"] == ERROR
    assert "ended (exit status 0) before it reported its claims" in rows["exits_when_built"]["error"]
    # Each task of a user's file has a confined process of its own: the other row is proved.
    assert rows["fine"]["status"] == PROVED and set(rows) == {"exits_when_built", "fine"}


def test_a_fifo_or_an_oversized_file_is_refused_in_one_line(capsys):
    os.mkfifo("pipe.py")
    assert prove("--theorems", "pipe.py") == 2
    assert "not a regular file" in one_line_error(capsys)
    Path("big.py").write_text("#" * ((1 << 20) + 1))
    assert prove("--theorems", "big.py") == 2
    assert "larger than" in one_line_error(capsys)
