"""Executions: ``/contexts`` (newest first, paged, filtered), ``/contexts/{id}`` (the lifecycle
as a timeline of its ten stages), ``/results/{id}`` (state changes, events, output and the
disassembly of the contract's code) and ``/accounting/{context id}`` (usage against the
sandbox's limits in each dimension). A record, or a part of one, that does not decode is
shown as damaged in its place (html.damaged); the page around it shows the rest."""

from __future__ import annotations

from typing import Sequence
from urllib.parse import urlencode

from reference_vm import disassemble
from reference_vm.errors import VMError
from reference_vm.result import STATUSES
from rtwo_vm.runtime import Runtime, UnknownRecord
from rtwo_vm.runtime.catalog import catalog, runtime_spec
from rtwo_vm.runtime.damaged import DamagedEntry, missing
from rtwo_vm.server.api.codes import bounds
from rtwo_vm.server.dashboard import queries
from rtwo_vm.server.dashboard.html import (
    Markup, damaged, definition, esc, is_damaged, join, link, not_found, number, page, table,
    tag,
)

WORD_MAX = (1 << 64) - 1


def _ctx_link(context_id: str | None) -> Markup:
    return esc(None) if context_id is None else link(f"/contexts/{context_id}", context_id)


def _state(value: str | None) -> Markup:
    return esc(None) if value is None else tag("span", value, class_=f"state state-{value}")


def context_table(rows: Sequence[queries.ContextRow | queries.DamagedContextRow]) -> Markup:
    """The contexts as a table, newest first (the overview shows the latest ten)."""
    body = []
    for r in rows:
        if isinstance(r, queries.DamagedContextRow):
            body.append(Markup(tag("tr", join([tag("td", r.context.id),
                                               tag("td", damaged(r.context), colspan=6)]),
                                   data_seq=r.seq, class_="damaged-row")))
            continue
        c = r.context
        body.append(Markup(tag("tr", join([
            tag("td", _ctx_link(c.context_id)), tag("td", c.contract_id),
            tag("td", c.depth), tag("td", _state(r.ended)), tag("td", _state(r.execution_status)),
            tag("td", r.error), tag("td", c.created_at)]), data_seq=r.seq, data_context=c.context_id)))
    head = join(tag("th", h) for h in ("context", "contract", "depth", "stage 9", "result",
                                       "error", "created"))
    empty = tag("tr", tag("td", "no contexts yet", colspan=7), class_="empty") if not body else ""
    return tag("table", Markup(f"<thead><tr>{head}</tr></thead>"
                               f"<tbody>{join(body)}{esc(empty)}</tbody>"), id="contexts")


def _word(text: str, name: str) -> str:
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text, 0)
    except ValueError:
        raise queries.BadFilter(f"{name} must be a number, got {text!r}") from None
    if not 0 <= value <= WORD_MAX:
        raise queries.BadFilter(f"{name} must be a 64-bit word")
    return hex(value)


def contexts(rt: Runtime, *, status: str | None, result: str | None, contract: str | None,
             before: str | None, limit: str | None):
    try:
        contract_id = _word(contract, "contract") if contract else None
        before_seq = int(_word(before, "before"), 16) if before else None
        size = int(_word(limit, "limit"), 16) if limit else bounds().default_page_size
        rows = queries.contexts_page(rt, before=before_seq, limit=size, stage=status or None,
                                     execution_status=result or None, contract=contract_id)
    except queries.BadFilter as err:
        return page("Contexts", tag("p", str(err), class_="error"), status_code=400)
    stage_options = join(tag("option", s, value=s, selected="selected" if s == status else None)
                         for s in ("",) + catalog().stages)
    result_options = join(tag("option", s, value=s, selected="selected" if s == result else None)
                          for s in ("",) + STATUSES)
    form = tag("form", Markup(
        tag("label", Markup(f"entered stage {tag('select', stage_options, name='status')}"))
        + tag("label", Markup(f"result {tag('select', result_options, name='result')}"))
        + tag("label", Markup("contract " + tag("input", "", name="contract", value=contract or "",
                                                 placeholder="0x100", size=20)))
        + tag("button", "filter", type="submit")), method="get", action="/contexts",
        class_="filters")
    size = max(1, min(size, bounds().max_page_size))
    more = ""
    if len(rows) == size and rows[-1].seq is not None:
        params = {k: v for k, v in (("status", status), ("result", result),
                                    ("contract", contract), ("limit", limit)) if v}
        params["before"] = str(rows[-1].seq)
        more = tag("p", link("/contexts?" + urlencode(params), "older contexts", id="older"))
    filtered = bool(status or result or contract or before)
    total, exact = rt.contexts.count_at_most(bounds().max_counted)
    shown = f"{total:,}" if exact else f"more than {total:,}"
    note = tag("p", Markup(f"{tag('span', shown, id='context-count')} contexts recorded; "
                           f"newest first, {size} a page"
                           + ("; new contexts appear here as they are recorded"
                              if not filtered else "")), class_="muted")
    status_line = tag("p", "live: connecting", id="live-status") if not filtered else ""
    body = join([note, form, status_line,
                 tag("div", context_table(rows), data_live="" if not filtered else None,
                     id="contexts-live"), more])
    return page("Contexts", body, script=True)


