"""Policy binding (spec chapter 4) over symbolic policies, and the theorem that an
instruction the policy forbids never executes.

A policy is symbolic: each field an index into its values (policy.toml), and for every name
(mnemonic or type) a Bool 'listed as forbidden' and 'listed as allowed', plus whether the
allowed list is present. ``refusal`` follows 4.4 (listing first, then the gate).
"""

from __future__ import annotations

import functools
import itertools

import z3

import spec
from proofs.registry import Query, Theorem, declare_versions


def errors(table: spec.Spec) -> tuple[str, ...]:
    """The refusals of version ``table``: "none", the listing's error, each gate's error."""
    policy = table.policy
    return ("none", policy["forbidden_by_listing"]["error"]) + tuple(
        g["error"] for g in policy["gate"].values())


class SymbolicPolicy:
    """A symbolic policy of spec version ``table`` (its fields, names and gates)."""

    def __init__(self, table: spec.Spec, prefix: str = "policy_"):
        self.table = table
        self.policy = POLICY = table.policy
        self.errors = errors(table)
        self.field = {f: z3.BitVec(f"{prefix}{f}", 4) for f in POLICY["fields"]}
        names = list(table.by_mnemonic) + list(table.instruction_types)
        self.forbidden = {n: z3.Bool(f"{prefix}forbid_{n}") for n in names}
        self.allowed = {n: z3.Bool(f"{prefix}allow_{n}") for n in names}
        self.allow_list = z3.Bool(f"{prefix}allow_list_present")

    def well_formed(self) -> z3.BoolRef:
        return z3.And([z3.ULT(v, len(self.policy["fields"][f]["values"]))
                       for f, v in self.field.items()])

    def gate_open(self, ins) -> z3.BoolRef:
        if ins.gate is None:
            return z3.BoolVal(True)
        gate = self.policy["gate"][ins.gate]
        values = self.policy["fields"][gate["field"]]["values"]
        return z3.Or([self.field[gate["field"]] == values.index(v) for v in gate["open_when"]])

    def listed_out(self, ins) -> z3.BoolRef:
        keys = (ins.mnemonic, ins.type)
        return z3.Or(z3.Or([self.forbidden[k] for k in keys]),
                     z3.And(self.allow_list, z3.Not(z3.Or([self.allowed[k] for k in keys]))))

    def refusal(self, ins) -> z3.BitVecRef:
        """Index into ``errors``: 0 when the instruction is allowed."""
        gate_error = self.errors.index(self.policy["gate"][ins.gate]["error"]) if ins.gate else 0
        return z3.If(self.listed_out(ins), z3.BitVecVal(1, 8),
                     z3.If(self.gate_open(ins), z3.BitVecVal(0, 8),
                           z3.BitVecVal(gate_error, 8)))


def concrete_refusal(fields: dict, ins, table: spec.Spec) -> str:
    """The model's refusal of ``ins`` (an ``errors`` entry, "none" when allowed) under a
    concrete policy given as reference_vm.policy.Policy's fields (absent ones at policy.toml's
    defaults) in version ``table``: ``refusal`` with every symbol fixed."""
    p = SymbolicPolicy(table, "concrete_")
    POLICY = table.policy
    forbidden = set(fields.get("forbidden_operations", ()))
    allowed = fields.get("allowed_operations")
    fixed = [p.allow_list == (allowed is not None)]
    for f in POLICY["fields"]:
        values = POLICY["fields"][f]["values"]
        fixed.append(p.field[f] == values.index(fields.get(f, POLICY["fields"][f]["default"])))
    for name in (ins.mnemonic, ins.type):
        fixed += [p.forbidden[name] == (name in forbidden),
                  p.allowed[name] == (name in (allowed or ()))]
    index = z3.simplify(z3.substitute(p.refusal(ins), *[(c.arg(0), c.arg(1)) for c in fixed]))
    return p.errors[index.as_long()]


CODE_LENGTH = 2


# Chapter 4 read from the tables of policy.toml and instructions.toml directly, for the
# theorems' conclusions: never through the model's helpers (gate_open, listed_out,
# refusal), so that a wrong helper cannot agree with itself.

def spec_listed(p: SymbolicPolicy, mnemonic: str, kind: str) -> z3.BoolRef:
    """4.2: m or t in forbidden_operations, or allowed_operations present without m and t."""
    return z3.Or(p.forbidden[mnemonic], p.forbidden[kind],
                 z3.And(p.allow_list, z3.Not(p.allowed[mnemonic]), z3.Not(p.allowed[kind])))


