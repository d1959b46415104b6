"""The clauses of the spec (spec/clauses.py) the theorems and agreement checks check.

Declared by group: each generic theorem (proofs/theorems.py, one per instruction) names the
clauses every instance of it checks, and, per instruction, the ones that follow from the row
(the clauses defining the instruction, those of its cost rule's section, its section's summary
table); each law names its own. An agreement check compares the model with the interpreter on
concrete inputs: the per-instruction kinds check the clauses that define the instruction, the
others (frames, policy, validation, lifecycle) those of their chapter. A declaration naming a
clause a version lacks is left out of that version by rtwo_vm/clauses.py. Nothing here builds
a theorem: the names come from the registry.
"""

from __future__ import annotations

from spec import clauses as spec_clauses
from spec.clauses import Link, ids

# Per generic theorem: the clauses every instance checks (proofs/theorems.py says what each proves).
GENERIC = {
    "stack_effect": "1.5.4-signature 6-common-rules 6-row-fields 2.5-stack",
    "cost": "5.1-costs-data 5.2.3-base-cost 5.6-rules 5.2.2-add",
    "halts_exactly": "5.2.3-stack-underflow 5.2.3-stack-overflow 5.2.3-base-cost 5.2.3-operation "
                     "5.2.2-over-limit 5.1-check-first 7.2-charged",
    "charges_before_effect": "5.1-check-first 5.2.3-consequences 7.2-fault 5.3.2-limit-first 5.3.2-page-cost",
    "meters": "2.3.2-meters 5.1-check-first 5.1-no-refund",
    "deterministic": "1.1-pure-function 4.3-classes",
}

# Per law (proofs/laws.py, laws_v11.py, frame_laws.py, lifecycle.py, policy.py, validate.py).
LAWS = {
    "ring_laws_add_sub": "6.3-add-sub-mul 6.3-wraps",
    "ring_laws_mul": "6.3-add-sub-mul",
    "mul_distributes_over_add": "6.3-add-sub-mul",
    "mul_is_low_word_of_product": "6.3-add-sub-mul",
    "divu_remu_identity_and_floor": "6.3-divu 6.3-remu 6.3-identity",
    "divs_rems_identity_and_truncation": "6.3-divs 6.3-rems 6.3-identity 1.5.1-signed",
    "division_edge_cases": "6.3-divu 6.3-divs 6.3-remu 6.3-rems 6.3-identity",
    "comparison_orders": "6.4-relations 6.4-boolean 1.5.1-signed 2.1-words-only",
    "boolean_algebra": "6.5-logic",
    "shl_every_amount": "6.5-shl 6.5-amounts",
    "shru_every_amount": "6.5-shru 6.5-amounts",
    "shrs_every_amount": "6.5-shrs 6.5-amounts 1.5.1-signed",
    "rotate_every_amount": "6.5-rotate",
    "mstore_then_mload_reads_value": "6.6-mstore 6.6-mload 2.7-words",
    "mstore_writes_only_its_bytes": "6.6-mstore",
    "mstore8_then_mload8_low_byte": "6.6-mstore8 6.6-mload8",
    "mload_is_little_endian": "6.6-mload 1.5.2-little-endian 2.7-words",
    "mcopy_copies_through_buffer": "6.6-mcopy",
    "sstore_then_sload_and_frame": "6.7-sstore 6.7-sload 2.3.1-reads 6.7-visibility",
    "jumpi_taken_iff_nonzero": "6.1-jumpi 2.1-words-only",
    "callsub_retsub_round_trip": "6.1-callsub 6.1-retsub",
    "calldataload_zero_past_end": "6.8-calldataload 2.8-past-end",
    "computeleft_after_own_cost": "6.8-computeleft 5.2.1-meter",
    "log_event_contents": "6.10-logn",
    "sha256_writes_digest": "6.9-sha256",
    "time_and_random_stream": "6.12-time 6.12-random 2.12-block-time",
    "call_flag_limit_and_undo": "6.11-outcome 6.11-continue 5.2.1-callee-limit 2.3.1-undo",
    "return_output_bytes": "6.1-return",
    "revert_output_bytes": "6.1-revert",
    "call_outcome_and_return_data": "6.11-cannot-run 6.11-outcome 6.11-continue 6.11-caller-survives "
                                    "2.9-return-data 2.10-depth",
    "call_charges_callee_usage": "5.2.1-callee-limit 5.2.1-callee-charged 5.6.7-limit 5.6.7-nothing-else "
                                 "2.3.2-not-undone",
    "staticcall_outcome_and_return_data": "6.11-staticcall 6.11-cannot-run 6.11-outcome 6.11-continue "
                                          "6.11-static-too 2.9-return-data 2.10-depth",
    "staticcall_charges_callee_usage": "6.11-staticcall 5.2.1-callee-limit 5.2.1-callee-charged 5.6.7-limit",
    "mulh_high_words_of_product": "6.3-mulhu 6.3-mulhs",
    "mulhs_is_mulhu_sign_corrected": "6.3-mulhs",
    "mulh_edge_cases": "6.3-mulhu 6.3-mulhs",
    "clz_highest_one_bit": "6.5-clz 6.5-counts-range",
    "ctz_lowest_one_bit": "6.5-ctz 6.5-counts-range",
    "popcnt_recurrence": "6.5-popcnt 6.5-counts-range",
    "tstore_then_tload_and_frame": "6.13-tstore 6.13-tload 2.3.3-reads 6.13-visibility",
    "lifecycle_terminates_without_revisiting": "8-stages 8.2-forward 8.2-diagram 8.1-alternatives",
    "lifecycle_commits_only_after_accounting": "8.1-stages 8.2-forward 8.1-alternatives 8.4-committed",
    "lifecycle_error_stages_roll_back": "8.1-work 8.2-forward 8.3-requested 8.3-validated 8.3-policy-bound "
                                        "8.3-sandbox-provisioned 8.3-executing",
    "forbidden_instruction_never_executes": "4.4-no-runtime-check 4-bound-before",
    "listing_refuses_before_gate": "4.4-listing-first 4.4-gate-second 4.2-error 4.3-closed",
    "validated_control_lands_on_boundaries": "3.2.3-boundaries 3.2.3-no-run-off 3.2.3-static "
                                             "3.2.2-targets 3.2.2-termination 2.4-halts",
}

