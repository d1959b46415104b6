"""What `rtwo-vm symbolic` and `rtwo-vm equivalence` did not explore is named in every
verdict (issue 33: no false "proved").

Call data longer than ``--max-calldata`` is not explored: a verdict is ``proved`` /
``equivalent`` only when no path reads the call data past the bound (a CALLDATALOAD or
CALLDATACOPY reaching byte ``max_calldata``, any CALLDATASIZE) and no property does — else
``bounded``, naming ``max-calldata``; a call to an address without code given is assumed to
find none, and said. Each program is a real .rasm file run through the real command line (a
subprocess) and the Python API; a larger bound that covers the difference turns each hidden
case into a counterexample the reference confirms (so the bound really hid something), and
programs that read only bytes before the bound are still proved. Expectations are by hand:
byte k of the call data is bit 8k of the little-endian word read at offset 0 of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from proofs.symbolic import Setup, explore
from proofs.symbolic.equivalence import compare
from proofs.symbolic.properties import FAILURES, NO_FAILURE, Property
from proofs.symbolic.verdicts import check, exit_code
from reference_vm import assemble
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"

TRAPS_PAST_THE_BOUND = {
    # the word at 65 (bytes 65..72): traps when its lowest byte, byte 65, is not zero
    "load_at_65": ("""
    push 65
    calldataload
    push 0xff
    and
    jumpi bad
    stop
bad:
    trap
""", 66),
    # bytes 60..67 copied to memory[0, 8): traps when memory byte 4 (call data byte 64) is set
    "copy_60_to_68": ("""
    push 0
    push 60
    push 8
    calldatacopy
    push 0
    mload
    push 32
    shru
    push 0xff
    and
    jumpi bad
    stop
bad:
    trap
""", 65),
    # traps when the call data is longer than 64 bytes
    "size_over_64": ("""
    calldatasize
    push 64
    gtu
    jumpi bad
    stop
bad:
    trap
""", 65),
    # the word at 64 + byte 0 (a symbolic offset, always past byte 63): traps on its low byte
    "load_at_symbolic_offset": ("""
    push 0
    calldataload
    push 0xff
    and
    push 64
    add
    calldataload
    push 0xff
    and
    jumpi bad
    stop
bad:
    trap
""", 400),
}


def returns_word_at(offset: int) -> str:
    return f"""
    push {offset}
    calldataload
    push 0
    swap1
    mstore
    push 0
    push 8
    return
