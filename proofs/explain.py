"""A counterexample for people: the theorem's own names, both sides of the failing claim,
and the interpreter's answer on the same input.

``explain(query, claim, cex)`` runs in the proof task's process, where the theorem's terms
live, after claims.py has found the counterexample ``cex`` (its ``inputs``, replay and
differences). It solves the claim's negation under the assumptions once more with z3, pinned
to the values ``cex`` printed (so everything shown is about one and the same model), and
returns plain data:

- ``operands``: each variable as the theorem names it (``words(bits, "a b")`` in a word law;
  otherwise the claim's free constants), with its value;
- ``sides``: the failing claim and the value of each side in the model (lhs and rhs of a
  comparison, A and B of an implication, and B's own sides when B is a comparison);
- ``interpreter``: the reference interpreter's result on the same input (for a word law,
  the law's instruction on the operands it was applied to), or ``not_replayed`` saying why
  there is none.

``render(cex)`` is its text (report.describe_failure prints it).
"""

from __future__ import annotations

import z3

MAX_OPERANDS = 12        # free constants shown (a state law's pre-state has many)
TERM_CHARS = 160         # a side's term text, cut
_COMPARE = {z3.Z3_OP_EQ: "==", z3.Z3_OP_DISTINCT: "!=", z3.Z3_OP_ULEQ: "<= (unsigned)",
            z3.Z3_OP_ULT: "< (unsigned)", z3.Z3_OP_UGEQ: ">= (unsigned)",
            z3.Z3_OP_UGT: "> (unsigned)", z3.Z3_OP_SLEQ: "<= (signed)",
            z3.Z3_OP_SLT: "< (signed)", z3.Z3_OP_SGEQ: ">= (signed)", z3.Z3_OP_SGT: "> (signed)"}


def _value(model, term):
    v = model.eval(term, model_completion=True)
    if z3.is_bv_value(v):
        return v.as_long()
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return str(v)[:TERM_CHARS]


def _text(term) -> str:
    text = " ".join(str(term).split())
    return text if len(text) <= TERM_CHARS else text[:TERM_CHARS - 3] + "..."


def _sides(model, claim) -> list[dict]:
    """[{side, term, value}] of the claim and its parts."""
    out = [{"side": "claim", "term": _text(claim), "value": _value(model, claim)}]
    if z3.is_app_of(claim, z3.Z3_OP_IMPLIES):
        a, b = claim.children()
        out += [{"side": "A", "term": _text(a), "value": _value(model, a)},
                {"side": "B", "term": _text(b), "value": _value(model, b)}]
        claim = b
    elif z3.is_not(claim):
        claim = claim.children()[0]
    if z3.is_app(claim) and claim.decl().kind() in _COMPARE and claim.num_args() == 2:
        lhs, rhs = claim.children()
        out += [{"side": "lhs", "term": _text(lhs), "value": _value(model, lhs),
                 "relation": _COMPARE[claim.decl().kind()]},
                {"side": "rhs", "term": _text(rhs), "value": _value(model, rhs)}]
    return out


def _constants(terms) -> list:
    """The free bit-vector and Boolean constants of ``terms``, by name."""
    seen: dict[str, object] = {}
    todo = list(terms)
    visited: set[int] = set()
    while todo and len(visited) < 200_000:
        t = todo.pop()
        if t.get_id() in visited:
            continue
        visited.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            if z3.is_bv(t) or z3.is_bool(t):
                seen.setdefault(str(t), t)
        elif z3.is_app(t):
            todo.extend(t.children())
    return [seen[k] for k in sorted(seen)]


def _model(query, claim, pins: list, budgets, wall: float):
    """A model of the claim's negation under the assumptions, pinned if it can be (and
    whether it is), within the z3 budget of ``proofs/budgets.toml``."""
    solver = z3.Solver()
    solver.set("rlimit", budgets.configs["z3"].rlimit)
    solver.set("timeout", int(wall * 1000))
    solver.add(*query.assumptions)
    solver.add(z3.Not(claim))
    for pin in (pins, []):
        solver.push()
        solver.add(*pin)
        if solver.check() == z3.sat:
            return solver.model(), bool(pin) or not pins
        solver.pop()
    return None, False


def _state_pins(pre, inputs: dict) -> list:
    """The pre-state's height, stack top, pc and compute meters equal to the printed inputs."""
    try:
        stack = list(reversed(inputs["stack"]))
        pins = [pre.height == inputs["height"], pre.pc == inputs["pc"],
                pre.compute == inputs["compute_used"],
                pre.compute_limit == inputs["compute_limit"]]
        return pins + [v == x for v, x in zip(pre.stack, stack)]
    except (KeyError, TypeError, z3.Z3Exception):
        return []


