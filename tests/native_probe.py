"""Run the fuzzer's programs, malformed and maximal, through an eager native engine and the
reference in one process, and print how many agreed:
``python tests/native_probe.py SEED COUNT VERSION`` (the fuzzer's campaign of that spec version:
its programs are containers of that version or older, run under it).

Run as a child process by tests/test_native_bounds.py, so that a crash of the process (a
fault in machine code, an abort inside LLVM) is seen as its exit status instead of taking the
test run down. Exit status 0 when every result is the reference's, 1 otherwise.
"""

from __future__ import annotations

import sys

import spec
from conformance.fuzz.build import MALFORMATIONS, deep_rows, malform
from conformance.fuzz.generate import generate, rng_for
from conformance.fuzz.program import Code
from conformance.corpus.vector import request_of
from native_vm import Engine
from native_vm.plan import MAX_INSTRUCTIONS
from reference_vm import Contract, Limits, Message, WorldState, execute
from reference_vm.container import build

BASE = spec.versions()[0].version
TABLE = spec.load(BASE)           # the maximal codes are of the base version's instructions
MACHINE = TABLE.limits["machine"]


def op(mnemonic: str, immediate: int = 0) -> bytes:
    row = TABLE.by_mnemonic[mnemonic]
    return bytes([row.opcode]) + immediate.to_bytes(row.immediate_size, "little")


def maximal_codes() -> list[tuple[str, bytes, bytes]]:
    """(name, container, call data): codes at the size, stack and immediate limits."""
    size = MACHINE["code_size"]
    mask = 2**64 - 1
    codes = []
    # One segment filling the code section: past every native bound, stays on the lower tier.
    pairs = (op("PUSH8", mask) + op("ADD")) * ((size - 20) // 10)
    codes.append(("one 64 KiB segment", op("PUSH8", 1) + pairs + op("STOP"), b""))
    # A loop as large as the native tier takes, and one instruction larger, many times over.
    for count in (MAX_INSTRUCTIONS, MAX_INSTRUCTIONS + 1):
        dups = (count - 6) // 2
        body = op("PUSH1", 1) + op("DUP1") * dups + op("POP") * dups + op("NOP") * (count - 6 - 2 * dups)
        loop = op("PUSH1", 0) + op("CALLDATALOAD") + body + op("POP") + op("PUSH1", 1) + op("SUB")
        loop += op("DUP1") + op("JUMPI", 3) + op("STOP")
        codes.append((f"a loop of {count} instructions", loop, (300).to_bytes(8, "little")))
    # The stack at its limit: the loop peaks exactly at the machine's depth, then one past it.
    for spare in (0, 1):
        fill = op("PUSH1", 7) * (MACHINE["stack_depth"] - 18 + spare)   # the loop peaks at 18
        body = op("DUP16") * 17 + op("PUSH1", 1) + op("POP") * 18 + op("PUSH1", 1) + op("JUMPI", len(fill))
        codes.append((f"a loop {spare} items past the stack limit", fill + body + op("STOP"), b""))
    # Memory and call data at their extremes, in a loop: offsets at 2^64 - 1 and around.
    loop = op("PUSH8", mask) + op("CALLDATALOAD") + op("PUSH8", mask - 7) + op("MLOAD") + op("ADD")
    loop += op("PUSH8", mask) + op("MSTORE8") + op("JUMP", 0)
    codes.append(("extreme offsets", loop + op("STOP"), bytes(range(256)) * 256))
    # Jumps at every 5th byte of a 64 KiB code, each to the code's start.
    jumps = op("PUSH1", 1) + op("POP") + (op("NOP") + op("JUMP", 0)) * ((size - 4) // 6) + op("STOP")
    codes.append(("a 64 KiB code of back jumps", jumps, b""))
    return codes


def main(seed: int, count: int, version: str) -> int:
    engine = Engine(threshold=1, cold_segments=0, native_work=0, min_block=1, per_handler=0)
    agreed = requests = 0
    inputs = [generate(seed, i, version=version) for i in range(count)]
    for k in range(MALFORMATIONS):                  # every corruption of the fuzzer, forced
        inp = generate(seed, count + k, version=version)
        malform(rng_for(seed, count + k, "malform"), inp, k)
        inputs.append(inp)
    for k in range(8):                              # a stack or return stack at its limit
        inp = generate(seed, count + MALFORMATIONS + k, version=version)
        code, storage = inp.contracts[inp.to]
        if code.rows is not None:
            inp.contracts[inp.to] = (Code(rows=deep_rows(rng_for(seed, k, "deep")) + code.rows,
                                          data=code.data, version=code.version), storage)
        inputs.append(inp)
    runs: list[tuple] = []
    for inp in inputs:
        try:
            r = request_of(inp.vector_input(), version)
        except (KeyError, TypeError, ValueError):
            continue                                # a request the adapter answers BAD_MESSAGE
        runs.append((r.state, r.message, r.context, r.policy, r.limits))
    for _name, blob, call_data in maximal_codes():
        state = WorldState({0x100: Contract(build(blob, b"\xff" * MACHINE["data_size"], TABLE.number))})
        runs.append((state, Message(0x100, 1, call_data), None, None, Limits(compute=2_000_000)))
    for args in runs:
        requests += 1
        want = execute(*args, version=version).canonical_json()
        for _ in range(2):
            agreed += engine.execute(*args, version=version).canonical_json() == want
    print(f"requests {requests} agreed {agreed} of {2 * requests} native {engine.native_compiled} "
          f"failures {engine.native_failures} refused {engine.native_refused}")
    return 0 if agreed == 2 * requests else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
