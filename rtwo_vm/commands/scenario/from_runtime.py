"""``rtwo-vm scenario export --db DB``: the entry calls recorded in a runtime database, in the
order they ran, as a scenario vector (chapter 11.9, source ``runtime``).

What the runtime records gives each step whole: the message's target and caller (the
context), its call data, block time and seed (``call_requests``, from schema 7), the
determinism policy (its record), the isolation level, storage access and limits (the
sandbox), the version (the contract's, as the runtime ran it) and the result (its canonical
JSON, digest-checked). The pre-state is rebuilt: the storage the database holds now, with
every committed entry call from the first exported one on undone, newest first (each state
change set back to ``before``, after checking the slot holds its ``after``). It holds the
contracts the exported calls reach (their targets and callees) that were deployed before the
last of them.

The vector is then re-run on the reference step by step, and written only when every step
gives the recorded result and no call left out of the export changed the state the exported
ones carry between them. Otherwise nothing is written and the command says where: exit 1 when
a recorded result is not the reference's (the runtime and the reference disagree: a finding),
exit 2 when the database cannot give an exact export (a call left out changed the carried
state, or the storage was changed outside the runtime: a refused input).
"""

from __future__ import annotations

import re
import sys
from typing import Any

from conformance.scenario.carry import MAX_STEPS, next_state
from rtwo_vm.arguments.inputs import CliError, parse_word
from rtwo_vm.arguments.runtime import open_runtime

MAX_SLOTS = 100_000          # storage slots of the exported contracts
MAX_HISTORY = 1_000_000      # committed calls undone to reach the first exported one
_WORD = re.compile(r"0x(0|[1-9a-f][0-9a-f]{0,15})\Z")
_BYTES = re.compile(r"0x([0-9a-f]{2})*\Z")