def _ordered_stages() -> list[tuple[int, list[str]]]:
    """The lifecycle's stages grouped by their order (lifecycle.toml): ten steps."""
    by_order: dict[int, list[str]] = {}
    for stage in sorted(runtime_spec().lifecycle["stage"], key=lambda s: s["order"]):
        by_order.setdefault(stage["order"], []).append(stage["name"])
    return sorted(by_order.items())


def _timeline(history: list) -> Markup:
    entered = {e.stage: e for e in history if not is_damaged(e)}
    steps = []
    for order, names in _ordered_stages():
        hit = next((entered[n] for n in names if n in entered), None)
        label = hit.stage if hit else " / ".join(names)
        steps.append(tag("li", Markup(
            tag("span", order, class_="order") + tag("span", label, class_="stage")
            + tag("time", hit.at if hit else "not entered", datetime=hit.at if hit else None)),
            class_="entered" if hit else "skipped", data_stage=label))
    steps += [tag("li", damaged(e), class_="damaged") for e in history if is_damaged(e)]
    return tag("ol", join(steps), class_="timeline", id="timeline")


def _part(entry, shown) -> Markup:
    """A part of a context's record: as ``shown`` shows it, or damaged."""
    return damaged(entry) if is_damaged(entry) else esc(shown(entry))


def context(rt: Runtime, context_id: str):
    try:
        ctx = rt.contexts.get_entry(context_id)
    except UnknownRecord:
        return not_found(f"no context {context_id!r}")
    history = rt.contexts.history_entries(context_id)
    sandbox = rt.sandboxes.context_entry(context_id)
    violations = rt.violations.for_context(context_id)
    children = rt.contexts.children_ids(context_id)
    result = rt.results.context_entry(context_id)
    parts = [tag("h2", "Lifecycle"), _timeline(history), tag("h2", "Context")]
    if is_damaged(ctx):
        parts.append(tag("p", damaged(ctx), id="context-damaged"))
    else:
        parts.append(definition([
            ("contract", ctx.contract_id), ("caller", ctx.caller_reference),
            ("transaction", ctx.transaction_reference), ("state before", ctx.state_reference),
            ("policy", ctx.resource_policy_id), ("VM", ctx.vm_id), ("depth", ctx.depth),
            ("parent", _ctx_link(ctx.parent_context_id)), ("status", ctx.status),
            ("created", ctx.created_at)]))
    parts.append(definition([
        ("result", _part(result, lambda r: Markup(
            f"{link(f'/results/{r.result_id}', r.result_id, id='result-link')}"
            f" {_state(r.execution_status)} {esc(r.error or '')}"))),
        ("accounting", link(f"/accounting/{context_id}", "usage against the sandbox's limits",
                            id="accounting-link")),
        ("sandbox", _part(sandbox, lambda b: f"{b.sandbox_id}: {b.isolation_level}, storage "
                                             f"{b.storage_access_policy}, {b.status}")),
    ]))
    if violations:
        parts += [tag("h2", "Violations"), table(
            ["violation", "type", "severity", "action", "code", "pc", "instruction", "status"],
            [(v.id, damaged(v), "", "", "", "", "", "") if isinstance(v, DamagedEntry) else
             (v.violation_id, v.violation_type, v.severity, v.action_taken, v.code, v.error_pc,
              v.instruction, v.status) for v in violations], id="violations")]
    if children:
        parts += [tag("h2", "Callees"), table(["context"], [(_ctx_link(c),) for c in children])]
    return page(f"Context {context_id}", join(parts))


def _code_section(rt: Runtime, address: str) -> Markup:
    row = rt.store.one("SELECT code FROM contracts WHERE address = ?", (address,))
    if row is None or not isinstance(row[0], bytes):
        return tag("p", f"no contract at {address}", class_="muted")
    try:
        text = disassemble(row[0])
    except VMError as err:
        text = f"the code does not disassemble: {err.code}"
    # It scrolls (pre.code): focusable and named, so that a keyboard can scroll it too.
    return tag("pre", text, class_="code", id="disassembly", tabindex="0", role="region",
               aria_label=f"disassembly of the code at {address}")


def _words(output: str | None) -> str:
    """The output as little-endian 64-bit words (how the examples return values)."""
    if not output or output == "0x":
        return "empty"
    data = bytes.fromhex(output[2:])
    words = [int.from_bytes(data[i:i + 8], "little") for i in range(0, len(data) - len(data) % 8, 8)]
    rest = len(data) % 8
    return (", ".join(str(w) for w in words) or "no whole word") + (
        f" (+{rest} bytes)" if rest else "")


