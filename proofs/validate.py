"""Code validation (spec 3.2) over symbolic code, and the theorem that validated control
flow only ever lands on instruction boundaries.

The code section is CODE_BYTES symbolic bytes. ``boundary[k]`` holds when decoding from
offset 0 reaches offset k; validity is the spec's rules: every boundary holds a defined
opcode whose immediate fits, every jump target is a boundary, and the last instruction's
flow is terminal. Proved for every code of exactly CODE_BYTES bytes (shorter codes are the
same statement with trailing instructions cut, checked by the agreement below: random
codes, and edge codes putting every jump-target instruction's target at every offset, at
the code's length and past it).
"""

from __future__ import annotations

import functools
import random

import z3

import spec
from proofs.registry import Query, Theorem, declare_versions
from spec import Instruction

CODE_BYTES = 10
TERMINAL = {"halt", "jump", "return_sub"}
TARGET_BYTES = 4


def rows(version: str) -> tuple[Instruction, ...]:
    """The instruction table of spec ``version`` (the code's instruction set)."""
    return spec.load(version).instructions


def longest(version: str) -> int:
    return max(ins.size for ins in rows(version))


def size_bits(n: int, version: str) -> int:
    """The width of the size and offset words of an n-byte code: every value they take (an
    offset plus an instruction's size, at most n + LONGEST) stays below 2^(bits-1), so their
    sums and comparisons, signed or not, are those of the integers, and the queries stay
    bit-vector only (no integer arithmetic for the solvers to mix in)."""
    return max(8, (n + longest(version)).bit_length() + 1)


def _size(opcode, bits: int, version: str) -> z3.BitVecRef:
    term = z3.BitVecVal(0, bits)
    for ins in rows(version):
        term = z3.If(opcode == ins.opcode, z3.BitVecVal(ins.size, bits), term)
    return term


def _is(opcode, predicate, version: str) -> z3.BoolRef:
    return z3.Or([opcode == i.opcode for i in rows(version) if predicate(i)] or [False])


def symbolic_code(version: str, n: int = CODE_BYTES):
    code = [z3.BitVec(f"code{k}", 8) for k in range(n)]
    sizes = [_size(c, size_bits(n, version), version) for c in code]
    boundary = [z3.BoolVal(True)]
    for k in range(1, n):
        boundary.append(z3.Or([z3.And(boundary[j], sizes[j] == k - j)
                               for j in range(max(0, k - longest(version)), k)]))
    targets = [z3.Concat(*reversed(code[k + 1:k + 1 + TARGET_BYTES]))
               if k + 1 + TARGET_BYTES <= n else None for k in range(n)]
    return code, sizes, boundary, targets


def is_boundary(boundary, target) -> z3.BoolRef:
    return z3.Or([z3.And(target == k, boundary[k]) for k in range(len(boundary))])


def valid(version: str, code, sizes, boundary, targets) -> z3.BoolRef:
    n = len(code)
    rules = []
    for k in range(n):
        defined = _is(code[k], lambda i: True, version)
        fits = sizes[k] + k <= n
        jumps = _is(code[k], lambda i: i.immediate_kind == "jump_target", version)
        target_ok = is_boundary(boundary, targets[k]) if targets[k] is not None else False
        last = sizes[k] + k == n
        terminal = _is(code[k], lambda i: i.flow in TERMINAL, version)
        rules.append(z3.Implies(boundary[k], z3.And(
            defined, fits, z3.Implies(jumps, target_ok), z3.Implies(last, terminal))))
    return z3.And(rules)


def _control_lands_on_boundaries(version: str, bits=0, model=None) -> Query:
    code, sizes, boundary, targets = symbolic_code(version)
    ok = valid(version, code, sizes, boundary, targets)
    n = len(code)
    claims = []
    for k in range(n):
        nxt = _is(code[k], lambda i: i.flow in ("next", "branch", "call_sub"), version)
        jumps = _is(code[k], lambda i: i.immediate_kind == "jump_target", version)
        # An empty z3.Or prints as a bare `or`, which is not SMT-LIB: end with False.
        next_ok = z3.Or([z3.And(sizes[k] == j - k, boundary[j]) for j in range(k + 1, n)]
                        + [z3.BoolVal(False)])
        parts = [z3.Implies(nxt, next_ok)]  # includes CALLSUB's return offset
        if targets[k] is not None:
            parts.append(z3.Implies(jumps, is_boundary(boundary, targets[k])))
        claims.append(z3.Implies(z3.And(ok, boundary[k]), z3.And(parts)))
    # Validity is the premise (checked satisfiable): rules that accepted no code at all
    # make the theorem vacuous, never proved. It is repeated in each claim's antecedent
    # only because cvc5's incremental re-check is seven times faster so (same meaning).
    return Query(claims, [ok])


