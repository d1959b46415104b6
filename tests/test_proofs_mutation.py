"""A deliberately broken handler or model is caught, with a concrete counterexample."""

from __future__ import annotations

from proofs.accounting import running
from proofs.runner import COUNTEREXAMPLE, DISAGREES, Options, run_suite
from conftest import BASE_VERSION as V


def divs_zero_divisor_bug(frame, imm):
    """DIVS with the common bug: a / 0 pushes 0 instead of -1."""
    stack = frame.stack
    b = stack.pop()
    a = stack[-1]
    if b == 0:
        stack[-1] = 0
        return
    sa = a - (1 << 64) if a >> 63 else a
    sb = b - (1 << 64) if b >> 63 else b
    q = abs(sa) // abs(sb)
    stack[-1] = (-q if (sa < 0) != (sb < 0) else q) & ((1 << 64) - 1)


def divs_with_smtlib_division(state, imm):
    """The classic SMT pitfall: z3py's `/` is bvsdiv, whose a / 0 is 1 for negative a."""
    (b, a), state = state.pop(2)
    return [running(state.push(a / b))]


def mstore_big_endian(state, imm):
    """MSTORE writing the word big-endian (spec: little-endian)."""
    from proofs.accounting import grow_to, then
    from proofs.instructions.memory import write_bytes
    from proofs.words import byte_of
    w = state.w
    (value, offset), state = state.pop(2)
    off = w.widen(offset)
    return then(grow_to(state, off + w.size), lambda t: [running(t.replace(
        memory=write_bytes(t.memory, off, w.size, lambda k: byte_of(value, w.size - 1 - k))))])


def _suite(**overrides):
    options = Options(version=V, **{"jobs": 1, "samples": 5, "crosshair": False, **overrides})
    return run_suite(options)


def test_broken_handler_is_caught_with_concrete_inputs():
    rows = _suite(opcodes=("DIVS",), handler_overrides={"DIVS": divs_zero_divisor_bug})
    failing = {r["theorem"]: r for r in rows if r["status"] == DISAGREES}
    assert {"agreement_branches", "agreement_exhaustive"} <= set(failing)
    finding = failing["agreement_branches"]["findings"][0]
    assert finding["inputs"]["stack"][-1] == 0             # the zero divisor, concretely
    assert any("stack top" in d for d in finding["differences"])
    exhaustive = failing["agreement_exhaustive"]["findings"][0]
    assert exhaustive["stack"][1] == 0 and exhaustive["interpreter"] == 0
    assert all(r["status"] != COUNTEREXAMPLE for r in rows)  # the model itself is fine


def test_broken_model_is_caught_and_replayed_on_the_interpreter():
    # The law and the check this test reads (the others also refute the broken model: the
    # signed division identity at 64 bits alone took a minute under load).
    rows = _suite(opcodes=("DIVS",), model_overrides={"DIVS": divs_with_smtlib_division},
                  names=("division_edge_cases", "agreement_exhaustive"))
    law = next(r for r in rows if r["theorem"] == "division_edge_cases" and r["width"] == 64)
    assert law["status"] == COUNTEREXAMPLE
    cex = law["counterexample"]
    a, b = cex["inputs"]["stack"]
    assert b == 0 and a >> 63 == 1                          # a negative dividend, divisor 0
    assert cex["differences"], cex                          # the interpreter pushes -1
    exhaustive = next(r for r in rows if r["theorem"] == "agreement_exhaustive")
    assert exhaustive["status"] == DISAGREES


def test_broken_memory_model_fails_its_laws_with_replayable_inputs():
    rows = _suite(opcodes=("MSTORE",), model_overrides={"MSTORE": mstore_big_endian},
                  agreement=True, samples=0)
    law = next(r for r in rows if r["theorem"] == "mstore_writes_only_its_bytes")
    assert law["status"] == COUNTEREXAMPLE
    inputs = law["counterexample"]["inputs"]
    assert inputs["mnemonic"] == "MSTORE" and len(inputs["stack"]) >= 2
    assert "interpreter" in law["counterexample"]
    replay = next(r for r in rows if r["theorem"] == "agreement_branches")
    assert replay["status"] == DISAGREES


def test_a_crashing_task_is_an_error_never_a_proof_or_a_counterexample():
    from proofs.report import failures
    from proofs.runner import ERROR

    def crashing_model(state, imm):
        raise RuntimeError("model bug")

    rows = _suite(opcodes=("NOP",), model_overrides={"NOP": crashing_model})
    theorems = [r for r in rows if not r["theorem"].startswith("agreement")]
    assert theorems and all(r["status"] == ERROR for r in theorems)
    assert all("model bug" in r["error"] for r in theorems)
    assert failures(rows)  # makes `rtwo-vm prove` exit non-zero