def explain(query, claim, cex: dict, budgets_file: str | None = None,
            wall: float | None = None, handler=None) -> dict:
    """The readable part of counterexample ``cex`` of ``claim`` (see the module doc)."""
    from proofs import solvers
    budgets = solvers.load(budgets_file)
    pins = []
    if query.operands and query.mnemonic and "operand_values" in cex:
        pins = [v == value for v, value in zip(query.operands, cex["operand_values"])]
    elif query.pre is not None and isinstance(cex.get("inputs"), dict):
        pins = _state_pins(query.pre, cex["inputs"])
    model, pinned = _model(query, claim, pins, budgets, wall or budgets.wall_seconds)
    if model is None:
        return {"not_explained": "z3 did not reproduce the counterexample within its budget"}
    variables = list(query.named) or _constants([claim])
    out: dict = {"operands": [{"name": str(v), "value": _value(model, v)}
                              for v in variables[:MAX_OPERANDS]],
                 "operands_left_out": max(0, len(variables) - MAX_OPERANDS),
                 "sides": _sides(model, claim)}
    if not pinned:
        out["unpinned"] = ("z3 found another counterexample than the one in inputs; the "
                           "values here are of that one")
    if query.calls:
        out.update(_replay_call(model, query, handler))
    elif query.pre is not None and query.mnemonic and "interpreter" in cex:
        out["replayed"] = f"{query.mnemonic} from the counterexample's pre-state (inputs)"
    elif query.pre is not None and query.mnemonic:
        out["not_replayed"] = ("the replay on the interpreter failed: "
                               f"{cex.get('replay_error', 'no result')}")
    else:
        out["not_replayed"] = ("the theorem is about the SMT model only (no instruction "
                               "input to run on the interpreter)")
    return out


def _replay_call(model, query, handler=None) -> dict:
    """The law's instruction on the operands of its first application, on the interpreter."""
    from proofs.replay import run_interpreter
    mine = [c for c in query.calls if c[0] == query.mnemonic] or list(query.calls)
    mnemonic, args, pushed = mine[0]
    stack = [a if isinstance(a, int) else _value(model, a) for a in args]
    call = {"mnemonic": mnemonic, "width": query.width,
            "operands": [{"term": _text(a), "value": v} for a, v in zip(args, stack)],
            "model_pushes": _value(model, pushed)}
    try:
        observed = run_interpreter({"mnemonic": mnemonic, "width": query.width,
                                    "version": query.version, "stack": stack},
                                   handler if mnemonic == query.mnemonic else None)
        call["outcome"] = observed.status
        call["interpreter_pushes"] = observed.stack[-1] if observed.stack else None
    except Exception as err:  # noqa: BLE001 - a replay failure is reported, not raised
        call["outcome"] = f"replay failed: {type(err).__name__}: {err}"
    return {"call": call}


def number(v) -> str:
    """A value as a person reads it: hex and decimal, true / false, or text."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:#x} ({v})"
    return str(v)


def render(cex: dict) -> list[str]:
    """The lines of a counterexample for people (empty without ``explained``)."""
    ex = cex.get("explained")
    if not isinstance(ex, dict):
        return []
    if "not_explained" in ex:
        import json
        return [f"not explained: {ex['not_explained']}",
                f"inputs (raw): {json.dumps(cex.get('inputs', cex.get('model')), default=str)[:1500]}"]
    lines = ["counterexample:"]
    lines += [f"  {o['name']} = {number(o['value'])}" for o in ex.get("operands", [])]
    if ex.get("operands_left_out"):
        lines.append(f"  ({ex['operands_left_out']} more constants not shown"
                     + ("; z3's whole model is the report's counterexample.model)"
                        if "model" in cex else ")"))
    if ex.get("unpinned"):
        lines.append(f"  (note: {ex['unpinned']})")
    lines.append("failing claim, evaluated in the counterexample:")
    for s in ex.get("sides", []):
        rel = f"   [{s['relation']}]" if "relation" in s else ""
        lines.append(f"  {s['side']}: {s['term']}  =  {number(s['value'])}{rel}")
    call = ex.get("call")
    if call:
        ops = ", ".join(f"{o['term']}={number(o['value'])}" for o in call["operands"])
        got = call.get("interpreter_pushes")
        lines.append(f"interpreter: {call['mnemonic']} w{call['width']} on ({ops}) "
                     f"[bottom to top]: {_outcome(call.get('outcome'))}"
                     + ("" if got is None else f", pushes {number(got)}")
                     + f"; the model pushes {number(call['model_pushes'])}")
        same = call.get("outcome") == "running" and got == call["model_pushes"]
        lines.append("model and interpreter agree on this input: the claim, not the "
                     "interpreter, is what fails" if same else
                     "model and interpreter DIFFER on this input")
        return lines
    elif "replayed" in ex and isinstance(cex.get("interpreter"), dict):
        i, x = cex["interpreter"], cex.get("inputs") or {}
        lines.append("pre-state: stack (bottom to top) ["
                     + ", ".join(number(v) for v in x.get("stack", [])) + "]"
                     + "".join(f", {k} {number(x[k])}" for k in
                               ("height", "pc", "compute_used", "compute_limit") if k in x)
                     + " (the rest in the report's inputs)")
        top = ", ".join(number(v) for v in i.get("stack_top", []))
        lines.append(f"interpreter: {ex['replayed']}: {_outcome(i.get('outcome'))}; stack top "
                     f"(bottom to top): [{top}]")
    else:
        lines.append(f"interpreter: not replayed: {ex.get('not_replayed')}")
    diffs = cex.get("differences")
    if diffs:
        lines.append(f"model and interpreter DIFFER on this input: {diffs}"[:1500])
    elif "differences" in cex:
        lines.append("model and interpreter agree on this input: the claim, not the "
                     "interpreter, is what fails")
    return lines


def _outcome(status) -> str:
    return "completes (the frame keeps running)" if status == "running" else str(status)
