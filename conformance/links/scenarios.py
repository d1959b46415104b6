"""The clauses the scenario vectors check (spec 11.9), declared by group of scenarios."""

from __future__ import annotations

from conformance.links import S, ScenarioRule

RULES: tuple[ScenarioRule, ...] = (
    S("11.9-scenario 11.9.2-carry 11.9.2-post-state 11.9.3-passing 8.4-committed 2.2-pre-state"),
    S("11.9.2-carry 2.3.1-reads", id="scenario/state/*"),
    S("11.9.2-failed-step 8.4-rolled-back 2.3.1-undo", id="scenario/state/failed_step_*"),
    S("11.9.2-failed-step 7.3.2-nothing-runs", id="scenario/state/rejected_step_changes_nothing"),
    S("11.9.2-failed-step 4.4-entry", id="scenario/state/read_only_step_then_write"),
    S("11.9.2-limits 5.1-limits", id="scenario/state/limits_bound_each_step"),
    S("11.9.2-limits 5.4-charge", id="scenario/state/storage_limit_mid_sequence"),
    S("11.9.2-post-state 2.2-zero-absent", id="scenario/state/delete_then_read"),
    S("11.9.2-transient 2.3.3-transient", id="scenario/transient/*"),
    S("11.9.2-per-step 6.10-event-lists", id="scenario/calls/events_in_order"),
    S("11.9.1-versions 1.7-which-version", id="scenario/upgrade/*"),
    S("1.7-no-leak 3.1.2-version", id="scenario/upgrade/container_1_1_under_1_0"),
    S("6.11-staticcall", id="scenario/calls/read_only_call_then_write"),
    S("6.11-frame 2.3.1-reads", id="scenario/calls/reentrancy_lock"),
    S("2.3.1-reads", id="scenario/calls/nested_write_read_directly"),
)
