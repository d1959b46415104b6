"""The budget of a symbolic run (issue 33): every run gives a verdict in bounded time and
memory, the same verdict on every run of a command, and a verdict that names the bound that
limited it — the z3 work units of each phase (``--max-work``), the instructions in all
(``--max-steps``), the path ends of every frame, callees' included (``--max-paths``), and
the rewriting steps of one simplification; the wall clock (``--deadline``) and z3's memory
(``--z3-memory``) are safety nets that stop a run as ``stopped``, never as a verdict.

The hostile programs are the shapes that ran away before: a self-calling contract of 41
bytes at compute 6000 (more than 200 s), straight-line programs of about 8 KB (z3's
simplification of every step, no limit), a pair of 197-byte contracts of 16 MCOPYs at
symbolic offsets (each copy read memory twice: 125 s and 1.8 GB for equivalence). Each runs
through the real command line in a subprocess, under a timeout that the unbounded runs
exceeded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import z3

from proofs.symbolic import Setup, explore
from proofs.symbolic.properties import NO_FAILURE
from proofs.symbolic.verdicts import check
from reference_vm import Limits, assemble
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"

# calls itself with what compute it has left, after storage[0] += 1; forks on
# storage[storage[0]] (a fresh slot at every depth): the ends of the callees multiply
SELF_CALL = """
    push 0
    sload
    dup1
    sload
    jumpi next
next:
    push 1
    add
    push 0
    swap1
    sstore
    self
    computeleft
    push 0
    push 0
    call
    stop
"""


def straight_line(n: int) -> str:
    """n signed divisions of two call data words: 5 instructions, 5 bytes each."""
    body = "    dup2\n    dup2\n    divs\n    swap2\n    pop\n" * n
    return ("    push 0\n    calldataload\n    push 8\n    calldataload\n" + body
            + "    push 0\n    swap1\n    mstore\n    push 0\n    push 8\n    return\n")


def mcopies(n: int, tail: str = "") -> str:
    one = "    push {k}\n    calldataload\n    push 63\n    and\n    push 0\n    push 32\n    mcopy\n"
    return "".join(one.format(k=i % 8 * 8) for i in range(n)) + tail + \
        "    push 0\n    push 64\n    return\n"


def memory_reads(n: int) -> str:
    """n stores at constant offsets and loads at symbolic ones: memory's growth forks."""
    one = ("    push {a}\n    calldataload\n    push {b}\n    mstore\n    push {c}\n"
           "    calldataload\n    push 255\n    and\n    mload\n    push {d}\n    mstore\n")
    return "".join(one.format(a=i * 8 % 128, b=i * 8 % 256, c=i % 16, d=(i * 8 + 256) % 512)
                   for i in range(n)) + "    push 0\n    push 512\n    return\n"


# The child's own peak (VmHWM of its address space): ru_maxrss would carry over the peak of
# the pytest process it was forked from, hundreds of MB after a long run of other tests.
MEASURED = ("import sys\nfrom rtwo_vm.cli import main\ncode = main(sys.argv[1:])\n"
            "peak = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
            "print('maxrss', peak[0], file=sys.stderr)\nsys.exit(code)\n")


