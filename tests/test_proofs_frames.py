"""Agreement across frames (proofs/frames.py): interpreter bugs that live between a caller
and its callee, planted one line at a time into the real reference_vm code, each make
`rtwo-vm prove`'s agreement_frames row for CALL disagree (issue 22). The planted source is
the function's own text with one line changed (tests/planting.py).
"""

from __future__ import annotations

import pytest

from proofs import frames
from proofs.replay import (
    CALLEE_KEY, CALLEE_VALUE, CALLEES, POLICIES, REENTRY_KEY, REENTRY_VALUE, run_interpreter,
)
from proofs.runner import AGREES, DISAGREES, Options, run_suite
from reference_vm.execute import Execution
from planting import plant
import spec
from conftest import BASE_VERSION as V


def frames_row() -> dict:
    rows = run_suite(Options(version=V, opcodes=("CALL",), names=("agreement_frames",), jobs=1))
    assert [r["theorem"] for r in rows] == ["agreement_frames"]
    return rows[0]


PLANTED = {
    "a failed callee's writes are not undone":
        ("call", "self.journal.revert_to(mark)", "pass"),
    "a callee's code is not bound to the policy":
        ("bind_callee", "return bound_program(self.pre, address, self.policy, self.rules)",
         "return program_at(self.pre, address, self.rules)"),
    "a returning frame's memory pages are never released":
        ("run_frame", "release(self.rules, self.meter, frame)", "pass"),
    "CALL keeps stale return data when the callee cannot run":
        ("call", "record(err.kind, err.code, None)\n        return False, b\"\"",
         "record(err.kind, err.code, None)\n        return False, caller.return_data"),
    "the depth rule refuses one frame late":
        ("call", "if depth > rules.call_depth:", "if depth > rules.call_depth + 1:"),
    "the depth rule refuses one frame early":
        ("call", "if depth > rules.call_depth:", "if depth >= rules.call_depth:"),
    "a reverted callee's events reach the caller":
        ("call", "if outcome.status == \"success\":\n        caller.events.extend(callee.events)",
         "caller.events.extend(callee.events)\n    if outcome.status == \"success\":"),
    "a refused call leaves no record":
        ("call", 'record("fault", "CALL_DEPTH_EXCEEDED", None)', "pass"),
    "a call record counts no memory pages":
        ("call", "memory_pages=pages_of(rules, frame) if frame is not None else 0",
         "memory_pages=0"),
    "a callee's compute limit is not capped by its caller's":
        ("call", "limit = min(caller.compute_limit, meter.compute_used + compute)",
         "limit = meter.compute_used + compute"),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_a_planted_frame_bug_makes_the_frames_row_disagree(monkeypatch, bug):
    name, old, new = PLANTED[bug]
    plant(monkeypatch, Execution, name, old, new)
    row = frames_row()
    assert row["status"] == DISAGREES, bug
    assert row["findings"] and row["findings"][0]["differences"]


def test_the_real_interpreter_agrees_on_every_frame_case():
    row = frames_row()
    assert row["status"] == AGREES
    assert row["cases"] == len(frames.frame_inputs(V)) >= len(CALLEES) * 6


def _call(kind, **changes):
    x = {k: v for k, v in frames.call_case(V, kind, **changes).items() if k != "label"}
    return run_interpreter(x)


def test_re_entrant_writes_stay_on_success_and_go_on_failure():
    """Hand-derived from spec 6.11: the callee re-enters the caller, whose code writes
    REENTRY_VALUE at REENTRY_KEY; the caller's slot then holds it when the callee succeeded,
    and its old value (9, BASE's) when the callee reverted or trapped."""
    assert _call("reenter").storage[REENTRY_KEY] == REENTRY_VALUE
    assert _call("reenter_revert").storage[REENTRY_KEY] == 9
    assert _call("reenter_trap").storage[REENTRY_KEY] == 9
    # One frame below the depth limit the re-entry is refused; the callee still succeeds.
    deep = _call("reenter", depth=spec.load(V).limits["machine"]["call_depth"] - 1)
    assert deep.stack[-1] == 1 and deep.storage[REENTRY_KEY] == 9


def test_callee_storage_memory_and_policy_as_the_spec_says():
    ran = _call("store")
    assert ran.callee_storage == CALLEE_VALUE and ran.stack[-1] == 1
    assert _call("store_revert").callee_storage == 0
    refused = _call("store", policy="read_only")          # SSTORE's gate closed: cannot run
    assert refused.stack[-1] == 0 and refused.callee_storage == 0 and refused.return_data == b""
    memory = _call("memory")
    # The caller had 1 page live (peak 2); the callee's 2 pages are released on return, and
    # the peak is 1 + 2 = 3.
    assert memory.meters["pages_live"] == 1 and memory.meters["pages_peak"] == 3
    assert memory.return_data == bytes(2) + (0x8877665544332211).to_bytes(8, "little") + bytes(2)
    assert [e[1] for e in memory.events] == [(0xE7E7,)]
    # Its record (spec 7.5.2): depth 2, caller 0x100, callee 0x200, success, 2 pages (4,108
    # bytes), one write to a new slot, no read.
    (record,) = memory.calls
    assert record[:6] == (2, 0x100, frames.CALLEE_ADDRESS, "success", None, None)
    assert record[7:11] == (2, 0, 1, 1)
    assert _call("time", policy="defaults").stack[-1] == 0
    assert _call("time", policy="open").stack[-1] == 1
    assert set(POLICIES) >= {"open", "defaults", "read_only"}
    assert CALLEE_KEY != REENTRY_KEY