@functools.cache
def _checker(n: int, version: str):
    code, sizes, boundary, targets = symbolic_code(version, n)
    solver = z3.Solver()
    solver.add(valid(version, code, sizes, boundary, targets))
    return solver, code


def model_accepts(code_bytes: bytes, version: str) -> bool:
    """The symbolic rules evaluated on concrete code (for agreement with the interpreter)."""
    solver, code = _checker(len(code_bytes), version)
    return solver.check(*[c == b for c, b in zip(code, code_bytes)]) == z3.sat


def random_codes(count: int, version: str, seed: int = 0) -> list[bytes]:
    """Mostly decodable codes (instruction sequences, jump targets often on boundaries,
    usually terminated) with some raw bytes mixed in, up to CODE_BYTES long."""
    rng = random.Random(seed)
    table = rows(version)
    out = []
    for _ in range(count):
        items: list[tuple[Instruction, int]] = []    # (instruction, its offset)
        offset = 0
        while offset < rng.randint(1, CODE_BYTES):
            ins = rng.choice(table)
            items.append((ins, offset))
            offset += ins.size
        if rng.random() < 0.7:
            last = rng.choice([i for i in table if i.flow in TERMINAL and not i.immediate_size])
            items.append((last, offset))
        starts = [o for _, o in items]
        code = bytearray()
        for ins, _ in items:
            code.append(ins.opcode)
            if ins.immediate_kind == "jump_target":
                target = rng.choice(starts) if rng.random() < 0.7 else rng.randint(0, 20)
                code += target.to_bytes(ins.immediate_size, "little")
            else:
                code += bytes(rng.randint(0, 255) for _ in range(ins.immediate_size))
        if rng.random() < 0.1:
            code[rng.randrange(len(code))] = rng.randint(0, 255)
        out.append(bytes(code[:CODE_BYTES]))
    return out


def edge_codes(version: str) -> list[bytes]:
    """For every instruction with a jump target, in three layouts (``J t; STOP``, ``NOP;
    J t; PUSH1 0x5A; STOP``, and ``NOP; J t``, which ends inside nothing but J's own
    immediate): the target at every offset of the code (the first, each boundary, inside
    each immediate, the last), at the code's length, one past it, and the largest target."""
    by = spec.load(version).by_mnemonic
    nop, stop, push1 = by["NOP"].opcode, by["STOP"].opcode, by["PUSH1"].opcode
    out = []
    for ins in rows(version):
        if ins.immediate_kind != "jump_target":
            continue
        for before, after in ((b"", bytes([stop])), (bytes([nop]), bytes([push1, 0x5A, stop])),
                              (bytes([nop]), b"")):
            length = len(before) + ins.size + len(after)
            for target in [*range(length + 2), (1 << 8 * ins.immediate_size) - 1]:
                out.append(before + bytes([ins.opcode])
                           + target.to_bytes(ins.immediate_size, "little") + after)
    return out


def agreement_codes(version: str, count: int = 300) -> list[bytes]:
    """The codes validation agreement runs on: ``count`` random ones and the edge codes."""
    return random_codes(count, version) + edge_codes(version)


def check_agreement(version: str, count: int = 300) -> list[str]:
    return [f"code {c.hex()}: model {model_accepts(c, version)} interpreter "
            f"{interpreter_accepts(c, version)}" for c in agreement_codes(version, count)
            if model_accepts(c, version) != interpreter_accepts(c, version)]


def interpreter_accepts(code_bytes: bytes, version: str) -> bool:
    """The interpreter's validation of the code in a container of ``version`` itself."""
    from reference_vm.container import build
    from reference_vm.errors import InvalidCode
    from reference_vm.rules import rules
    from reference_vm.validate import validate
    try:
        validate(build(code_bytes, b"", spec.load(version).number), rules(version))
    except InvalidCode:
        return False
    return True


def theorems(version: str) -> list[Theorem]:
    return [Theorem("validated_control_lands_on_boundaries", "-", (0,),
                    functools.partial(_control_lands_on_boundaries, version),
                    f"every code of {CODE_BYTES} bytes; width-independent")]


declare_versions(theorems)
