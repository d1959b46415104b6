"""``rtwo-vm symbolic``: a counterexample lists every input it assumed (slots assumed zero and
every call data word included) and prints a ``rtwo-vm run`` line that reproduces it; a
``bounded`` verdict names the option that would lift each bound (issue 39, item 5).

The contracts are written here; what their counterexamples must be is known by hand (the
comments). The printed run line is executed as a real process and its result compared with
the outcome the symbolic run reported.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

# TRAP only when slot 3 holds 5 and slot 7 is zero: the counterexample must set slot 3 to 5
# and name slot 7 as assumed zero (read, not set).
UNSET_SLOT = """
    push 3
    sload
    push 5
    eq
    iszero
    jumpi fine
    push 7
    sload
    jumpi fine
    trap
fine:
    stop
"""

# TRAP only when call data word 0 is 3 and word 1 is 0x0700000000000001 (its top byte is the
# 16th byte of the call data, so the call data is exactly two words).
TWO_WORDS = """
    push 0
    calldataload
    push 3
    eq
    iszero
    jumpi fine
    push 8
    calldataload
    push 0x0700000000000001
    eq
    iszero
    jumpi fine
    trap
fine:
    stop
"""

# Twelve instructions on one path: --max-steps 5 cuts it.
STRAIGHT = "\n".join(["    nop"] * 11 + ["    stop"]) + "\n"

# Reads the word at byte 60 (bytes 60..67): call data longer than 64 bytes is not explored.
PAST_THE_BOUND = """
    push 60
    calldataload
    pop
    stop
"""

# Counts down from the first call data word: each turn forks at the same pc.
LOOP = """
    push 0
    calldataload
top:
    dup1
    iszero
    jumpi done
    push 1
    sub
    jump top
done:
    stop
"""


def rtwo(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def symbolic(tmp_path: Path, name: str, source: str, *options: str) -> dict:
    (tmp_path / f"{name}.rasm").write_text(source)
    done = rtwo("symbolic", f"{name}.rasm", "--json", *options, cwd=tmp_path)
    assert done.returncode in (1, 4), done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(done.stdout)


def counterexample(doc: dict) -> dict:
    (prop,) = doc["properties"]
    assert prop["verdict"] == "counterexample", prop
    return prop["counterexample"]


def replayed(run_argv: list[str], cwd: Path) -> dict:
    assert run_argv[:2] == ["rtwo-vm", "run"]
    done = rtwo(*run_argv[1:], cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_a_slot_read_but_not_set_is_listed_as_assumed_zero_and_the_run_line_reproduces(tmp_path):
    found = counterexample(symbolic(tmp_path, "slots", UNSET_SLOT))
    replay = found["reproduce"]
    assert replay["inputs"]["storage_set"] == {"0x100": {"0x3": "0x5"}}
    assert replay["inputs"]["storage_assumed_zero"] == {"0x100": ["0x7"]}
    argv = replay["run_argv"]
    assert shlex.split(replay["run"]) == argv
    assert argv[argv.index("--storage") + 1] == "0x3=0x5" and argv.count("--storage") == 1
    result = replayed(argv, tmp_path)
    assert result["status"] == found["result"]["status"] != "success"
    assert result == found["result"]
    # without the assumed slot 3, the same line (no --storage) stops cleanly: the input matters
    i = argv.index("--storage")
    assert replayed(argv[:i] + argv[i + 2:], tmp_path)["status"] == "success"
    # the text report says the same, and its replay line runs as printed
    text = rtwo("symbolic", "slots.rasm", cwd=tmp_path).stdout
    assert "storage of 0x100 assumed zero (read or written, not set): 0x7" in text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("  replay: rtwo-vm run ")]
    assert replayed(shlex.split(line.split(": ", 1)[1]), tmp_path) == found["result"]


def test_every_call_data_word_is_listed_and_given_to_run_as_words(tmp_path):
    found = counterexample(symbolic(tmp_path, "words", TWO_WORDS))
    replay = found["reproduce"]
    assert replay["inputs"]["call_data_words"] == ["0x3", "0x700000000000001"]
    assert replay["inputs"]["call_data_length"] == 16 and replay["inputs"]["call_data_rest"] is None
    argv = replay["run_argv"]
    assert argv[argv.index("--calldata-words") + 1] == "0x3,0x700000000000001"
    result = replayed(argv, tmp_path)
    assert result == found["result"] and result["status"] != "success"
    text = rtwo("symbolic", "words.rasm", cwd=tmp_path).stdout
    assert "call data: 16 bytes, words [0x3, 0x700000000000001]" in text


def test_a_bounded_verdict_names_the_option_that_lifts_each_bound(tmp_path):
    cases = [("straight", STRAIGHT, ("--max-steps", "5"), "max-steps 5", "raise --max-steps"),
             ("past", PAST_THE_BOUND, (), "max-calldata 64", "raise --max-calldata"),
             ("loop", LOOP, ("--loop-bound", "2"), "loop bound 2", "raise --loop-bound")]
    for name, source, options, bound, option in cases:
        doc = symbolic(tmp_path, name, source, *options)
        (prop,) = doc["properties"]
        assert prop["verdict"] == "bounded", (name, prop)
        assert any(b.startswith(bound) for b in prop["bounds"]), (name, prop["bounds"])
        assert any(text.startswith(option) for text in prop["lift"]), (name, prop["lift"])
        assert f"to lift: {option}" in prop["detail"], (name, prop["detail"])
        done = rtwo("symbolic", f"{name}.rasm", *options, cwd=tmp_path)
        assert done.returncode == 4 and f"to lift: {option}" in done.stdout, done.stdout


# The sum and the bitwise or of the first two call data words: they differ when the words
# share a set bit.
SUM = """
    push 0
    calldataload
    push 8
    calldataload
    {op}
    push 0
    swap1
    mstore
    push 0
    push 8
    return
"""


def test_a_distinguishing_input_prints_a_run_line_per_contract_that_gives_each_result(tmp_path):
    (tmp_path / "sum.rasm").write_text(SUM.format(op="add"))
    (tmp_path / "or.rasm").write_text(SUM.format(op="or"))
    done = rtwo("equivalence", "sum.rasm", "or.rasm", "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    runs = doc["reproduce"]["runs"]
    assert [shlex.split(r)[2] for r in runs] == ["sum.rasm", "or.rasm"]
    outputs = [replayed(shlex.split(r), tmp_path)["output"] for r in runs]
    assert outputs == [r["output"] for r in doc["results"]] and outputs[0] != outputs[1]
    a, b = (int.from_bytes(bytes.fromhex(o[2:]), "little") for o in outputs)
    data = bytes.fromhex(doc["reproduce"]["inputs"]["call_data"][2:]).ljust(16, b"\0")
    x, y = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
    assert (a, b) == ((x + y) % 2**64, x | y)        # by hand: the two contracts' outputs