def _refused(rt: Runtime, context_id: str) -> list[tuple[str, Markup]]:
    """The instruction policy binding refused, from the context's violation (10.5): the
    result's error pc is null then, as nothing ran."""
    found = [v for v in rt.violations.for_context(context_id)
             if not isinstance(v, DamagedEntry) and v.instruction is not None]
    return [("refused instruction", tag("code", f"{v.instruction} at offset {v.error_pc}",
                                         id="refused-instruction")) for v in found[:1]]


def result(rt: Runtime, result_id: str):
    try:
        res = rt.results.get_entry(result_id)
    except UnknownRecord:
        return not_found(f"no result {result_id!r}")
    if is_damaged(res):
        return page(f"Result {result_id}", tag("p", damaged(res), id="result-damaged"))
    try:
        ctx = rt.contexts.get_entry(res.context_id)
    except UnknownRecord:
        ctx = missing("contexts", res.context_id, f"the context of result {res.result_id}")
    facts = definition([
        ("context", _ctx_link(res.context_id)), ("status", _state(res.execution_status)),
        ("error", res.error), ("error pc", res.error_pc),
        *_refused(rt, res.context_id), ("created", res.created_at),
        ("digest", tag("code", res.digest)),
        ("output", tag("code", res.output if res.output is not None else "not reported for a callee",
                       id="output")),
        ("output words", _words(res.output)),
    ])
    changes = res.state_changes or ()
    events = res.emitted_events or ()
    parts = [facts,
             tag("h2", f"State changes \u2014 {len(changes)}"),
             table(["address", "key", "before", "after"],
                   [(c.get("address"), c.get("key"), c.get("before"), c.get("after"))
                    for c in changes], id="state-changes"),
             tag("h2", f"Events \u2014 {len(events)}"),
             table(["address", "topics", "data"],
                   [(e.get("address"), " ".join(str(t) for t in e.get("topics", [])), e.get("data"))
                    for e in events], id="events"),
             tag("h2", "Code")]
    parts += ([tag("p", damaged(ctx))] if is_damaged(ctx) else
              [tag("h3", f"of {ctx.contract_id}"), _code_section(rt, ctx.contract_id)])
    return page(f"Result {res.result_id}", join(parts))


def _bar(name: str, used: int | None, limit: int | None, unit: str) -> Markup:
    if used is None:
        meter = tag("span", "counted in the entry context's meters", class_="muted")
        figures = "\u2014"
    elif limit is None:
        meter = tag("span", "limit: what the caller had left (not recorded)", class_="muted")
        figures = f"{number(used)} {unit}"
    else:
        share = used / limit * 100 if limit else 100.0
        meter = tag("meter", f"{share:.4g}%", min=0, max=limit, value=min(used, limit),
                    title=f"{share:.4g}%", aria_label=f"{name} used of its limit")
        figures = f"{number(used)} of {number(limit)} {unit} ({share:.4g}%)"
    return tag("tr", join([tag("th", name), tag("td", meter), tag("td", figures)]),
               data_dimension=name)


def accounting(rt: Runtime, context_id: str):
    acc = rt.accounting.context_entry(context_id, required=False)
    if acc is None:
        return not_found(f"no accounting for context {context_id!r}")
    box = rt.sandboxes.context_entry(context_id)
    if is_damaged(acc) or is_damaged(box):
        return page(f"Accounting of {context_id}", join(
            [tag("p", damaged(e), class_="damaged-record") for e in (acc, box) if is_damaged(e)]
            + [tag("p", Markup(f"context {_ctx_link(context_id)}"))]))
    bars = tag("table", join([
        _bar("compute", acc.compute_units, box.compute_limit_reference, "units"),
        _bar("memory", acc.memory_units, box.memory_limit_reference, "pages"),
        _bar("storage", acc.storage_units, box.storage_limit_reference, "units")]),
        class_="bars", id="bars")
    facts = definition([
        ("context", _ctx_link(context_id)), ("accounting", acc.accounting_id),
        ("status", _state(acc.status)), ("fee", number(acc.fee)),
        ("storage reads", number(acc.storage_reads)), ("storage writes", number(acc.storage_writes)),
        ("new storage slots", number(acc.storage_new_slots)),
        ("sandbox", f"{box.sandbox_id}: {box.isolation_level}, {box.status}"),
    ])
    prices = runtime_spec().schedule["fee"]
    note = tag("p", "fee = compute \u00d7 {compute_price} + memory pages \u00d7 "
                    "{memory_page_price} + storage units \u00d7 {storage_unit_price} "
                    "(schedule.toml)".format(**prices), class_="muted")
    return page(f"Accounting of {context_id}", join([bars, facts, note]))
