"""Bugs a VM of 1.1 may have, planted in the reference's own source and run as a real adapter
process (tests/conformance_fixtures/planted_vm.py): each fails the corpus of the version it
breaks, on the vectors about it, and passes the other version where it changes nothing there."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.corpus.selection import select
from conformance.run.process import Settings
from conformance.run.suite import Options, run_suite

ROOT = Path(__file__).resolve().parent.parent
PLANTED = ROOT / "tests" / "conformance_fixtures" / "planted_vm.py"


def _failing(bug: str, version: str, filters: list[str], workers: int = 2) -> tuple[set[str], int]:
    """(the failing vector ids, the vectors run) of the planted VM on ``version``'s vectors that
    ``filters`` select (blinded, as every judging run: the default)."""
    vectors = select(store.load(corpus_dir(version)), filters)
    command = shlex.join([sys.executable, str(PLANTED), "--bug", bug])
    options = Options(Settings(version, workers=workers, timeout=30.0), repeat=0, max_traces=0,
                      trace_sample=False)
    (run,) = run_suite([command], vectors, [], options).runs
    assert not run.start_error and not run.issues, (run.start_error, run.issues)
    return {vid for vid, o in run.outcomes.items() if o.status == "fail"}, len(vectors)


def test_a_sign_error_in_mulhs_fails_the_mulhs_vectors():
    failing, _ = _failing("mulhs-sign", "1.1", ["arithmetic/MULHS/*", "arithmetic/MULHU/*"])
    assert {"arithmetic/MULHS/minus_one__one", "arithmetic/MULHS/min__minus_one",
            "arithmetic/MULHS/minus_seven__two"} <= failing
    assert all(v.startswith("arithmetic/MULHS/") for v in failing)
    assert "arithmetic/MULHS/one__minus_one" not in failing       # a non-negative a is read right


def test_clz_accepted_in_a_1_0_container_fails_the_undefined_opcode_vectors_of_1_0():
    # 0x69 is CLZ in a 1.1 container, undefined in a 1.0 one: the 1.0 definitions (1.0
    # containers, in both corpora) catch a VM of 1.1 that decodes every container alike.
    failing, _ = _failing("clz-in-1-0", "1.1", ["validation/UNDEFINED_OPCODE/*"])
    new = {f"validation/UNDEFINED_OPCODE/byte_0x{op:02x}" for op in (0x47, 0x48, 0x69, 0x6A, 0x6B, 0x84, 0x85, 0xC1)}
    assert failing == new
    assert _failing("clz-in-1-0", "1.0", ["validation/UNDEFINED_OPCODE/byte_0x69"]) == (set(), 1)


def test_a_read_only_callee_that_writes_storage_fails_the_staticcall_vectors():
    failing, _ = _failing("read-only-sstore", "1.1", ["call/STATICCALL/*"])
    assert {"call/STATICCALL/callee_sstore_read_only_write", "call/STATICCALL/nested_call_is_read_only",
            "call/STATICCALL/caller_write_before_kept"} <= failing
    assert "call/STATICCALL/callee_tstore_read_only_write" not in failing     # TSTORE's own check stands


def test_transient_storage_that_survives_an_execution_fails_the_transient_vectors():
    # One adapter process runs the transient vectors one after the other, at the addresses they
    # publish (blinding keeps them for requests that use transient storage): what one wrote is
    # read by a later one that expects 0.
    failing, count = _failing("transient-leak", "1.1", ["transient/*"], workers=1)
    assert "transient/TLOAD/unwritten_is_zero" in failing and len(failing) >= 10, sorted(failing)
    # Each alone in a fresh process: nothing to leak, every one passes.
    for vid in ("transient/TLOAD/unwritten_is_zero", "transient/TSTORE/then_tload"):
        assert _failing("transient-leak", "1.1", [vid]) == (set(), 1)


def test_the_repricing_applied_to_1_0_fails_the_sha256_vectors_of_1_0():
    failing, _ = _failing("repricing-in-1-0", "1.0", ["hash/SHA256/*", "arithmetic/ADD/one__one"])
    assert {"hash/SHA256/length_64", "hash/SHA256/happy", "hash/SHA256/compute_limit+1"} <= failing
    assert all(v.startswith("hash/SHA256/") for v in failing)
    assert _failing("repricing-in-1-0", "1.1", ["hash/SHA256/*"])[0] == set()


@pytest.mark.parametrize("bug", ["mulhs-sign", "read-only-sstore", "transient-leak"])
def test_a_1_1_bug_changes_nothing_in_1_0(bug):
    assert _failing(bug, "1.0", ["arithmetic/MUL*", "storage/SSTORE/*", "call/CALL/callee_*"])[0] == set()
