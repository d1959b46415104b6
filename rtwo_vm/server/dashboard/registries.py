"""``/violations`` (by type and severity), ``/instructions`` (the registry, sortable) and
``/events`` (the outbox with its delivery state per sink, and the dead events)."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from rtwo_vm.runtime import InvalidInput, Runtime
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.damaged import DamagedEntry
from rtwo_vm.runtime.publisher import confirm_hint
from rtwo_vm.runtime.sinks import redact
from rtwo_vm.server.background import InstructionsCache
from rtwo_vm.server.dashboard import queries
from rtwo_vm.server.dashboard.html import (
    Markup, ago, damaged, esc, is_damaged, join, link, page, plural, table, tag,
)

VIOLATIONS_SHOWN = 100
EVENTS_PAGE = 50


def _ctx(context_id: str) -> Markup:
    return link(f"/contexts/{context_id}", context_id)


def violations(rt: Runtime, violation_type: str | None):
    counts = {(r[0], r[1]): int(r[2]) for r in rt.store.all(
        "SELECT violation_type, severity, count(*) FROM violations "
        "GROUP BY violation_type, severity")}
    cat = catalog()
    by_type = [(link(f"/violations?{urlencode({'type': name})}", name), vt.severity,
                counts.get((name, vt.severity), 0), ", ".join(vt.codes), vt.entry_action,
                vt.callee_action, vt.meaning) for name, vt in cat.violation_types.items()]
    severities: dict[str, int] = {s: 0 for s in cat.values("severity")}
    for (_, severity), n in counts.items():
        severities[severity] = severities.get(severity, 0) + n
    try:
        shown = _latest(rt, violation_type or None)
    except InvalidInput as err:
        return page("Violations", tag("p", str(err), class_="error"), status_code=400)
    title = f"latest {VIOLATIONS_SHOWN}" + (f" of type {violation_type}" if violation_type else "")
    parts = [
        tag("p", f"{plural(sum(counts.values()), 'violation')} recorded", class_="muted"),
        tag("h2", "By severity"),
        table(["severity", "violations"], list(severities.items()), id="by-severity"),
        tag("h2", "By type (sandbox.toml)"),
        table(["type", "severity", "violations", "codes", "entry action", "callee action",
               "meaning"], by_type, id="by-type"),
        tag("h2", title.capitalize()),
        table(["violation", "context", "type", "severity", "action", "code", "pc",
               "instruction", "status", "created"],
              [(v.id, damaged(v), "", "", "", "", "", "", "", "") if is_damaged(v) else
               (v.violation_id, _ctx(v.context_id), v.violation_type, v.severity, v.action_taken,
                v.code, v.error_pc, v.instruction, v.status, v.created_at) for v in shown],
              id="violations"),
    ]
    return page("Violations", join(parts))


def _latest(rt: Runtime, violation_type: str | None) -> list:
    if violation_type is not None and violation_type not in catalog().violation_types:
        raise InvalidInput(f"unknown violation type {violation_type!r}; use one of "
                           f"{', '.join(catalog().violation_types)}")
    sql = "SELECT * FROM violations"
    args: tuple = ()
    if violation_type is not None:
        sql += " WHERE violation_type = ?"
        args = (violation_type,)
    sql += " ORDER BY rowid DESC LIMIT ?"
    return [rt.violations.entry(r) for r in rt.store.all(sql, args + (VIOLATIONS_SHOWN,))]


def instructions(cache: InstructionsCache):
    view = cache.view()
    records, evidence, when = view.records, view.evidence, view.computed_at
    head = join(tag("th", tag("button", label, type="button"), data_sort=kind)
                for label, kind in (("opcode", "number"), ("mnemonic", "text"), ("type", "text"),
                                    ("base cost", "number"), ("cost rule", "text"),
                                    ("status", "text"), ("implemented", "text"),
                                    ("SMT model", "text"), ("vectors", "number")))
    rows = []
    for ins in records:
        cost = ins.resource_cost_reference
        cells = [(f"0x{ins.opcode:02x}", ins.opcode), (ins.instruction_id, None),
                 (ins.instruction_type, None), (cost.get("baseCost"), cost.get("baseCost")),
                 (cost.get("costRule"), None), (ins.status, None),
                 ("yes" if ins.implemented else "no", None),
                 ("not available" if ins.smt_semantics is None
                  else "yes" if ins.smt_semantics else "no", None),
                 ("not available" if ins.conformance_vectors is None else ins.conformance_vectors,
                  ins.conformance_vectors)]
        rows.append(tag("tr", join(tag("td", text, data_value=value) for text, value in cells)))
    sortable = tag("table", Markup(f"<thead><tr>{head}</tr></thead><tbody>{join(rows)}</tbody>"),
                   class_="sortable", id="instructions")
    facts = tag("ul", join(tag("li", f"{k}: {v}") for k, v in evidence.items()))
    note = tag("p", f"{len(records)} instructions of the spec table; statuses computed at {when} "
                    f"({ago(time.monotonic() - view.finished)}, kept {cache.max_age:.0f} s) "
                    "from what exists for each (handlers, SMT models, conformance vectors); "
                    "click a column to sort", class_="muted")
    return page("Runtime instruction registry", join([note, facts, sortable]), script=True)


def _delivery_cell(event_id: int, sink: str, start_after: int, delivered: dict,
                   failures: dict) -> Markup:
    if event_id <= start_after:
        return tag("span", "before the sink was added", class_="muted")
    if (sink, event_id) in delivered:
        return tag("span", f"delivered {delivered[(sink, event_id)]}", class_="state state-delivered")
    if (sink, event_id) in failures:
        attempts, error, dead_at = failures[(sink, event_id)]
        word = f"dead since {dead_at}" if dead_at else f"retrying after {attempts} attempts"
        return tag("span", f"{word}: {redact(error)}",
                   class_="state state-dead" if dead_at else "state state-retrying")
    return tag("span", "pending", class_="state state-pending")


def events(rt: Runtime, before: str | None, live_streams: int):
    try:
        before_id = int(before) if before else None
        if before_id is not None and not 0 <= before_id < 1 << 63:
            raise ValueError
    except ValueError:
        return page("Events", tag("p", f"before must be an event id, got {before!r}",
                                  class_="error"), status_code=400)
    rows_of_sinks = rt.events.sink_rows()
    shown = {s["name"]: s for s in rt.events.sinks() if not s.get("damaged")}
    pending = rt.events.undelivered_counts()
    sink_rows: list[tuple] = []
    sinks = []
    for r in rows_of_sinks:
        if isinstance(r.sink, DamagedEntry):
            sink_rows.append((r.name, damaged(r.sink), "", "", "", "", ""))
            continue
        doc = shown.get(r.name, {})
        state = (tag("span", "confirmed", class_="state state-confirmed") if r.confirmed else
                 tag("span", Markup(f"not confirmed on this machine: skipped "
                                    f"({esc(confirm_hint(r.name))})"),
                     class_="state state-unconfirmed"))
        sink_rows.append((r.name, doc.get("kind"), doc.get("target"), state,
                          doc.get("createdAt"), r.start_after, pending.get(r.name)))
        sinks.append((r.sink, r.start_after))
    dead = rt.events.dead()
    page_events = queries.events_page(rt, before_id, EVENTS_PAGE)
    ids = [e.event_id for e in page_events]
    delivered = queries.delivered(rt, ids)
    failures = queries.failures_for(rt, ids)
    rows = []
    for e in page_events:
        if e.type == "damaged":   # queries.events_page: a row that does not decode
            entry = DamagedEntry("outbox", str(e.event_id), str(e.payload.get("reason")))
            rows.append([e.event_id, damaged(entry), "", ""] + ["" for _ in sinks])
            continue
        stream = _ctx(e.stream) if e.stream.startswith("ctx_") else esc(e.stream)
        cells = [e.event_id, e.type, stream, e.created_at]
        cells += [_delivery_cell(e.event_id, sink.name, start, delivered, failures)
                  for sink, start in sinks]
        rows.append(cells)
    more = ""
    if len(page_events) == EVENTS_PAGE:
        more = tag("p", link(f"/events?before={page_events[-1].event_id}", "older events"))
    parts = [
        tag("p", Markup(f"outbox up to event #{queries.last_event_id(rt):,}; newest first; "
                        f"{tag('span', live_streams, id='live-streams')} live dashboard "
                        "streams open"), class_="muted"),
        tag("h2", f"Sinks \u2014 {len(rows_of_sinks)}"),
        table(["sink", "kind", "target", "confirmed", "added", "starts after event",
               "undelivered"], sink_rows, id="sinks") if rows_of_sinks else
        tag("p", "no sink registered: events are recorded in the outbox and delivered to none "
                 "(rtwo-vm events sink-add)", class_="muted", id="no-sinks"),
        tag("h2", f"Dead events \u2014 {len(dead)}"),
        table(["sink", "event", "stream", "type", "attempts", "reason", "dead since",
               "held back"],
              [(d["id"], damaged(DamagedEntry(d["table"], d["id"], d["reason"])), "", "", "",
                "", "", "") if d.get("damaged") else
               (d["sink"], d["eventId"], d["stream"], d["type"], d["attempts"], d["reason"],
                d["deadAt"], d["heldBack"]) for d in dead], id="dead"),
        tag("h2", "Outbox"),
        table(["event", "type", "stream", "created"] + [redact(s.name) for s, _ in sinks], rows,
              id="outbox"),
        more,
    ]
    return page("Events", join(parts))