"""


def cli(tmp_path: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)


def write(tmp_path: Path, name: str, source: str) -> str:
    (tmp_path / name).write_text(source)
    return name


@pytest.mark.parametrize("shape", sorted(TRAPS_PAST_THE_BOUND))
def test_a_trap_only_past_the_call_data_bound_is_bounded_not_proved(tmp_path, shape):
    source, covering = TRAPS_PAST_THE_BOUND[shape]
    name = write(tmp_path, f"{shape}.rasm", source)
    done = cli(tmp_path, "symbolic", name, "--json")
    doc = json.loads(done.stdout)
    (verdict,) = doc["properties"]
    assert done.returncode == 4, done.stdout + done.stderr
    assert verdict["verdict"] == "bounded" and verdict["bounds"][0].startswith("max-calldata 64 (")
    assert doc["not_explored"] == verdict["bounds"] and doc["cuts"] == 0
    # every explored path succeeds: the trap needs call data of more than 64 bytes
    assert {p["status"] for p in doc["paths"]} == {"success"}
    # a bound that covers it finds the trap, and the reference confirms it
    done = cli(tmp_path, "symbolic", name, "--max-calldata", str(covering), "--json",
               "--counterexamples", "cex")
    doc = json.loads(done.stdout)
    (verdict,) = doc["properties"]
    assert done.returncode == 1 and verdict["verdict"] == "counterexample"
    assert verdict["counterexample"]["result"]["error"] == "TRAP_EXECUTED"
    assert verdict["counterexample"]["replay"] == "agrees"
    assert len(bytes.fromhex(verdict["counterexample"]["input"]["call_data"][2:])) > 64


def test_the_same_through_the_api_and_its_text(tmp_path):
    source, _ = TRAPS_PAST_THE_BOUND["load_at_65"]
    x = explore(Setup(0x100, {0x100: assemble(source, V)}, version=V))
    v = check(x, NO_FAILURE)
    assert v.verdict == "bounded" and exit_code([v]) == 4
    assert v.bounds == ["max-calldata 64 (CALLDATALOAD at pc 2 of 0x100 may read byte 64 or "
                        "later; longer call data is not explored)"]
    name = write(tmp_path, "trap.rasm", source)
    done = cli(tmp_path, "symbolic", name)
    assert "1 path (1 success), 0 cut by bounds" in done.stdout
    assert "not explored: max-calldata 64 (CALLDATALOAD at pc 2" in done.stdout
    assert "property no_failure: bounded (holds on every explored path; not shown beyond: " \
           "max-calldata 64" in done.stdout


@pytest.mark.parametrize("offset, verdict", [(56, "proved"), (57, "bounded")])
def test_a_word_read_ends_at_the_bound_or_one_byte_past_it(tmp_path, offset, verdict):
    """The word at 56 is bytes 56..63 (all before the bound of 64): proved; at 57 it reaches
    byte 64."""
    x = explore(Setup(0x100, {0x100: assemble(returns_word_at(offset), V)}, version=V))
    assert check(x, NO_FAILURE).verdict == verdict
    done = cli(tmp_path, "symbolic", write(tmp_path, "w.rasm", returns_word_at(offset)))
    assert done.returncode == {"proved": 0, "bounded": 4}[verdict], done.stdout


def test_programs_that_read_only_before_the_bound_are_still_proved(tmp_path):
    for example in ("max.rasm", "token.rasm", "counter.rasm"):
        done = cli(tmp_path, "symbolic", str(EX / example))
        assert done.returncode == 0 and "no_failure: proved" in done.stdout, example
        assert "not explored" not in done.stdout
    # max reads bytes 0..15: equivalent to its optimised variant with a bound of 16 bytes
    done = cli(tmp_path, "equivalence", str(EX / "max.rasm"), str(EX / "max-optimised.rasm"),
               "--compare", "status,output", "--max-calldata", "16")
    assert done.returncode == 0 and ": equivalent" in done.stdout, done.stdout


def test_a_property_that_reads_past_the_bound_is_bounded_unless_its_premises_exclude_it():
    x = explore(Setup(0x100, {0x100: assemble(TRAPS_PAST_THE_BOUND["load_at_65"][0], V)}, version=V))
    size = lambda c: [c.calldata.size <= 64]  # noqa: E731
    verdicts = {
        "size": check(x, Property("size", size)),
        "byte_70": check(x, Property("byte_70", lambda c: [c.calldata.byte(70) == 0])),
        "byte_3_any": check(x, Property("byte_3_any", lambda c: [z3.ULE(c.calldata.byte(3), 255)])),
        "assumed": check(x, Property("assumed", size, assume=size)),
        # no failure on call data of at most 64 bytes: all the run explored
        "no_failure_up_to_64": check(x, Property(
            "no_failure_up_to_64", lambda c: [z3.BoolVal(c.status not in FAILURES)],
            assume=size)),
    }
    got = {k: v.verdict for k, v in verdicts.items()}
    assert got == {"size": "bounded", "byte_70": "bounded", "byte_3_any": "bounded",
                   "assumed": "proved", "no_failure_up_to_64": "proved"}
    # the program reads past the bound: named once, whatever the property reads
    assert all(v.bounds == [verdicts["size"].bounds[0]] for k, v in verdicts.items()
               if v.verdict == "bounded")
    assert verdicts["size"].bounds[0].startswith("max-calldata 64 (CALLDATALOAD at pc 2")
    # a program that reads only bytes 0..7: the property's own reads decide
    clean = explore(Setup(0x100, {0x100: assemble(returns_word_at(0), V)}, version=V))
    assert check(clean, Property("byte_3", lambda c: [z3.ULE(c.calldata.byte(3), 255)])
                 ).verdict == "proved"
    assert check(clean, Property("word_0", lambda c: [c.calldata.word(0) == c.output.word(0)])
                 ).verdict == "proved"
    for claim in (lambda c: [c.calldata.byte(70) == 0], lambda c: [c.calldata.size <= 64]):
        v = check(clean, Property("reads_past", claim))
        assert v.verdict == "bounded" and v.bounds == [
            "max-calldata 64 (the property reads the call data's length or byte 64 or later; "
            "longer call data is not explored)"]
    assert check(clean, Property("size", size, assume=size)).verdict == "proved"


PAIRS_PAST_THE_BOUND = {
    # the word at 60, and the same with its top byte (call data byte 67) cleared
    "word_at_60": (returns_word_at(60), returns_word_at(60).replace(
        "    calldataload\n", "    calldataload\n    push 0x00ffffffffffffff\n    and\n"), 68),
    # eight zero bytes, and (size > 64) as a word
    "size": (returns_word_at(0).replace("    push 0\n    calldataload\n", "    push 0\n", 1),
             """
    calldatasize
    push 64
    gtu
    push 0
    swap1
    mstore
    push 0
    push 8
    return
