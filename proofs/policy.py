"""Policy binding (spec chapter 4) over symbolic policies, and the theorem that an
instruction the policy forbids never executes.

A policy is symbolic: each field an index into its values (policy.toml), and for every name
(mnemonic or type) a Bool 'listed as forbidden' and 'listed as allowed', plus whether the
allowed list is present. ``refusal`` follows 4.4 (listing first, then the gate).
"""

from __future__ import annotations

import itertools

import z3

from proofs.registry import Query, Theorem, declare
from proofs.words import SPEC

POLICY = SPEC.policy
FIELDS = tuple(POLICY["fields"])
ERRORS = ("none", POLICY["forbidden_by_listing"]["error"]) + tuple(
    g["error"] for g in POLICY["gate"].values())


class SymbolicPolicy:
    def __init__(self, prefix: str = "policy_"):
        self.field = {f: z3.BitVec(f"{prefix}{f}", 4) for f in FIELDS}
        names = list(SPEC.by_mnemonic) + list(SPEC.instruction_types)
        self.forbidden = {n: z3.Bool(f"{prefix}forbid_{n}") for n in names}
        self.allowed = {n: z3.Bool(f"{prefix}allow_{n}") for n in names}
        self.allow_list = z3.Bool(f"{prefix}allow_list_present")

    def well_formed(self) -> z3.BoolRef:
        return z3.And([z3.ULT(v, len(POLICY["fields"][f]["values"]))
                       for f, v in self.field.items()])

    def gate_open(self, ins) -> z3.BoolRef:
        if ins.gate is None:
            return z3.BoolVal(True)
        gate = POLICY["gate"][ins.gate]
        values = POLICY["fields"][gate["field"]]["values"]
        return z3.Or([self.field[gate["field"]] == values.index(v) for v in gate["open_when"]])

    def listed_out(self, ins) -> z3.BoolRef:
        keys = (ins.mnemonic, ins.type)
        return z3.Or(z3.Or([self.forbidden[k] for k in keys]),
                     z3.And(self.allow_list, z3.Not(z3.Or([self.allowed[k] for k in keys]))))

    def refusal(self, ins) -> z3.BitVecRef:
        """Index into ERRORS: 0 when the instruction is allowed."""
        gate_error = ERRORS.index(POLICY["gate"][ins.gate]["error"]) if ins.gate else 0
        return z3.If(self.listed_out(ins), z3.BitVecVal(1, 8),
                     z3.If(self.gate_open(ins), z3.BitVecVal(0, 8),
                           z3.BitVecVal(gate_error, 8)))


CODE_LENGTH = 2


def _forbidden_never_executes(bits=0, model=None) -> Query:
    """Code of CODE_LENGTH symbolic instructions binds only when none is refused (4.4): so
    every instruction that can execute has an open gate and is not listed out (4.2, 4.3).
    The conclusion is written from 4.2/4.3 directly, not through ``refusal``."""
    p = SymbolicPolicy()
    code = [z3.BitVec(f"op{k}", 8) for k in range(CODE_LENGTH)]
    bound = z3.And([z3.Or([z3.And(c == i.opcode, p.refusal(i) == 0) for i in SPEC.instructions])
                    for c in code])
    claims = [z3.Implies(bound, z3.And([z3.Implies(op == ins.opcode, z3.And(
        p.gate_open(ins), z3.Not(p.listed_out(ins)))) for ins in SPEC.instructions]))
        for op in code]
    return Query(claims, [p.well_formed()])


def _listing_before_gate(bits=0, model=None) -> Query:
    p = SymbolicPolicy()
    claims = []
    for ins in SPEC.instructions:
        claims.append(z3.Implies(p.listed_out(ins), p.refusal(ins) == 1))
        if ins.gate is not None:
            claims.append(z3.Implies(z3.And(z3.Not(p.listed_out(ins)), z3.Not(p.gate_open(ins))),
                                     p.refusal(ins) == ERRORS.index(
                                         POLICY["gate"][ins.gate]["error"])))
    return Query(claims, [p.well_formed()])


def policy_space():
    """Every policy shape that matters to one instruction: all field values, and for the
    lists: the instruction named by mnemonic, by type, or not at all."""
    values = [POLICY["fields"][f]["values"] for f in FIELDS]
    for combo in itertools.product(*values):
        for forbid in ("none", "mnemonic", "type"):
            for allow in ("absent", "empty", "mnemonic", "type"):
                yield dict(zip(FIELDS, combo)), forbid, allow


def check_agreement() -> list[str]:
    """The model's refusal against reference_vm.policy.Policy.refusal, exhaustively over
    policy_space() for every instruction (the model's term compiled to Python, since z3
    substitution per case is slow)."""
    from proofs.exhaustive import compile_term
    from reference_vm.policy import Policy

    problems = []
    p = SymbolicPolicy()
    variables = (list(p.field.values()) + list(p.forbidden.values())
                 + list(p.allowed.values()) + [p.allow_list])
    position = {v.get_id(): k for k, v in enumerate(variables)}
    for ins in SPEC.instructions:
        evaluate = compile_term(p.refusal(ins), variables)
        for fields, forbid, allow in policy_space():
            names = {"mnemonic": ins.mnemonic, "type": ins.type}
            forbidden = (names[forbid],) if forbid in names else ()
            allowed = None if allow == "absent" else ((names[allow],) if allow in names else ())
            args = [False] * len(variables)
            for f, v in fields.items():
                args[position[p.field[f].get_id()]] = POLICY["fields"][f]["values"].index(v)
            for n in forbidden:
                args[position[p.forbidden[n].get_id()]] = True
            for n in allowed or ():
                args[position[p.allowed[n].get_id()]] = True
            args[position[p.allow_list.get_id()]] = allowed is not None
            mine = ERRORS[evaluate(*args)]
            theirs = Policy(**fields, allowed_operations=allowed,
                            forbidden_operations=forbidden).refusal(ins) or "none"
            if mine != theirs:
                problems.append(f"{ins.mnemonic} under {fields} forbid={forbid} allow={allow}: "
                                f"model {mine} interpreter {theirs}")
    return problems


def theorems() -> list[Theorem]:
    return [Theorem("forbidden_instruction_never_executes", "-", (0,),
                    _forbidden_never_executes,
                    f"every policy, every code of {CODE_LENGTH} instructions"),
            Theorem("listing_refuses_before_gate", "-", (0,), _listing_before_gate,
                    "every policy, every instruction")]


declare(*theorems())
