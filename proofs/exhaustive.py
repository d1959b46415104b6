"""Every operand of every unary and binary word operation at 8 bits: agreement as a proof.

The model's result term (all branches folded into one ite) is compiled to a Python function
by ``compile_term`` (evaluate.py) — an evaluator of the SMT-LIB bit-vector operators the model uses, with
SMT-LIB's own semantics (bvudiv by zero is all ones, shifts by >= width give 0 or the sign
fill) — and compared with the interpreter's handler on all 2^8 or 2^16 operand tuples. The
evaluator is itself checked against z3's simplifier on sampled inputs (tests). Stack checks
and charges are the same for all operands and are covered by the branch replays.
"""

from __future__ import annotations

import types

import z3

from proofs.evaluate import compile_term
from proofs.instructions import models
from proofs.machine import fresh_state
from proofs.words import width

WORD_TYPES = ("arithmetic", "comparison", "bitwise")
BITS = 8


def word_operations(version: str) -> list[str]:
    return [i.mnemonic for i in width(BITS, version).spec.instructions
            if i.type in WORD_TYPES and i.outputs == 1 and i.inputs in (1, 2)]


def result_term(mnemonic: str, version: str, bits: int = BITS, model=None):
    """(operand variables bottom to top, the pushed value as one term)."""
    w = width(bits, version)
    s = fresh_state(w, "x_")
    ins = w.spec.by_mnemonic[mnemonic]
    model = model or models(bits, version)[mnemonic]
    branches = model(s, None)
    term = branches[-1].state.stack[0]
    for b in reversed(branches[:-1]):
        term = z3.If(b.cond, b.state.stack[0], term)
    return list(reversed(s.stack[:ins.inputs])), term


def check_operation(mnemonic: str, version: str, handler=None, model=None,
                    bits: int = BITS) -> list[dict]:
    """Every operand tuple at ``bits``; returns the disagreeing inputs (at most 5)."""
    from reference_vm.instructions import table
    from reference_vm.rules import rules

    variables, term = result_term(mnemonic, version, bits, model)
    evaluate = compile_term(term, variables)
    rule = rules(version, bits)
    ins = rule.spec.by_mnemonic[mnemonic]
    handler = handler or table(rule)[ins.opcode]
    frame = types.SimpleNamespace(stack=None)
    found = []
    values = range(1 << bits)
    tuples = ((a,) for a in values) if ins.inputs == 1 else ((a, b) for a in values for b in values)
    for operands in tuples:
        frame.stack = list(operands)
        try:
            handler(frame, 0)
            got = frame.stack[-1] if len(frame.stack) == 1 else ("stack", list(frame.stack))
        except Exception as err:  # noqa: BLE001 - a crashing handler is a disagreement
            got = f"raised {type(err).__name__}"
        expected = evaluate(*operands)
        if got != expected:
            found.append({"mnemonic": mnemonic, "width": bits, "version": version,
                          "stack": list(operands),
                          "model": expected, "interpreter": got})
            if len(found) >= 5:
                break
    return found