""", 65),
    # call data bytes 64..71, copied, and eight zero bytes
    "copied_64_to_72": ("""
    push 0
    push 0
    push 72
    calldatacopy
    push 64
    push 8
    return
""", """
    push 64
    push 8
    return
""", 65),
}


@pytest.mark.parametrize("shape", sorted(PAIRS_PAST_THE_BOUND))
def test_contracts_that_differ_only_past_the_bound_are_not_equivalent(tmp_path, shape):
    a, b, covering = PAIRS_PAST_THE_BOUND[shape]
    fa, fb = write(tmp_path, "a.rasm", a), write(tmp_path, "b.rasm", b)
    done = cli(tmp_path, "equivalence", fa, fb, "--compare", "status,output", "--json")
    doc = json.loads(done.stdout)
    assert done.returncode == 4 and doc["verdict"] == "bounded", done.stdout
    assert any(b.startswith(("A: max-calldata 64 (", "B: max-calldata 64 (")) for b in doc["bounds"])
    done = cli(tmp_path, "equivalence", fa, fb, "--compare", "status,output", "--json",
               "--max-calldata", str(covering), "--vectors", "d")
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["verdict"] == "different" and doc["differing"] == ["output"]
    assert len(bytes.fromhex(doc["distinguishing_input"]["call_data"][2:])) > 64
    # the API says the same
    same = compare(Setup(0x100, {0x100: assemble(a, V)}, version=V), Setup(0x100, {0x100: assemble(b, V)}, version=V),
                   ("status", "output"))
    assert same.verdict == "bounded"


CALLS_0X300 = """
    push 0x300
    push 1000
    push 0
    push 0
    call
    push 0
    swap1
    mstore
    push 0
    push 8
    return
"""
ZERO_WORD = """
    push 0
    push 0
    mstore
    push 0
    push 8
    return
"""


def test_a_callee_not_given_is_an_assumption_named_in_the_verdict(tmp_path):
    fa, fb = write(tmp_path, "calls.rasm", CALLS_0X300), write(tmp_path, "zero.rasm", ZERO_WORD)
    write(tmp_path, "stops.rasm", "    stop\n")
    base = ("equivalence", fa, fb, "--compare", "status,output")
    done = cli(tmp_path, *base)
    # with no code at 0x300 the call fails and both return eight zero bytes: but only
    # because nothing is deployed there, which the verdict must say
    assert done.returncode == 4 and ": bounded" in done.stdout, done.stdout
    assert "A: callee 0x300 not given (assumed to have no code)" in done.stdout
    # given a callee that succeeds, the call's flag (1) is returned: different
    done = cli(tmp_path, *base, "--contract", "0x300=stops.rasm", "--vectors", "d")
    assert done.returncode == 1 and "they differ in: output" in done.stdout
    # given one that reverts, they are equivalent, and nothing is assumed
    done = cli(tmp_path, *base, "--contract", f"0x300={EX / 'reverter.rasm'}")
    assert done.returncode == 0 and ": equivalent" in done.stdout and "not given" not in done.stdout
    # symbolic: the same assumption, named
    done = cli(tmp_path, "symbolic", fa)
    assert done.returncode == 4 and "no_failure: bounded" in done.stdout
    assert "callee 0x300 not given (assumed to have no code)" in done.stdout
    x = explore(Setup(0x100, {0x100: assemble(CALLS_0X300, V)}, version=V))
    assert x.not_explored == ["callee 0x300 not given (assumed to have no code)"]
    assert compare(Setup(0x100, {0x100: assemble(CALLS_0X300, V)}, version=V),
                   Setup(0x100, {0x100: assemble(ZERO_WORD, V)}, version=V), ("status", "output")
                   ).verdict == "bounded"


def test_a_call_to_a_symbolic_address_names_the_addresses_it_assumed_empty(tmp_path):
    source = CALLS_0X300.replace("    push 0x300\n", "    push 0\n    calldataload\n")
    x = explore(Setup(0x100, {0x100: assemble(source, V)}, version=V))
    # word 0 names 0x100 itself (given: it runs again, with empty call data, and calls 0x0)
    # or any other address (assumed to have no code)
    assert x.not_explored == ["callee 0x0 not given (assumed to have no code)",
                              "callee at a symbolic address other than 0x100 not given "
                              "(assumed to have no code)"]
    v = check(x, NO_FAILURE)
    assert v.verdict == "bounded" and v.bounds == x.not_explored
    done = cli(tmp_path, "symbolic", write(tmp_path, "s.rasm", source), "--max-calldata", "8")
    assert done.returncode == 4 and "symbolic address other than 0x100" in done.stdout
