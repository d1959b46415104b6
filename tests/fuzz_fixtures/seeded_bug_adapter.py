"""The reference adapter with one realistic seeded bug, patched into the reference interpreter
of this process only — an implementation under test for the fuzzer.

    python tests/fuzz_fixtures/seeded_bug_adapter.py --bug NAME

Every bug listed passed the whole committed corpus when it was planted (``rtwo-vm conformance
run --impl ... --repeat 0`` conformed); the fuzzer has to find it. The corpus now kills those
whose findings were promoted (docs/guides/fuzzing.md, "From a finding to the corpus"):
calldataload-offset32 and memory-leak-fault; and sstore-rewrite-new and returndata-stale since
vectors were written for them. (Candidates the corpus caught — an MCOPY
that always copies upwards, RANDOM restarting per frame, refunded storage units of reverted
callees, a JUMPI testing 32 bits, SHA256 charging floor blocks, and others — were dropped.)

  mcopy-large-overlap     MCOPY of 64 bytes or more copies ascending 8-byte words, so an
                          overlapping copy to a higher address repeats the source
  calldataload-offset32   CALLDATALOAD uses only the low 32 bits of its offset
  datacopy-offset32       DATACOPY uses only the low 32 bits of its source offset
  returndatacopy-offset32 RETURNDATACOPY uses only the low 32 bits of its source offset
                          (UNFOUND: the campaign does not find it within 5 minutes yet)
  returndata-stale        a CALL that faults or is refused keeps the previous return data
  memory-leak-fault       a faulting callee's memory pages are never released
  log-zero-length-grow    LOG with zero-length data still grows memory to its offset
  sstore-rewrite-new      SSTORE counts a slot new again when a fresh slot is rewritten
  random-rollback-fault   the RANDOM counter is rolled back when a callee fails (not reverts)
  storage-refund-reads    the storage reads of a failed callee are refunded
  fault-events-kept       events of a callee that faulted reach its caller
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.adapter import Adapter  # noqa: E402
from reference_vm import instructions  # noqa: E402
from reference_vm.accounting import (  # noqa: E402
    charge, charge_storage, copy_cost, grow_to, release, touch,
)
from reference_vm.errors import Halt, InternalInvariantError, VMError  # noqa: E402
from reference_vm.instructions.memory import copy_into_memory  # noqa: E402
from reference_vm.program import load_program  # noqa: E402

ex = importlib.import_module("reference_vm.execute")


# -- handler bugs ------------------------------------------------------------------------------
def _mcopy_large(rules):
    def MCOPY(frame, imm):
        stack = frame.stack
        length, src, dst = stack.pop(), stack.pop(), stack.pop()
        if not length:
            return
        grow_to(rules, frame, max(src, dst) + length)
        charge(frame, copy_cost(rules, length))
        memory = frame.memory
        if length < 64:
            memory[dst:dst + length] = memory[src:src + length]
            return
        for i in range(0, length, 8):   # the "fast path": ascending 8-byte words
            n = min(8, length - i)
            memory[dst + i:dst + i + n] = memory[src + i:src + i + n]
    return MCOPY


def _calldataload32(rules):
    def CALLDATALOAD(frame, imm):
        stack = frame.stack
        offset = stack[-1] & 0xFFFFFFFF
        stack[-1] = int.from_bytes(frame.call_data[offset:offset + rules.word.size], "little")
    return CALLDATALOAD


def _copy32(name):
    def make(rules):
        def COPY(frame, imm):
            stack = frame.stack
            length, offset, dst = stack.pop(), stack.pop(), stack.pop()
            source = frame.data if name == "DATACOPY" else frame.return_data
            copy_into_memory(rules, frame, dst, source, offset & 0xFFFFFFFF, length)
        return COPY
    return make


def _call_stale(rules):
    def CALL(frame, imm):
        stack = frame.stack
        length, offset, compute, address = stack.pop(), stack.pop(), stack.pop(), stack.pop()
        touch(rules, frame, offset, length)
        call_data = bytes(frame.memory[offset:offset + length])
        ok, return_data = frame.execution.call(frame, address, compute, call_data, frame.read_only)
        if ok or return_data:
            frame.return_data = return_data
        stack.append(1 if ok else 0)
    return CALL


def _log_grow(row, rules):
    topic_count = row.inputs - 2

    def LOG(frame, imm):
        stack = frame.stack
        topics = tuple(stack[len(stack) - topic_count:])
        del stack[len(stack) - topic_count:]
        length, offset = stack.pop(), stack.pop()
        if offset < (1 << 40):
            grow_to(rules, frame, offset + length)
        else:
            touch(rules, frame, offset, length)
        charge(frame, copy_cost(rules, length))
        frame.events.append((frame.address, topics, bytes(frame.memory[offset:offset + length])))
    return LOG


def _sstore_rewrite(rules):
    def SSTORE(frame, imm):
        stack = frame.stack
        value, key = stack.pop(), stack.pop()
        journal = frame.execution.journal
        current = journal.load(frame.address, key)
        original = frame.execution.pre.storage_of(frame.address).get(key, 0)
        new_slot = value != 0 and (current == 0 or (original == 0 and current != value))
        if new_slot:
            charge(frame, rules.new_slot_cost)
        charge_storage(frame, rules.write_units + (rules.new_slot_units if new_slot else 0))
        frame.meter.storage_writes += 1
        if new_slot:
            frame.meter.storage_new_slots += 1
        journal.store(frame.address, key, value)
    return SSTORE


HANDLERS = {
    "mcopy-large-overlap": {"MCOPY": _mcopy_large}, "calldataload-offset32": {"CALLDATALOAD": _calldataload32},
    "datacopy-offset32": {"DATACOPY": _copy32("DATACOPY")},
    "returndatacopy-offset32": {"RETURNDATACOPY": _copy32("RETURNDATACOPY")},
    "returndata-stale": {"CALL": _call_stale}, "sstore-rewrite-new": {"SSTORE": _sstore_rewrite},
}


def patch_handlers(bug: str) -> None:
    original = instructions.table.__wrapped__

    @functools.cache
    def patched(rules):
        table = rules.spec
        out = dict(original(rules))
        for mnemonic, make in HANDLERS.get(bug, {}).items():
            out[table.by_mnemonic[mnemonic].opcode] = make(rules)
        if bug == "log-zero-length-grow":
            for row in table.instructions:
                if row.type == "event":
                    out[row.opcode] = _log_grow(row, rules)
        return out
    instructions.table = patched
    program = importlib.import_module("reference_vm.program")
    program.table = patched  # type: ignore[attr-defined]  # the seeded bug: the module's imported table replaced
    load_program.cache_clear()


# -- execution bugs ----------------------------------------------------------------------------
def patch_execution(bug: str) -> None:
    Execution = ex.Execution
    original_call = Execution.call
    original_run_frame = Execution.run_frame

    if bug == "memory-leak-fault":
        def run_frame(self, frame):
            try:
                if self.tracer is None:
                    self._run(frame)
                else:
                    self._run_traced(frame)
            except Halt as halt:
                release(self.rules, self.meter, frame)
                return ex.FrameOutcome("reverted" if halt.reverted else "success", None, None, halt.output)
            except VMError as err:
                if frame.depth == 1:
                    release(self.rules, self.meter, frame)
                return ex.FrameOutcome(err.kind, err.code, frame.pc, b"")
            raise InternalInvariantError("a frame ended without halting")
        Execution.run_frame = run_frame
    elif bug == "random-rollback-fault":
        def call(self, caller, address, compute, call_data, read_only=False):
            saved = self.random_counter
            ok, data = original_call(self, caller, address, compute, call_data, read_only)
            record = self.calls[-1] if self.calls else None
            if not ok and record is not None and record.status != "reverted":
                self.random_counter = saved
            return ok, data
        Execution.call = call
    elif bug == "storage-refund-reads":
        def call(self, caller, address, compute, call_data, read_only=False):
            reads = self.meter.storage_reads
            ok, data = original_call(self, caller, address, compute, call_data, read_only)
            if not ok:
                n = self.meter.storage_reads - reads
                self.meter.storage_reads -= n
                self.meter.storage_units -= n * self.rules.read_units
            return ok, data
        Execution.call = call
    elif bug == "fault-events-kept":
        def run_frame(self, frame):
            outcome = original_run_frame(self, frame)
            if outcome.status in ("fault", "exhausted") and frame.depth > 1:
                self._kept = getattr(self, "_kept", []) + [(frame.depth, list(frame.events))]
            return outcome

        def call(self, caller, address, compute, call_data, read_only=False):
            self._kept = []
            ok, data = original_call(self, caller, address, compute, call_data, read_only)
            for depth, events in self._kept:
                if depth == caller.depth + 1:
                    caller.events.extend(events)
            self._kept = []
            return ok, data
        Execution.run_frame = run_frame
        Execution.call = call


BUGS = ("mcopy-large-overlap", "calldataload-offset32", "datacopy-offset32",
        "returndata-stale", "memory-leak-fault", "log-zero-length-grow", "sstore-rewrite-new",
        "random-rollback-fault", "storage-refund-reads", "fault-events-kept")
# Passes the corpus too, but the campaign does not find it within the target time yet (a
# RETURNDATACOPY from an offset >= 2^32 after a call that returned data, then returned):
# kept out of the benchmark's list, still selectable with --bug.
UNFOUND = ("returndatacopy-offset32",)


class SeededBugAdapter(Adapter):
    def __init__(self, bug: str):
        super().__init__()
        self.name = f"seeded-bug-{bug}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bug", required=True, choices=BUGS + UNFOUND)
    args = parser.parse_args()
    patch_handlers(args.bug)
    patch_execution(args.bug)
    return SeededBugAdapter(args.bug).serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