def _word(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _WORD.match(value):
        raise CliError(f"{what}: {str(value)[:40]!r} is not a word (the database was changed "
                       "outside the runtime, or the call was refused before it had one)")
    return value


def _bytes(value: Any, what: str, size: int | None = None) -> str:
    if not isinstance(value, str) or not _BYTES.match(value) or (size is not None and len(value) != 2 + 2 * size):
        raise CliError(f"{what}: {str(value)[:40]!r} is not {'%d bytes' % size if size else 'bytes'} of hex")
    return value


def _selected(rt, args) -> list[str]:
    """The entry contexts to export, in the order they ran (at most MAX_STEPS)."""
    where, params = [], []
    for item in args.context or ():
        row = rt.store.one("SELECT depth FROM contexts WHERE context_id = ?", (item,))
        if row is None:
            raise CliError(f"no context {item[:60]!r} in {args.db}")
        if row["depth"] != 1:
            raise CliError(f"context {item[:60]} is a callee (depth {row['depth']}); export its entry context")
    if args.context:
        where.append(f"context_id IN ({', '.join('?' for _ in args.context)})")
        params += args.context
    if args.contract:
        addresses = [hex(parse_word(a, "--contract")) for a in args.contract]
        where.append(f"contract_id IN ({', '.join('?' for _ in addresses)})")
        params += addresses
    sql = ("SELECT context_id FROM contexts WHERE depth = 1"
           + (f" AND ({' OR '.join(where)})" if where else "") + " ORDER BY seq LIMIT ?")
    rows = rt.store.all(sql, (*params, MAX_STEPS + 1))
    if not rows:
        raise CliError(f"{args.db}: no entry calls to export" + (" with that selection" if where else ""))
    if len(rows) > MAX_STEPS:
        raise CliError(f"{args.db}: more than {MAX_STEPS} entry calls selected; a scenario has at most "
                       f"{MAX_STEPS} (chapter 11.9.1): narrow with --contract or --context")
    return [r["context_id"] for r in rows]


def _step(rt, context_id: str, version_of) -> tuple[dict[str, Any], dict[str, Any], int, str]:
    """(the step, its recorded result, the context's seq, its target) of an entry context."""
    context = rt.contexts.get(context_id)
    what = f"context {context_id}"
    to = _word(context.contract_id, f"{what}: target")
    caller = _word(context.caller_reference, f"{what}: caller")
    request = rt.store.one("SELECT * FROM call_requests WHERE context_id = ?", (context_id,))
    if request is None:
        raise CliError(f"{what} has no recorded call data (recorded before schema 7 of the runtime "
                       "database): it cannot be exported")
    sandbox = rt.sandboxes.for_context(context_id)
    limits = {"compute": sandbox.compute_limit_reference,
              "memory_pages": sandbox.memory_limit_reference,
              "storage_units": sandbox.storage_limit_reference}
    if any(v is None for v in limits.values()):
        raise CliError(f"{what}: its limits were not recorded (beyond what the database holds)")
    policy = rt.policies.get(context.resource_policy_id)
    result = rt.results.for_context(context_id).compared
    seq = rt.store.one("SELECT seq FROM contexts WHERE context_id = ?", (context_id,))["seq"]
    step = {
        "spec_version": version_of(int(to, 16)),
        "message": {"to": to, "caller": caller,
                    "call_data": _bytes(request["call_data"], f"{what}: call data")},
        "context": {"block_time": _word(request["block_time"], f"{what}: block time"),
                    "random_seed": _bytes(request["random_seed"], f"{what}: seed", 32)},
        "policy": {"time_access": policy.time_access_policy, "randomness": policy.randomness_policy,
                   "external_call": policy.external_call_policy,
                   "allowed_operations": None if policy.allowed_operations is None
                   else list(policy.allowed_operations),
                   "forbidden_operations": list(policy.forbidden_operations)},
        "sandbox": {"isolation_level": sandbox.isolation_level,
                    "storage_access": sandbox.storage_access_policy, "limits": limits},
    }
    return step, result, seq, to


def _deploy_order(rt, address: str) -> int | None:
    row = rt.store.one("SELECT min(event_id) AS e FROM outbox WHERE stream = ? AND type = "
                       "'contract.deployed'", (f"contract:{address}",))
    return None if row is None else row["e"]


def _first_event(rt, context_id: str) -> int | None:
    row = rt.store.one("SELECT min(event_id) AS e FROM outbox WHERE stream = ?", (context_id,))
    return None if row is None else row["e"]


def _contracts(rt, reached: list[str], last_context: str) -> dict[str, dict[str, Any]]:
    """The contracts among ``reached`` deployed before the last exported call, with the code
    and the storage they hold now."""
    last = _first_event(rt, last_context)
    out: dict[str, dict[str, Any]] = {}
    slots = 0
    for address in sorted(set(reached), key=lambda a: int(a, 16)):
        row = rt.store.one("SELECT code FROM contracts WHERE address = ?", (address,))
        if row is None:
            continue
        deployed = _deploy_order(rt, address)
        if deployed is not None and last is not None and deployed > last:
            continue            # deployed after the last exported call: not in its state
        code = row["code"]
        if not isinstance(code, bytes):
            raise CliError(f"contract {address}: its code is not bytes (the database was changed "
                           "outside the runtime)")
        storage = {}
        for r in rt.store.all("SELECT key, value FROM storage WHERE address = ? LIMIT ?",
                              (address, MAX_SLOTS + 1 - slots)):
            storage[_word(r["key"], f"storage of {address}")] = _word(r["value"], f"storage of {address}")
            slots += 1
        if slots > MAX_SLOTS:
            raise CliError(f"the exported contracts hold more than {MAX_SLOTS} storage slots")
        out[address] = {"code": "0x" + code.hex(), "storage": storage}
    return out


def _undo(rt, contracts: dict[str, dict[str, Any]], first_seq: int, chosen: set[str],
          spans: list[int]) -> dict[int, dict[str, Any]]:
    """Undo, newest first, every committed entry call from ``first_seq`` on: the state (of
    ``contracts``) before each exported call, by its seq. A call left out of the export that
    changed one of these contracts between the first and the last exported call is refused."""
    from rtwo_vm.runtime import stored
    from rtwo_vm.runtime.catalog import catalog
    statuses = catalog().commit_statuses
    state = {a: dict(body["storage"]) for a, body in contracts.items()}
    before: dict[int, dict[str, Any]] = {}
    pending = sorted(spans, reverse=True)     # exported calls whose state is still to be found

    def snapshot(down_to: int) -> None:       # the state before every exported call above
        while pending and pending[0] > down_to:
            before[pending.pop(0)] = {a: dict(s) for a, s in state.items()}
    rows = rt.store.conn.execute(
        "SELECT c.context_id, c.seq, r.state_changes FROM contexts c JOIN results r "
        "ON r.context_id = c.context_id WHERE c.depth = 1 AND c.seq >= ? AND r.execution_status IN "
        f"({', '.join('?' for _ in statuses)}) ORDER BY c.seq DESC", (first_seq, *statuses))
    for count, row in enumerate(rows):
        if count >= MAX_HISTORY:
            raise CliError(f"more than {MAX_HISTORY} calls ran since the first exported one")
        context_id, seq = row["context_id"], row["seq"]
        snapshot(seq)
        changes = stored.json_value(row["state_changes"], "results", context_id, "state_changes", list)
        for change in reversed(changes):
            address = _word(change.get("address") if isinstance(change, dict) else None,
                            f"context {context_id}: state change")
            if address not in state:
                continue
            if context_id not in chosen and spans[0] < seq < spans[-1]:
                raise CliError(f"context {context_id}, not exported, changed {address} between "
                               "exported calls: export it too (--context) or choose other calls")
            key = _word(change["key"], f"context {context_id}: state change")
            now = state[address].get(key, "0x0")
            if now != _word(change["after"], f"context {context_id}: state change"):
                raise CliError(f"context {context_id}: slot {key} of {address} holds {now}, not the "
                               f"{change['after']} the call left (the database was changed outside "
                               "the runtime)")
            value = _word(change["before"], f"context {context_id}: state change")
            if value == "0x0":
                state[address].pop(key, None)
            else:
                state[address][key] = value
        snapshot(seq - 1)
    snapshot(-1)
    return before


def _state(contracts: dict[str, dict[str, Any]], storage: dict[str, dict[str, str]]) -> dict[str, Any]:
    return {"contracts": {a: {"code": body["code"],
                              "storage": dict(sorted(storage[a].items(), key=lambda kv: int(kv[0], 16)))}
                          for a, body in contracts.items()}}


def build(rt, args) -> tuple[dict[str, Any], list[str]]:
    """The scenario vector of the selected calls, and what differs when re-run (empty: none)."""
    from conformance.scenario.fill import fill_input
    from conformance.scenario.schema import input_problems
    selected = _selected(rt, args)

    def version_of(address: int) -> str:
        return rt.lifecycle.contract_version(address)

    steps, recorded, seqs, reached = [], [], [], []
    for context_id in selected:
        step, result, seq, to = _step(rt, context_id, version_of)
        steps.append(step)
        recorded.append(result)
        seqs.append(seq)
        reached += [to, *(c["callee"] for c in result.get("calls", ()) if isinstance(c, dict))]
    contracts = _contracts(rt, [_word(a, "a callee") for a in reached], selected[-1])
    before = _undo(rt, contracts, seqs[0], set(selected), seqs)
    pre_state = _state(contracts, before[seqs[0]])
    scenario_input = {"pre_state": pre_state, "steps": steps}
    problems = input_problems(scenario_input)
    if problems:
        raise CliError(f"the recorded calls make no scenario input: {problems[0]}"[:300])
    vector = fill_input(scenario_input, id=args.vector_id or f"scenario/runtime/{selected[0]}",
                        description=f"{len(steps)} calls recorded by the runtime, from context "
                                    f"{selected[0]} to {selected[-1]}.",
                        source="runtime")
    found = []
    state = pre_state
    for index, (context_id, want, got) in enumerate(zip(selected, recorded, vector["expected"]["steps"])):
        if _state(contracts, before[seqs[index]]) != state:
            found.append(f"step {index} (context {context_id}): the state it ran on is not the one "
                         "the exported calls before it leave")
        if got["result"] != want:
            fields = [k for k in want if want.get(k) != got["result"].get(k)]
            found.append(f"step {index} (context {context_id}): the reference gives another result "
                         f"({', '.join(fields) or 'members'}) than the one recorded")
        state = next_state(state, got["result"])
    return vector, found


def command(args) -> int:
    """Export, check, then print (the vector's line, or --json) or write (--out) it."""
    import json
    from conformance.corpus.vector import vector_line
    from rtwo_vm.commands.scenario import show
    out = show.output_path(args.out) if args.out else None
    with open_runtime(args) as rt:
        vector, found = build(rt, args)
    if found:
        print(f"rtwo-vm: error: the export does not reproduce what was recorded: {found[0]}"
              + (f" (and {len(found) - 1} more)" if len(found) > 1 else "") + "; nothing written",
              file=sys.stderr)
        return 1
    if out is not None:
        show.write(out, [vector])
    if args.json:
        print(json.dumps(vector, indent=2, sort_keys=True))
    elif out is None:
        print(vector_line(vector))
    print(f"{vector['id']}: {len(vector['input']['steps'])} steps on "
          f"{len(vector['input']['pre_state']['contracts'])} contracts; the reference reproduces "
          "every recorded result" + (f"; written to {out}" if out else ""), file=sys.stderr)
    return 0
