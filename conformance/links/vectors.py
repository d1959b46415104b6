"""The clauses the single-call vectors check (spec 11.2), declared by group.

Each rule is a claim: every vector it selects checks each clause it names (its expected result
is what that clause prescribes, and an implementation that breaks the clause there fails it).
The generated rules: the vectors of an instruction check the clauses that define it
(spec.clauses.defining), those of its cost rule's section, and its section's summary table.
"""

from __future__ import annotations

import functools

import spec
from conformance.links import V, VectorRule
from spec import clauses as spec_clauses

ALL = "*"

RULES: tuple[VectorRule, ...] = (
    # 1: every vector's expected result is the one prescribed, compared field by field
    V("1.6-results 1.6-no-internal-error 7-one-status 7.5.1-status 7.5.1-error 7.5.1-usage 7.5.1-fee "
      "5.5-formula 5.5-fee 7.5.2-members 7.5.2-words 7.5.2-byte-strings 7.5.2-counts 7.5.2-strings "
      "7.5.2-arrays 7.5.2-nothing-else 11.2.4-members 11.2.7-identical", id=ALL),
    V("1.5.1-word 6.3-wraps 7.2-no-fault", id="arithmetic/*"),
    V("1.5.1-signed", opcodes=("DIVS", "REMS", "LTS", "GTS", "SHRS", "MULHS")),
    V("1.5.2-little-endian 2.7-words", id="memory/MSTORE/byte_order"),
    V("1.5.2-little-endian", id="environment/CALLDATALOAD/*"),
    V("1.5.2-little-endian 3.2.1-immediate-value", id="stack/PUSH[248]/*"),
    V("1.5.2-little-endian", id="context/RANDOM/three_words_*"),
    V("1.5.3-ranges 5.3.2-exact-end 5.3.2-limit-first", id="*/huge_*"),
    V("1.5.3-ranges 5.3.2-exact-end 6.6-offsets", id="*/offset_max_word"),
    V("1.5.4-signature 6-common-rules 2.5-positions", id="*/junk_beneath"),
    V("1.5.5-offset 3.2-code-section", id="validation/INVALID_JUMP_TARGET/*"),
    V("1.5.6-names 4.1-names", id="request/INVALID_REQUEST/*_case*"),
    V("1.6-containers 3-container 3.1.1-layout", id="validation/*"),
    V("1.6-policies", id="policy/*"),
    V("1.6-instructions", category="semantics", source="definition"),
    V("1.6-any-way 5.2.3-batching", category="segment"),
    V("1.6-any-way 5.2.3-batching", id="*inside_segment"),
    # 2
    V("2.1-words-only", id="control/JUMPI/cond_*"),
    V("2.1-words-only 6.4-boolean", id="comparison/*"),
    V("2.2-code 3-container 4.4-callee", id="call/*/callee_invalid_code"),
    V("2.2-code 3-container", id="call/CALL/callee_bad_magic"),
    V("2.2-storage 2.2-pre-state 7.5.1-state-changes", id="storage/SSTORE/*"),
    V("2.2-zero-absent", id="storage/SLOAD/absent"),
    V("2.2-zero-absent", id="storage/SSTORE/zero_to_absent"),
    V("2.2-zero-absent 6.7-visibility", id="storage/SSTORE/restore_pre_state"),
    V("2.2-zero-absent", id="storage/SSTORE/delete"),
    V("2.3.1-reads 6.7-visibility", id="storage/SLOAD/sees_own_write"),
    V("2.3.1-reads 6.7-own-storage", id="call/CALL/storage_of_callee"),
    V("2.3.1-undo 2.3.2-not-undone 5.1-no-refund 6.7-visibility", id="call/*/*writes_undone"),
    V("2.3.1-undo 6.7-visibility", id="call/CALL/revert_restores_pending_write"),
    V("2.3.1-undo 6.7-visibility 7.5.1-always-recorded", id="call/CALL/grandchild_writes_undone"),
    V("2.3.1-undo", id="transient/TSTORE/undo*"),
    V("2.3.2-meters 5.3.1-pages-peak 2.7-released", id="call/CALL/pages_released_after_return"),
    V("5.3.1-pages-peak 2.7-released", id="call/CALL/sequential_callees_reuse_pages"),
    V("2.3.2-meters", id="storage/*/storage_units_*"),
    V("2.3.2-not-undone 5.1-no-refund", id="storage/SSTORE/then_revert"),
    V("2.3.3-transient 6.13-own-storage", id="transient/*"),
    V("2.3.3-reads 6.13-visibility", id="transient/TLOAD/*"),
    V("2.3.3-reads 6.13-visibility", id="transient/TSTORE/*_visible"),
    V("2.3.3-reads 6.13-visibility", id="transient/TSTORE/read_back_in_callee"),
    V("2.3.3-reads 6.13-visibility", id="transient/TSTORE/undone_*"),
    V("2.3.3-slots-alive", id="transient/TSTORE/*full*"),
    V("2.3.3-slots-alive 5.6.8-full", boundary="transient_slots:*"),
    V("2.4-components", id="memory/MSIZE/before_growth"),
    V("2.4-components 2.9-return-data", id="environment/RETURNDATASIZE/before_call"),
    V("2.4-components 2.4-address-caller", id="environment/SELF/*"),
    V("2.4-components 2.4-address-caller", id="environment/CALLER/*"),
    V("2.4-address-caller 2.8-call-data 6.11-start", id="call/CALL/call_data_passed"),
    V("2.4-private 6.11-frame", id="call/CALL/self_call"),
    V("2.4-halts", id="control/*"),
    V("2.5-stack 7.2-stack-underflow 5.2.3-stack-underflow 7.2-charged 5.2.3-consequences",
      outcome="STACK_UNDERFLOW"),
    V("2.5-stack 7.2-stack-overflow 5.2.3-stack-overflow 5.2.3-consequences", outcome="STACK_OVERFLOW"),
    V("2.5-stack", boundary="stack_depth:*"),
    V("2.5-positions", id="stack/DUP*/*"),
    V("2.5-positions", id="stack/SWAP*/*"),
    V("2.6-return-stack 7.2-return-stack-overflow", outcome="RETURN_STACK_OVERFLOW"),
    V("2.6-return-stack 7.2-return-stack-underflow 7.2-charged", outcome="RETURN_STACK_UNDERFLOW"),
    V("2.6-return-stack", boundary="return_stack_depth:*"),
    V("2.7-memory 6.6-growth", id="memory/*"),
    V("2.8-call-data 7.3.2-request-fields", boundary="call_data_size:*"),
    V("2.8-past-end", id="environment/CALLDATA*/*"),
    V("2.9-return-data", id="environment/RETURNDATA*/*"),
    V("2.9-return-data 6.11-continue", id="call/CALL/return_data_*"),
    V("2.10-depth 7.5.1-record-depth", boundary="call_depth:*"),
    V("2.11-data-section", id="environment/DATA*/*"),
    V("2.11-data-section 3.1.2-data-size", boundary="data_size:*"),
    V("2.12-block-time", id="context/TIME/*"),
    V("2.12-random-seed", id="request/INVALID_REQUEST/seed_*"),
    V("2.12-random-seed", id="context/RANDOM/*"),
    # 3
    V("3-first-failure 3.2.2-order", id="validation/order/*"),
    V("3.1.1-integers 3.1.2-size", id="validation/CONTAINER_SIZE_MISMATCH/*"),
    V("3.1.1-container-version 3.2.1-execution-rows 1.7-which-version", id="validation/container_version/*"),
    V("3.1.2-truncated", outcome="CONTAINER_TRUNCATED"),
    V("3.1.2-magic", outcome="BAD_MAGIC"),
    V("3.1.2-version 1.7-no-leak", outcome="UNSUPPORTED_VERSION"),
    V("3.1.2-flags", outcome="RESERVED_FLAGS_SET"),
    V("3.1.2-size", outcome="CONTAINER_SIZE_MISMATCH"),
    V("3.1.2-code-size", boundary="code_size:*"),
    V("3.1.2-size-first", id="validation/order/size_mismatch_before_size_limits"),
    V("3.1.2-empty-code", id="validation/CODE_NOT_TERMINATED/empty"),
    V("3.2.1-opcode 3.2.2-undefined-opcode 6-scope", outcome="UNDEFINED_OPCODE"),
    V("3.2.1-immediate-size 3.2.2-truncated-immediate", outcome="TRUNCATED_IMMEDIATE"),
    V("3.2.1-first-failure", id="validation/order/decode_before_jump_targets"),
    V("3.2.1-first-failure", id="validation/INVALID_JUMP_TARGET/*_inside_immediate"),
    V("3.2.2-jump-target 3.2.2-targets", outcome="INVALID_JUMP_TARGET"),
    V("3.2.2-targets", id="validation/INVALID_JUMP_TARGET/*_valid_last"),
    V("3.2.2-not-terminated 3.2.2-termination", id="validation/CODE_NOT_TERMINATED/*"),
    V("3.2.3-not-checked 4.4-next 4.4-first-refused 4-bound-before", id="policy/*/gate_closed_unreachable"),
    V("3.2.3-not-checked", id="validation/CODE_NOT_TERMINATED/ends_with_RET*_is_valid"),
    # 4
    V("4.1-fields 4.3-gates", id="policy/*/gate_*"),
    V("4.1-lists", id="policy/*/allowed_*"),
    V("4.1-lists 4.2-forbidden", id="policy/*/forbidden_*"),
    V("4.1-defaults 11.2.3-policy", category="isolation"),
    V("4.1-names 4.2-forbidden", id="policy/*/*_by_type"),
    V("4.1-names", id="policy/STOP/every_type_allowed*"),
    V("4.1-malformed", id="request/INVALID_REQUEST/*_value"),
    V("4.1-malformed", id="request/INVALID_REQUEST/unknown_operation"),
    V("4.1-empty-allowed", id="policy/STOP/empty_allowed_list"),
    V("4.1-empty-allowed 4.2-example", id="policy/PUSH1/forbidden_beats_allowed"),
    V("4.2-forbidden 4.4-listing-first", id="*/forbidden_by_name"),
    V("4.2-not-allowed", id="policy/*/not_in_allowed"),
    V("4.2-example", id="policy/ADD/not_in_allowed"),
    V("4.2-example", id="policy/PUSH1/allowed_list_admits"),
    V("4.2-error 7.1-violation", outcome="INSTRUCTION_FORBIDDEN"),
    V("4.3-closed 4.4-gate-second 7.1-violation", id="policy/*/gate_closed*"),
    V("4.3-no-transient-gate", id="policy/TSTORE/pure_level_admits"),
    V("4.4-listing-first 4.4-examples", id="policy/TIME/listing_before_gate"),
    V("4.4-gate-second", id="policy/TIME/allowed_by_type_gate_still_closed"),
    V("4.4-first-refused", id="policy/SLOAD/first_refusal_wins"),
    V("4.4-entry 7.3.2-order", id="request/order/*"),
    V("4.4-callee 4.4-every-frame 6.11-cannot-run", id="policy/CALL/callee_*"),
    V("4.4-callee 4.4-every-frame 6.11-cannot-run", id="call/*/callee_policy_refused*"),
    V("6.12-gated", id="policy/TIME/*"),
    V("6.12-gated", id="policy/RANDOM/*"),
    V("6.7-own-storage", id="policy/S*/gate_*"),
    # 5
    V("5.1-dimensions 5.1-check-first 5.2.1-entry-limit 5.2.2-over-limit 5.2.2-add", boundary="compute:*"),
    V("5.1-dimensions 5.1-check-first 5.3.2-limit-first 5.3.1-pages-alive", boundary="memory_pages:*"),
    V("5.1-dimensions 5.1-check-first 5.4-charge 5.4-units", boundary="storage_units:*"),
    V("5.1-limits 7.3.2-limits", boundary="*.m*imum:*"),
    V("5.1-limits 7.3.2-limits 8.3-sandbox-provisioned", outcome="INVALID_LIMITS"),
    V("5.1-costs-data", id="*/compute_limit*"),
    V("5.2.1-meter 6.8-computeleft", id="environment/COMPUTELEFT/*"),
    V("5.2.1-callee-limit 6.8-computeleft", id="environment/COMPUTELEFT/in_callee"),
    V("5.2.1-callee-limit 5.6.7-limit 7.5.1-used-not-allowed", id="call/*/huge_compute_operand"),
    V("5.2.1-callee-limit 5.6.7-limit", id="call/CALL/zero_compute_operand"),
    V("5.2.1-callee-charged 6.11-outcome", id="call/CALL/callee_own_compute_exhausted"),
    V("5.2.2-zero", id="control/STOP/compute_limit"),
    V("5.2.2-zero", id="control/TRAP/compute_limit*"),
    V("5.2.3-base-cost 5.2.3-consequences", id="*/base_cost_short"),
    V("5.2.3-operation 5.2.3-consequences 5.3.2-page-cost", id="*/dynamic_cost_short"),
    V("5.2.3-error-pc 7.5.1-error-pc", outcome="*_LIMIT_EXCEEDED"),
    V("5.2.3-error-pc 7.5.1-error-pc 7.2-fault 7.1-fault", status="fault"),
    V("5.3.1-pages-alive", id="call/*/pages_alive_limit*"),
    V("5.3.2-covered", id="memory/MSIZE/after_growth"),
    V("5.3.2-new-pages", id="memory/MLOAD8/fresh_far"),
    V("5.3.2-append", id="memory/MLOAD/fresh_memory"),
    V("5.3.2-page-cost 5.6-copy-cost", id="memory/MCOPY/large_copy_cost"),
    V("5.3.3-touch 6.1-return 5.6.1-steps", id="control/RE*/empty_at_huge_offset"),
    V("5.3.3-touch 5.6-zero", id="*/zero_length_huge"),
    V("5.3.3-touch 5.6.6-touch", id="event/*/empty_data_huge_offset"),
    V("5.3.3-touch 5.6.7-touch", id="call/*/zero_length_far_offset"),
    V("5.3.3-touch 5.6.5-grow", id="hash/SHA256/empty_input_far_src"),
    V("5.4-new-slot 5.6.4-new-slot", id="storage/SSTORE/*new_slot*"),
    V("5.4-new-slot 5.6.4-new-slot", id="storage/SSTORE/delete_then_set"),
    V("5.4-new-slot 5.6.4-new-slot", id="storage/SSTORE/rewrite"),
    V("5.4-new-slot 5.6.4-new-slot", id="storage/SSTORE/three_writes_one_slot"),
    V("5.4-charge 7.1-exhausted", outcome="STORAGE_LIMIT_EXCEEDED"),
    V("5.6-copy-cost", id="environment/*COPY/*"),
    V("5.6-copy-cost", id="event/LOG*/data_of_*"),
    V("5.6-hash-cost 5.6-zero", id="hash/SHA256/length_*"),
    V("5.6.7-touch 6.11-cost", id="call/*/call_data_range_exhausts_caller"),
    V("5.6.7-nothing-else", id="call/*/callee_missing_contract"),
    V("5.6.7-nothing-else", id="call/*/callee_invalid_code"),
    # 6
    V("6.3-identity", id="arithmetic/DIVS/*"),
    V("6.3-identity", id="arithmetic/REMS/*"),
    V("6.5-amounts", id="bitwise/SH*/*"),
    V("6.5-counts-range", opcodes=("CLZ", "CTZ", "POPCNT")),
    V("6.10-event-lists 7.5.1-events", id="event/LOG1/across_frames"),
    V("6.10-event-lists", id="event/LOG1/*discarded*"),
    V("6.10-event-lists 7.5.1-what-survives", id="event/LOG0/entry_*"),
    V("6.10-read-only 7.2-read-only-write", id="call/STATICCALL/callee_log*"),
    V("6.11-caller-survives 7.1-whose-outcome", id="call/CALL/callee_*"),
    V("6.11-entry-not-read-only 6.11-static-too", id="call/STATICCALL/*"),
    V("6.11-outcome 7.5.1-output 7.5.1-what-survives", id="call/CALL/entry_*_outputs_nothing"),
    # 7
    V("7.1-success", status="success"),
    V("7.1-reverted 7.5.1-what-survives 8.4-rolled-back", status="reverted"),
    V("7.1-invalid 7.3.2-validation 7.3.2-nothing-runs", status="invalid"),
    V("7.1-rejected 7.3.2-nothing-runs", status="rejected"),
    V("7.1-violation 7.3.2-policy 7.3.2-nothing-runs", status="violation"),
    V("7.1-exhausted 7.2-exhaustion 7.1-kind-and-status", status="exhausted"),
    V("7.1-kind-and-status", status="fault"),
    V("7.1-whose-outcome 8.3-run-time", call_outcome="[A-Z]*"),
    V("7.2-call-depth-exceeded 6.11-cannot-run", call_outcome="CALL_DEPTH_EXCEEDED"),
    V("7.2-read-only-write", call_outcome="READ_ONLY_WRITE"),
    V("7.2-transient-storage-full 5.6.8-full", outcome="TRANSIENT_STORAGE_FULL"),
    V("7.2-transient-storage-full 5.6.8-full", call_outcome="TRANSIENT_STORAGE_FULL"),
    V("7.2-trap-executed 7.2-charged", outcome="TRAP_EXECUTED"),
    V("7.2-no-fault", id="environment/*"),
    V("7.2-no-fault", id="memory/*"),
    V("7.3.1-parts", id="request/*"),
    V("7.3.2-request-fields 8.3-requested", outcome="INVALID_REQUEST"),
    V("7.3.2-contract-exists 8.3-requested 7.5.2-example-rejected", outcome="CONTRACT_NOT_FOUND"),
    V("7.3.2-types", id="request/INVALID_LIMITS/*"),
    V("7.3.2-json-integers", id="request/limits/*"),
    V("7.3.2-json-integers", id="request/INVALID_LIMITS/exponent_limit_above_maximum"),
    V("7.3.2-which-policy 11.2.3-policy", id="policy/*/*unknown_external_call*"),
    V("7.5.1-output", id="control/RETURN/*"),
    V("7.5.1-output", id="control/REVERT/*"),
    V("7.5.1-state-changes", id="*/*/changes_*"),
    V("7.5.1-calls 7.5.1-record-caller 7.5.1-record-callee 7.5.1-record-status 7.5.1-record-error "
      "7.5.1-record-compute 7.5.1-record-memory-pages 7.5.1-record-storage", id="call/*/records_in_start_order"),
    V("7.5.1-calls 7.5.1-record-depth", id="call/CALL/nested_records_in_order"),
    V("7.5.1-record-caller 7.5.1-record-callee 7.5.1-record-status 7.5.1-record-error "
      "7.5.1-record-compute 7.5.1-record-memory-pages 7.5.1-record-storage", id="call/*"),
    V("7.5.1-record-error-pc", call_outcome="TRAP_EXECUTED"),
    V("7.5.1-record-error-pc", call_outcome="*_LIMIT_EXCEEDED"),
    V("7.5.1-always-recorded", id="call/CALL/entry_trap_after_a_call_outputs_nothing"),
    # 8: every vector's error_stage is its code's stage (checked when the adapter reports it)
    V("8.3-validated 8.1-stages", status="invalid"),
    V("8.3-policy-bound 8.1-stages", status="violation"),
    V("8.3-executing 8.1-stages", status="fault"),
    V("8.3-executing 8.1-stages", status="exhausted"),
    V("11.2.7-stage", outcome="[A-Z]*"),
)


@functools.cache
def rules(version: str) -> tuple[VectorRule, ...]:
    """The rules of ``version``: those above and the generated ones."""
    table = spec.load(version)
    generated: list[VectorRule] = []
    for ins in table.instructions:
        generated.append(VectorRule(spec_clauses.defining(ins.mnemonic, version), opcode=ins.mnemonic))
    rules_used = sorted({i.cost_rule for i in table.instructions if i.cost_rule})
    for rule in rules_used:
        section = spec_clauses.rule_section(rule, version)
        if section is None:
            continue
        users = tuple(i.mnemonic for i in table.instructions if i.cost_rule == rule)
        generated.append(VectorRule(tuple(c.id for c in spec_clauses.under(version, section)),
                                    opcodes=users, name=f"cost rule {rule}"))
    for section in sorted({i.section for i in table.instructions}, key=spec_clauses_key):
        summary = spec_clauses.summary_table(section, version)
        if summary:
            users = tuple(i.mnemonic for i in table.instructions if i.section == section)
            generated.append(VectorRule((summary,), opcodes=users, name=f"instructions of {section}"))
    return RULES + tuple(generated)


def spec_clauses_key(section: str) -> tuple[int, ...]:
    return tuple(int(p) for p in section.split("."))