# Per agreement kind that is not per instruction, and the clauses every per-instruction kind checks.
AGREEMENT = {
    "frames": "6.11-start 6.11-cannot-run 6.11-frame 6.11-outcome 6.11-continue 6.11-caller-survives "
              "5.2.1-callee-limit 2.4-private 2.4-address-caller 2.3.1-undo 6.10-event-lists",
    "policy": "4.2-forbidden 4.2-not-allowed 4.2-error 4.3-closed 4.4-listing-first 4.4-gate-second "
              "4.1-names 4.1-empty-allowed 4.1-lists 4.1-fields",
    "validate": "3.2.1-opcode 3.2.1-immediate-size 3.2.1-first-failure 3.2.2-undefined-opcode "
                "3.2.2-truncated-immediate 3.2.2-jump-target 3.2.2-not-terminated 3.2.2-order "
                "3.2.2-targets 3.2.2-termination",
    "lifecycle": "8.1-stages 8.2-diagram 8.2-forward 8.3-requested 8.3-validated 8.3-policy-bound "
                 "8.3-sandbox-provisioned 8.3-executing 7.3.2-nothing-runs",
}
PER_INSTRUCTION = "5.2.3-next 5.2.3-operation"


def _stack_pushers(table) -> list[str]:
    """The instructions whose pushed words stack_effect pins: every stack row, SELF, CALLER."""
    return [i.mnemonic for i in table.instructions if i.type == "stack" or i.mnemonic in ("SELF", "CALLER")]


def theorem_links(version: str) -> list[Link]:
    """The links of the theorems the suite registers for ``version`` (versions.UnmodelledVersion,
    a ValueError, for a version without models)."""
    from proofs import registry
    registered = registry.builtin(version)
    import spec
    table = spec.load(version)
    by_name: dict[str, list[str]] = {}
    for th in registered:
        by_name.setdefault(th.name, []).append(th.opcode)
    out: list[Link] = []
    for family, clauses in GENERIC.items():
        names = tuple(f"{m} {family}" for m in by_name.get(family, ()))
        if names:
            out.append(Link("theorem", f"{family} (every instruction)", ids(clauses), names))
    generic = set(by_name.get("halts_exactly", ()))
    for ins in table.instructions:
        if ins.mnemonic in generic:
            out.append(Link("theorem", f"halts_exactly {ins.mnemonic}",
                            spec_clauses.defining(ins.mnemonic, version), (f"{ins.mnemonic} halts_exactly",)))
    for mnemonic in _stack_pushers(table):
        if mnemonic in set(by_name.get("stack_effect", ())):
            out.append(Link("theorem", f"stack_effect {mnemonic}", spec_clauses.defining(mnemonic, version),
                            (f"{mnemonic} stack_effect",)))
    for rule in sorted({i.cost_rule for i in table.instructions if i.cost_rule}):
        section = spec_clauses.rule_section(rule, version)
        users = [i.mnemonic for i in table.instructions if i.cost_rule == rule and i.mnemonic in generic]
        if section and users:
            out.append(Link("theorem", f"cost and halts_exactly of cost rule {rule}",
                            tuple(c.id for c in spec_clauses.under(version, section)),
                            tuple(f"{m} {f}" for m in users for f in ("cost", "halts_exactly"))))
    for section in sorted({i.section for i in table.instructions}, key=_number):
        summary = spec_clauses.summary_table(section, version)
        users = [i.mnemonic for i in table.instructions if i.section == section and i.mnemonic in generic]
        if summary and users:
            out.append(Link("theorem", f"stack_effect of the instructions of {section}", (summary,),
                            tuple(f"{m} stack_effect" for m in users)))
    for name, clauses in LAWS.items():
        if name in by_name:
            out.append(Link("theorem", name, ids(clauses),
                            tuple(f"{op} {name}" if op != "-" else name for op in by_name[name])))
    return out


def agreement_links(version: str) -> list[Link]:
    """The links of the agreement checks ``rtwo-vm prove`` plans for ``version``
    (versions.UnmodelledVersion for a version without models)."""
    from proofs import runner
    from proofs.verdicts import Options
    tasks = [t for t in runner.plan(Options(version=version)) if t[0] not in ("theorem", "group")]
    by_kind: dict[str, list[str]] = {}
    for kind, key, _ in tasks:
        by_kind.setdefault(kind, []).append(str(key))
    out: list[Link] = []
    for kind, keys in sorted(by_kind.items()):
        if kind in AGREEMENT:
            out.append(Link("agreement", kind, ids(AGREEMENT[kind]),
                            tuple(f"agreement_{kind} {k}" if k != "-" else f"agreement_{kind}" for k in keys)))
            continue
        if kind == "crosshair":
            continue
        out.append(Link("agreement", f"{kind} (every instruction)", ids(PER_INSTRUCTION),
                        tuple(f"agreement_{kind} {k}" for k in keys)))
        for mnemonic in keys:
            out.append(Link("agreement", f"{kind} {mnemonic}", spec_clauses.defining(mnemonic, version),
                            (f"agreement_{kind} {mnemonic}",)))
    return out


def _number(section: str) -> tuple[int, ...]:
    return tuple(int(p) for p in section.split("."))