def spec_gate_closed(p: SymbolicPolicy, gate: str | None) -> z3.BoolRef:
    """4.3: the gate's field holds a value outside its open_when list (no gate: open)."""
    if gate is None:
        return z3.BoolVal(False)
    table = p.table.policy["gate"][gate]
    values = p.table.policy["fields"][table["field"]]["values"]
    closed = [k for k, v in enumerate(values) if v not in table["open_when"]]
    return z3.Or([p.field[table["field"]] == k for k in closed] + [z3.BoolVal(False)])


def _rows(table: spec.Spec):
    """(opcode, mnemonic, type, gate) of every row of instructions.toml."""
    return [(i.opcode, i.mnemonic, i.type, i.gate) for i in table.instructions]


def _forbidden_never_executes(version: str, bits=0, model=None) -> Query:
    """Premises: a well-formed policy, and code of CODE_LENGTH symbolic instructions that
    the model binds (no instruction refused by ``refusal``, 4.4). Claim: every instruction
    of that code is allowed by 4.2 and 4.3 as the spec's tables state them (not listed, its
    gate open)."""
    table = spec.load(version)
    p = SymbolicPolicy(table)
    code = [z3.BitVec(f"op{k}", 8) for k in range(CODE_LENGTH)]
    bound = z3.And([z3.Or([z3.And(c == i.opcode, p.refusal(i) == 0) for i in table.instructions])
                    for c in code])
    claims = [z3.And([z3.Implies(op == opcode, z3.Not(z3.Or(
        spec_listed(p, mnemonic, kind), spec_gate_closed(p, gate))))
        for opcode, mnemonic, kind, gate in _rows(table)]) for op in code]
    return Query(claims, [p.well_formed(), bound])


def _listing_before_gate(version: str, bits=0, model=None) -> Query:
    """Per instruction, the model's refusal is the spec's (4.4): the listing error when
    listed (whatever the gate), else the gate's error when the gate is closed, else none."""
    table = spec.load(version)
    p = SymbolicPolicy(table)
    ERRORS = errors(table)
    listing = ERRORS.index(table.policy["forbidden_by_listing"]["error"])
    claims = []
    for ins in table.instructions:
        listed = spec_listed(p, ins.mnemonic, ins.type)
        closed = spec_gate_closed(p, ins.gate)
        claims.append(z3.Implies(listed, p.refusal(ins) == listing))
        if ins.gate is not None:
            gate_error = ERRORS.index(table.policy["gate"][ins.gate]["error"])
            claims.append(z3.Implies(z3.And(z3.Not(listed), closed),
                                     p.refusal(ins) == gate_error))
        claims.append(z3.Implies(z3.And(z3.Not(listed), z3.Not(closed)), p.refusal(ins) == 0))
    return Query(claims, [p.well_formed()])


def policy_space(table: spec.Spec):
    """Every policy shape that matters to one instruction: all field values, and for the
    lists: the instruction named by mnemonic, by type, or not at all."""
    fields = tuple(table.policy["fields"])
    values = [table.policy["fields"][f]["values"] for f in fields]
    for combo in itertools.product(*values):
        for forbid in ("none", "mnemonic", "type"):
            for allow in ("absent", "empty", "mnemonic", "type"):
                yield dict(zip(fields, combo)), forbid, allow


def check_agreement(version: str) -> list[str]:
    """The model's refusal against reference_vm.policy.Policy.refusal, exhaustively over
    policy_space() for every instruction (the model's term compiled to Python, since z3
    substitution per case is slow)."""
    from proofs.exhaustive import compile_term
    from reference_vm.policy import Policy

    problems = []
    table = spec.load(version)
    POLICY = table.policy
    p = SymbolicPolicy(table)
    variables = (list(p.field.values()) + list(p.forbidden.values())
                 + list(p.allowed.values()) + [p.allow_list])
    position = {v.get_id(): k for k, v in enumerate(variables)}
    for ins in table.instructions:
        evaluate = compile_term(p.refusal(ins), variables)
        for fields, forbid, allow in policy_space(table):
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
            mine = p.errors[evaluate(*args)]
            theirs = Policy(**fields, allowed_operations=allowed,
                            forbidden_operations=forbidden).refusal(ins, table) or "none"
            if mine != theirs:
                problems.append(f"{ins.mnemonic} under {fields} forbid={forbid} allow={allow}: "
                                f"model {mine} interpreter {theirs}")
    return problems


def theorems(version: str) -> list[Theorem]:
    return [Theorem("forbidden_instruction_never_executes", "-", (0,),
                    functools.partial(_forbidden_never_executes, version),
                    f"every policy, every code of {CODE_LENGTH} instructions"),
            Theorem("listing_refuses_before_gate", "-", (0,),
                    functools.partial(_listing_before_gate, version),
                    "every policy, every instruction")]


declare_versions(theorems)