def cli(tmp_path: Path, *argv: str, timeout: float = 120, seed: str = "0"):
    """The real command line in a child process: (result, its peak RSS in KiB)."""
    done = subprocess.run([sys.executable, "-c", MEASURED, *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONHASHSEED": seed})
    rss = [int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("maxrss")]
    return done, rss[0] if rss else None


def write(tmp_path: Path, name: str, source: str) -> str:
    (tmp_path / name).write_text(source)
    return name


def test_a_self_calling_contract_at_compute_6000_answers_within_the_default_bounds(tmp_path):
    name = write(tmp_path, "self.rasm", SELF_CALL)
    assert len(assemble(SELF_CALL, V)) == 41
    started = time.monotonic()
    done, _ = cli(tmp_path, "symbolic", name, "--compute", "6000", "--json", timeout=90)
    assert time.monotonic() - started < 90
    doc = json.loads(done.stdout)
    (verdict,) = doc["properties"]
    assert done.returncode == 4 and verdict["verdict"] == "bounded"
    # the callees' ends count: the 257th end of any frame stops the exploration
    assert verdict["bounds"] == ["max-paths 256"] and doc["solver"]["frame_ends"] == 257
    assert len(doc["paths"]) < 256


def test_the_ends_of_callees_count_against_max_paths():
    codes = {0x100: assemble((EX / "proxy.rasm").read_text(), V),
             0x101: assemble((EX / "counter.rasm").read_text(), V),
             0x102: assemble((EX / "reverter.rasm").read_text(), V)}
    x = explore(Setup(0x100, codes, version=V))
    # the counter's slot new or not, the reverter's too: 4 proxy paths, 4 + 2 + 2 + ...
    # callee ends (each proxy path runs both callees once)
    assert len(x.ends) == 4 and not x.cuts and x.frame_ends > len(x.ends)
    enough = explore(Setup(0x100, codes, max_paths=x.frame_ends, version=V))
    assert len(enough.ends) == 4 and not enough.cuts
    short = explore(Setup(0x100, codes, max_paths=len(x.ends), version=V))
    assert short.bounds_hit == [f"max-paths {len(x.ends)}"] and len(short.ends) < 4
    assert check(short, NO_FAILURE).verdict == "bounded"


def test_an_8k_straight_line_program_stops_at_its_work_budget_the_same_every_time(tmp_path):
    source = straight_line(1600)
    assert len(assemble(source, V)) == 8031
    name = write(tmp_path, "line.rasm", source)
    docs = []
    for seed in ("1", "2"):
        done, _ = cli(tmp_path, "symbolic", name, "--max-calldata", "16", "--max-work",
                      "20000000", "--json", seed=seed, timeout=90)
        assert done.returncode == 4, done.stdout + done.stderr
        docs.append(json.loads(done.stdout))
    assert docs[0] == docs[1]
    (verdict,) = docs[0]["properties"]
    assert verdict["verdict"] == "bounded" and verdict["bounds"] == ["max-work 20000000"]
    # z3's simplification of the steps is what spent it: no path reached its end
    assert docs[0]["paths"] == [] and docs[0]["solver"]["steps"] < 6587


def test_max_steps_counts_every_instruction_of_the_run(tmp_path):
    loop = ("    push 0\nloop:\n    push 1\n    add\n    dup1\n    push 100\n    ltu\n"
            "    jumpi loop\n    pop\n    {end}\n")
    a = write(tmp_path, "a.rasm", loop.format(end="stop"))
    b = write(tmp_path, "b.rasm", loop.format(end="trap"))
    # 1 + 100 iterations of 6 + 2: 603 instructions; 300 do not reach the trap
    done, _ = cli(tmp_path, "symbolic", b, "--max-steps", "300")
    assert done.returncode == 4 and "no_failure: bounded" in done.stdout
    assert "max-steps 300" in done.stdout
    done, _ = cli(tmp_path, "equivalence", a, b, "--max-steps", "300")
    assert done.returncode == 4 and ": bounded" in done.stdout and "A: max-steps 300" in done.stdout
    done, _ = cli(tmp_path, "equivalence", a, b, "--vectors", "d")
    assert done.returncode == 1 and ": different" in done.stdout


def test_a_pair_of_copying_contracts_is_compared_in_seconds(tmp_path):
    a = write(tmp_path, "a.rasm", mcopies(16))
    b = write(tmp_path, "b.rasm", mcopies(16, "    push 0\n    mload\n    push 1\n    or\n"
                                           "    push 0\n    swap1\n    mstore\n"))
    assert len(assemble(mcopies(16), V)) == 197
    done, rss = cli(tmp_path, "equivalence", a, b, "--compare", "status,output", "--json",
                    "--vectors", "d", timeout=60)
    doc = json.loads(done.stdout)
    assert done.returncode == 1 and doc["verdict"] == "different" and doc["differing"] == ["output"]
    out_a, out_b = (bytes.fromhex(r["output"][2:]) for r in doc["results"])
    assert out_b[0] == out_a[0] | 1 and out_a[1:] == out_b[1:]
    assert rss is not None and rss < 400_000


def test_the_deadline_stops_a_run_as_stopped_not_as_a_verdict(tmp_path):
    name = write(tmp_path, "self.rasm", SELF_CALL)
    started = time.monotonic()
    done, _ = cli(tmp_path, "symbolic", name, "--compute", "6000", "--max-paths", "100000",
                  "--max-steps", "10000000", "--max-work", "100000000000", "--deadline", "2",
                  "--json", timeout=60)
    assert time.monotonic() - started < 60
    doc = json.loads(done.stdout)
    (verdict,) = doc["properties"]
    assert done.returncode == 4 and verdict["verdict"] == "stopped"
    assert verdict["detail"] == doc["stopped"] == (
        "the wall clock reached the 2 s deadline (a safety net, not a verdict)")


def test_z3s_memory_cap_stops_a_run_and_bounds_its_memory(tmp_path):
    name = write(tmp_path, "mem.rasm", memory_reads(60))
    base, base_rss = cli(tmp_path, "symbolic", str(EX / "counter.rasm"))
    assert base.returncode == 0 and base_rss is not None
    done, rss = cli(tmp_path, "symbolic", name, "--z3-memory", "30", "--no-ranges", timeout=90)
    assert done.returncode == 4, done.stdout + done.stderr
    assert "STOPPED: z3 reached its memory cap of 30 MB (a safety net, not a verdict)" in done.stdout
    assert "property no_failure: stopped (z3 reached its memory cap of 30 MB" in done.stdout
    # z3's own memory (its count starts near 17 MB) stays near the cap: the process holds
    # at most the cap more than a small run of the same command
    assert rss is not None and rss < base_rss + 30 * 1024, (rss, base_rss)
    # the same pair, compared: stopped, never equivalent
    other = write(tmp_path, "other.rasm", memory_reads(60).replace("    return\n", "    trap\n"))
    done, _ = cli(tmp_path, "equivalence", name, other, "--z3-memory", "30", timeout=90)
    assert done.returncode == 4 and ": stopped" in done.stdout and "equivalent" not in done.stdout


def test_a_term_too_large_to_simplify_cuts_its_path_by_name(monkeypatch):
    from proofs.symbolic import budget
    x = z3.BitVec("x", 64)
    t = x
    for k in range(200):
        t = t * (x + k)
    monkeypatch.setattr(budget, "SIMPLIFY_STEPS", 50)
    try:
        budget.simplify(t)
    except budget.TermTooLarge as err:
        assert "more than 50 rewriting steps" in str(err)
    else:
        raise AssertionError("a 400-node product simplified in 50 steps")
    xp = explore(Setup(0x100, {0x100: assemble(straight_line(40), V)}, max_calldata=16,
                       limits=Limits(), version=V))
    assert len(xp.ends) == 0 and len(xp.cuts) == 1
    assert xp.cuts[0].bound.startswith("simplify steps 50 at pc ")
    assert check(xp, NO_FAILURE).verdict == "bounded"
