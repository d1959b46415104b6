"""The mutation operators for bug classes (conformance/strength/operators.py): they plant a
result list in another order, a dropped zero fill, stale return data and size fields read as
signed; each such mutant is killed by the vectors of conformance/corpus/definitions/classes.py and
survives the rest of the corpus (as it survived the corpus before those vectors)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.corpus.definitions import classes
from conformance.strength import backend, mutants, operators, run

CLI = [sys.executable, "-m", "rtwo_vm.cli", "vectors", "strength"]


@pytest.fixture(scope="module")
def planted():
    return {m.id: m for m in mutants.select(kinds=operators.KINDS)}


def _one(planted, module_function: str, after: str | None):
    found = [m for m in planted.values() if m.id.startswith(module_function) and m.after == after]
    assert len(found) == 1, [(m.id, m.after) for m in planted.values() if m.id.startswith(module_function)]
    return found[0]


# (module:function:kind, the mutated statement as written by hand, the class vectors' group)
CLASSES = {
    "unsorted": ("state.py:Journal.changes:order", "return tuple(list(out))", "changes_"),
    "hex_strings": ("state.py:Journal.changes:order", None, "changes_"),
    "key_first": ("state.py:Journal.changes:order", None, "changes_sorted_by_"),
    "zero_fill": ("instructions/memory.py:copy_into_memory:zerofill",
                  "frame.memory[dst:dst + len(chunk)] = chunk", "_into_dirty_memory"),
    "stale": ("execute.py:Execution.call:stale", "return (False, caller.return_data)", "_refused_"),
    "signed_code_size": ("container.py:parse:signed",
                         "code_size = int.from_bytes(blob[8:12], 'little', signed=True)", "high_bytes_"),
    "signed_data_size": ("container.py:parse:signed",
                         "data_size = int.from_bytes(blob[12:16], 'little', signed=True)", "high_bytes_"),
}


def _mutant(planted, name: str):
    prefix, after, _ = CLASSES[name]
    if name in ("hex_strings", "key_first"):
        word = "sorted by hex strings" if name == "hex_strings" else "sorted by first fields swapped"
        (m,) = [m for m in planted.values() if m.id.startswith(prefix) and m.description == f"sorted(x) -> {word}"]
        return m
    if name == "stale":
        # Two identical lines (a call refused by bound_program, and for depth): the second is
        # the one a vector can reach (the first is in unreachable.toml, with its reason).
        return planted[[i for i in planted if i.startswith(prefix) and planted[i].after == after][1]]
    return _one(planted, prefix, after)


def test_the_operators_plant_each_class_where_the_reference_has_it(planted):
    kinds = {m.kind for m in planted.values()}
    assert kinds == set(operators.KINDS)
    order = [m for m in planted.values() if m.id.startswith("state.py:Journal.changes:order")]
    assert sorted(m.description for m in order) == [
        "sorted(x) -> reversed", "sorted(x) -> sorted by first fields swapped", "sorted(x) -> sorted by hex strings",
        "sorted(x) -> unsorted (the order produced)", "tuple(x) -> reversed"]
    stale = [m for m in planted.values() if m.kind == "stale"]
    assert sorted(m.line for m in stale if m.module == "execute.py") == sorted(
        i + 1 for i, line in enumerate((mutants.PACKAGE / "execute.py").read_text().splitlines())
        if 'b""' in line and ("return False" in line or "FrameOutcome(err" in line))
    for name in CLASSES:
        m = _mutant(planted, name)
        compile(m.source, m.id, "exec")
        assert m.source != (mutants.PACKAGE / m.module).read_text()


def test_the_unreachable_stale_mutant_is_the_depth_refusal(planted):
    listed = mutants.unreachable()
    (depth,) = [i for i in listed if i.startswith("execute.py:Execution.call:stale")]
    line = (mutants.PACKAGE / "execute.py").read_text().splitlines()[planted[depth].line - 3]
    assert "depth > rules.call_depth" in line


@pytest.fixture(scope="module")
def split():
    ids = {c.id for c in classes.cases()}
    everything = store.load(corpus_dir("1.0"))
    new = [v for v in everything if v["id"] in ids]
    assert len(new) == len(ids) == 59
    groups = ("storage/", "call/", "environment/", "memory/", "validation/")
    old = [v for v in everything if v["id"] not in ids and v["id"].startswith(groups)]
    return new, old


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_class_mutant_is_killed_by_the_class_vectors_and_survives_the_others(planted, split, name):
    new, old = split
    mutant = _mutant(planted, name)
    run.set_plan(run.Plan([mutant], new, "1.0", exhaustive=frozenset({mutant.id}), timeout=120.0))
    (killed,) = list(backend.local_map(run.prescreen, [0], 1))
    assert killed["status"] == "killed" and killed["how"] == "vector", killed
    assert any(CLASSES[name][2] in k for k in killed["killers"]), killed["killers"]
    run.set_plan(run.Plan([mutant], old, "1.0", timeout=300.0))
    (survived,) = list(backend.local_map(run.prescreen, [0], 1))
    assert survived["status"] == "survived", survived


def test_unknown_operators_and_a_partial_record_are_refused():
    for args in (["--operator", "shuffle"], ["--operator", "order", "--record"]):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, (args, proc.stderr)
    assert "the kinds are binop" in subprocess.run([*CLI, "--operator", "shuffle"], capture_output=True,
                                                  text=True, timeout=60).stderr


def test_a_verdict_does_not_depend_on_the_parent_process_address_space(planted, split):
    """The mutant's child is forked from this process and inherits its address space (thread
    stacks and malloc arenas of threads long gone, a JIT's reservations): its memory bound is
    on what the mutant adds. Here this process first maps 2.5 GiB it never touches; the
    mutant that survives the deepest call chain of the corpus still survives it."""
    import mmap
    _, old = split
    (deepest,) = [v for v in old if v["id"] == "call/CALL/depth_limit"]
    mutant = _mutant(planted, "unsorted")
    reserved = mmap.mmap(-1, 5 << 29, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        run.set_plan(run.Plan([mutant], [deepest], "1.0", timeout=300.0))
        (verdict,) = list(backend.local_map(run.prescreen, [0], 1))
    finally:
        reserved.close()
    assert verdict["status"] == "survived", verdict
