"""``/``: the seed's page with real content.

The VM's identity and status from the VM registry, the truthful-data banner, readiness as
the readiness service computed it (each check with its evidence), the eight domain models
with their fields (read from the model dataclasses) and live record counts, and the eleven
services, each with a status derived from its records or evidence. No status word is
written here for a service: each follows from counts and facts by the rule in
:func:`service_statuses`, and reads "state: evidence" ("operational: 1,204 contexts, last at
...", "idle: no contexts yet").

The readiness report and the instruction registry are the server's shared caches
(rtwo_vm/server/background.py: ``app.state.readiness``, ``app.state.instructions``), the same
the API serves: computed in the background, never by a page (the readiness checks read every
context: a page costs the same at 100,000 contexts). So the page says how old each is
("computed 3 min ago") and offers "recompute now" (a form posting to /readiness/recompute,
held to the API's origin rule by access.py); every other figure is read when the page is
asked for. The VM and readiness sections, the counts and the service lines update on the
open page: /live says when VMs change or readiness is recomputed, and the page fetches
:func:`sections_json` (``/overview/sections``).
"""

from __future__ import annotations

import dataclasses
import inspect
import time

from rtwo_vm.runtime import MODELS, Runtime
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.damaged import DamagedEntry
from rtwo_vm.runtime.models import camel
from rtwo_vm.server.background import (
    INSTRUCTIONS_MAX_AGE, InstructionsCache, ReadinessCache, ReadinessView,
)
from rtwo_vm.server.dashboard import queries
from rtwo_vm.server.api.codes import bounds
from rtwo_vm.server.dashboard.html import (
    Markup, age, ago, counted, damaged, esc, is_damaged, join, link, number, page, plural,
    prose, table, tag,
)

# The seed's names of the eleven services, by the attribute of Runtime that implements each.
SERVICE_NAMES = {
    "vms": "Virtual Machine Registry", "contexts": "Execution Context Manager",
    "sandboxes": "Sandbox Manager", "accounting": "Resource Accounting Service",
    "policies": "Determinism Policy Service", "instructions": "Runtime Instruction Registry",
    "lifecycle": "Execution Lifecycle Service", "results": "Execution Result Service",
    "violations": "Sandbox Violation Service", "readiness": "VM Readiness Service",
    "events": "VM Event Publisher",
}

# The record service of each model (the runtime attribute whose count() counts its table).
MODEL_SERVICES = {
    "RTWOVirtualMachine": "vms", "RTWOExecutionContext": "contexts",
    "RTWOExecutionSandbox": "sandboxes", "RTWOResourceAccounting": "accounting",
    "RTWODeterminismPolicy": "policies", "RTWORuntimeInstruction": "instructions",
    "RTWOExecutionResult": "results", "RTWOSandboxViolation": "violations",
}



def bound() -> int:
    """The most records one figure of the page counts (api.toml ``bounds.max_counted``): up
    to it a figure is exact, past it the page says "more than" that."""
    return bounds().max_counted


def model_counts(rt: Runtime, instructions: InstructionsCache) -> dict[str, tuple[int, bool]]:
    """Records per model, (count, exact) counted up to :func:`bound`; instructions are
    computed, not stored: the registry's count."""
    counts: dict[str, tuple[int, bool]] = {}
    for model in MODELS:
        service = MODEL_SERVICES[model.__name__]
        counts[model.__name__] = ((len(instructions.view().records), True)
                                  if service == "instructions"
                                  else getattr(rt, service).count_at_most(bound()))
    return counts


def _breakdown(counts: dict[str, tuple[int, bool]], suffix: str = "") -> str:
    """``(2 active, 1 retired)``: counts by value, in parentheses ("more than" past the
    bound)."""
    return "(" + ", ".join(("" if exact else "more than ") + f"{n:,} {k}"
                           for k, (n, exact) in counts.items()) + suffix + ")"


def _total(counts: dict[str, tuple[int, bool]]) -> int:
    return sum(n for n, _ in counts.values())


def _readiness_status(view: ReadinessView) -> tuple[str, str]:
    report = view.report
    if report is None:
        if view.error is not None:
            return "degraded", f"the checks failed to run: {view.error}"
        return "computing", f"the readiness checks are running (since {view.computing_since})"
    checks: dict[str, tuple[int, bool]] = {}
    for check in report.checks:
        checks[check.status] = (checks.get(check.status, (0, True))[0] + 1, True)
    again = f"; being recomputed since {view.computing_since}" if view.computing_since else ""
    return (report.readiness.replace("_", " "),
            f"{plural(len(report.checks), 'check')} {_breakdown(checks)}, checked at "
            f"{report.checked_at} (computed {ago(view.age or 0.0)}){again}")


def _instructions_status(instructions: InstructionsCache) -> tuple[str, str]:
    view = instructions.view()
    if not view.records:
        return "degraded", f"no instructions computed: {view.evidence}"
    statuses: dict[str, tuple[int, bool]] = {}
    for ins in view.records:
        statuses[ins.status] = (statuses.get(ins.status, (0, True))[0] + 1, True)
    implemented = sum(1 for i in view.records if i.implemented)
    return ("operational" if implemented == len(view.records) else "degraded",
            f"{implemented:,} of {plural(len(view.records), 'instruction')} implemented "
            f"{_breakdown(statuses)}, computed at {view.computed_at} "
            f"({ago(time.monotonic() - view.finished)})")


def service_statuses(rt: Runtime, readiness: ReadinessCache,
                     instructions: InstructionsCache) -> dict[str, tuple[str, str]]:
    """For each service: (state, evidence). The state is ``operational`` when its records
    show it working, ``idle`` when it holds no records yet, ``degraded`` or the readiness
    verdict when the evidence shows a fault, ``computing`` while its evidence is being
    computed, ``recording`` for events kept with no sink to deliver them to."""
    out: dict[str, tuple[str, str]] = {}
    cap = bound()
    vms, exact = queries.grouped(rt, "vms", "status", cap)
    if not vms:
        out["vms"] = ("idle", "no VM registered yet (the first call registers the reference VM)")
    else:
        out["vms"] = ("operational" if vms.get("active", (0, True))[0] else "degraded",
                      f"{counted(_total(vms), exact, 'VM')} {_breakdown(vms)}")
    contexts, contexts_exact = rt.contexts.count_at_most(cap)
    last = queries.latest(rt, "contexts", "created_at", "seq")
    out["contexts"] = (("operational", f"{counted(contexts, contexts_exact, 'context')}, "
                                       f"last at {last}")
                       if contexts else ("idle", "no contexts yet"))
    boxes, exact = queries.grouped(rt, "sandboxes", "status", cap)
    out["sandboxes"] = (("operational", f"{counted(_total(boxes), exact, 'sandbox', 'sandboxes')} "
                                        f"{_breakdown(boxes)}") if boxes
                        else ("idle", "no sandboxes provisioned yet"))
    charged, exact = queries.charged(rt, cap)
    if not charged:
        out["accounting"] = ("idle", "no resource usage charged yet")
    elif exact:
        totals = rt.accounting.totals()
        bad = totals.get("damaged", [])
        out["accounting"] = ("degraded" if bad else "operational",
                             f"{plural(totals['contexts'], 'context')} charged, "
                             f"{number(totals['computeUnits'])} compute units, "
                             f"fee {number(totals['fee'])}" + (
                                 f"; damaged records left out: "
                                 + ", ".join(f"{d['id']} ({d['reason']})" for d in bad[:3])
                                 if bad else ""))
    else:
        out["accounting"] = ("operational", f"{counted(charged, False, 'context')} charged "
                                            "(their sums are not computed for a page: "
                                            "rtwo-vm accounting totals)")
    policies, exact = queries.grouped(rt, "policies", "status", cap)
    out["policies"] = (("operational" if policies.get("active", (0, True))[0] else "degraded",
                        f"{counted(_total(policies), exact, 'policy', 'policies')} "
                        f"{_breakdown(policies)}") if policies
                       else ("idle", "no policies yet (the first call creates the spec default)"))
    out["instructions"] = _instructions_status(instructions)
    if contexts:
        newest = queries.contexts_page(rt, before=None, limit=1, stage=None,
                                       execution_status=None, contract=None)
        latest = newest[0].context if newest else None
        if latest is None or isinstance(latest, DamagedEntry):
            path = ["damaged" if latest else "none"]
        else:
            path = ["damaged" if isinstance(e, DamagedEntry) else e.stage
                    for e in rt.contexts.history_entries(latest.context_id)]
        out["lifecycle"] = ("operational", f"{counted(contexts, contexts_exact, 'context')} "
                                           f"through the lifecycle; the latest: {' > '.join(path)}")
    else:
        out["lifecycle"] = ("idle", "no executions yet")
    results, exact = queries.grouped(rt, "results", "execution_status", cap)
    out["results"] = (("operational", f"{counted(_total(results), exact, 'result')} "
                                      f"{_breakdown(results)}") if results
                      else ("idle", "no results recorded yet"))
    violations, exact = queries.grouped(rt, "violations", "severity", cap)
    out["violations"] = (("operational", f"{counted(_total(violations), exact, 'violation')} "
                                         f"{_breakdown(violations, ' severity')}") if violations
                         else ("idle", "no violations recorded yet"))
    out["readiness"] = _readiness_status(readiness.view())
    out["events"] = _publisher_status(rt)
    return out


def _publisher_status(rt: Runtime) -> tuple[str, str]:
    last_id = queries.last_event_id(rt)
    if not last_id:
        return "idle", "no events yet"
    rows = rt.events.sink_rows()
    dead = rt.store.single("SELECT count(*) FROM delivery_failures WHERE dead_at IS NOT NULL")[0]
    if not rows:
        return "recording", (f"outbox up to event #{last_id:,}; no sink registered, so nothing "
                             "is delivered")
    pending = rt.events.undelivered_counts()
    broken = [r for r in rows if is_damaged(r.sink)]
    unconfirmed = [r for r in rows if not r.confirmed and not is_damaged(r.sink)]
    detail = (f"outbox up to event #{last_id:,}; {plural(len(rows), 'sink')}: "
              + ", ".join(f"{name} {n:,} undelivered" for name, n in pending.items())
              + f"; {plural(dead, 'dead event')}")
    if unconfirmed:
        detail += (f"; {plural(len(unconfirmed), 'sink')} not confirmed on this machine, "
                   f"skipped ({', '.join(r.name for r in unconfirmed[:3])}: "
                   "rtwo-vm events sink-confirm NAME)")
    if broken:
        detail += f"; {plural(len(broken), 'damaged sink row')} ({broken[0].name})"
    return ("degraded" if dead or broken or unconfirmed else "operational"), detail


def _section(name: str, content: Markup) -> Markup:
    """A card the live script replaces whole with the server's newer rendering."""
    return tag("section", content, class_="card", id=f"{name}-section", data_section=name)


def _vm_section(rt: Runtime) -> Markup:
    vms = rt.vms.list(limit=20)
    if not vms:
        return _section("vm", Markup(tag("h2", "Virtual machine") + tag(
            "p", "no VM registered yet", class_="muted", id="vm-none")))
    rows = [(vm.id, damaged(vm), "", "", "", "", "") if is_damaged(vm) else
            (vm.vm_id, vm.vm_name, vm.vm_version, ", ".join(vm.runtime_compatibility),
             vm.execution_mode, tag("span", vm.status, class_=f"state state-{vm.status}"),
             vm.created_at) for vm in vms]
    return _section("vm", Markup(tag("h2", "Virtual machine") + table(
        ["VM id", "name", "version", "spec versions", "execution mode", "status", "created"],
        rows, id="vms")))


def evidence_from(where: dict[str, str | None]) -> Markup:
    """Where readiness reads its evidence (ReadinessCache.evidence_from, the API's
    ``evidenceFrom``)."""
    if where.get("dataDir") is None:
        text = ("evidence: no data directory given to the server (rtwo-vm serve --data-dir), "
                "so no proofs report is read")
    else:
        text = (f"evidence read from the data directory {where['dataDir']} (rtwo-vm serve "
                f"--data-dir, $RTWO_VM_DATA); proofs report {where['proofsReport']}")
    return tag("p", text, class_="muted", id="evidence-from")


def _readiness_section(readiness: ReadinessCache) -> Markup:
    view = readiness.view()
    since = view.computing_since
    parts = [tag("h2", "Readiness"), evidence_from(readiness.evidence_from)]
    if view.error is not None:
        parts.append(tag("p", f"the last computation failed: {view.error}", class_="error"))
    if view.report is None:
        if since is not None:
            parts.append(tag("p", f"the readiness checks are running (since {since}); this "
                                  "section shows them when they finish", class_="muted",
                             id="readiness-pending"))
        return _section("readiness", join(parts))
    if since is not None:
        parts.append(tag("p", f"being recomputed since {since}", class_="muted",
                         id="readiness-recomputing"))
    report = view.report
    rows = [(c.name, tag("span", c.status, class_=f"state state-{c.status}"),
             f"{c.seconds:.2f} s", c.evidence) for c in report.checks]
    took = "" if view.seconds is None else f" in {view.seconds:.2f} s"
    parts.append(tag("p", Markup(
        f"readiness {tag('strong', report.readiness, id='readiness')}, checked at "
        f"{esc(report.checked_at)}: {age(view.age or 0.0, view.computed_at)}{took}, in the "
        f"background (not when this page was asked for); again when a reader finds it older "
        f"than {plural(int(view.max_age), 'second')}, or now:")))
    parts.append(_recompute_form())
    parts.append(table(["check", "status", "took", "evidence"], rows, id="checks"))
    return _section("readiness", join(parts))


def _recompute_form() -> Markup:
    """The "recompute now" button: readiness and the instruction statuses, computed again
    (in the background; the live script shows the new report when it is done)."""
    return tag("form", tag("button", "Recompute now", type="submit", id="recompute"),
               method="post", action="/readiness/recompute", class_="recompute")


def _field_names(names: set[str]):
    """A docstring literal naming a field is shown as the field is: in camel case."""
    def literal(word: str) -> str:
        return camel(word) if word in names else word
    return literal


def _models_section(counts: dict[str, tuple[int, bool]]) -> Markup:
    cards = []
    for model in MODELS:
        name = model.__name__
        doc = (inspect.getdoc(model) or "").split("\n\n")[0]
        names = {f.name for f in dataclasses.fields(model)}
        fields = join(tag("code", camel(f.name) + ("?" if f.name in model.OPTIONAL else ""))
                      for f in dataclasses.fields(model))
        count, exact = counts[name]
        shown = (f"{count:,} computed from the spec table"
                 if MODEL_SERVICES[name] == "instructions" else counted(count, exact, "record"))
        cards.append(tag("div", Markup(
            tag("h3", name) + tag("p", shown, class_="count", data_model=name)
            + tag("p", prose(doc, _field_names(names)), class_="muted")
            + tag("p", fields, class_="fields")), class_="model"))
    return tag("section", Markup(tag("h2", f"Domain models \u2014 {len(MODELS)}")
                                 + tag("div", join(cards), class_="models")), class_="card")


def _services_section(statuses: dict[str, tuple[str, str]]) -> Markup:
    rows = []
    for attr in Runtime.SERVICES:
        state, evidence = statuses[attr]
        rows.append((SERVICE_NAMES[attr], Markup(
            tag("span", state, class_=f"state state-{state.replace(' ', '_')}", data_service=attr)
            + ": " + tag("span", evidence, data_evidence=attr))))
    return tag("section", Markup(tag("h2", f"Service registry \u2014 {len(Runtime.SERVICES)} services")
                                 + table(["service", "status: evidence"], rows, id="services")),
               class_="card")


def render(rt: Runtime, readiness: ReadinessCache, instructions: InstructionsCache):
    counts = model_counts(rt, instructions)
    statuses = service_statuses(rt, readiness, instructions)
    stages = catalog().stages
    banner = tag("p", Markup(
        "\u26a0 Truthful Data Policy Enforced \u2014 every figure on these pages is read from "
        f"the runtime's records in {tag('code', rt.store.path)} when the page is asked for, "
        "except readiness (computed from evidence in the background) and the instruction "
        f"statuses (kept up to {INSTRUCTIONS_MAX_AGE:.0f} s): each says how old it is "
        "(Readiness: recompute now); nothing is a placeholder"), class_="banner", role="note")
    recent = queries.contexts_page(rt, before=None, limit=10, stage=None, execution_status=None,
                                   contract=None)
    from rtwo_vm.server.dashboard.executions import context_table
    latest = tag("section", Markup(
        tag("h2", Markup(f"Latest contexts {link('/contexts', 'all contexts')}"))
        + tag("p", "live: connecting", id="live-status")
        + tag("div", context_table(recent), data_live="", data_keep=10, id="contexts-live")),
        class_="card")
    intro = tag("p", f"Virtual Machine & Execution Sandbox: the runtime of spec chapter 10, "
                     f"{len(Runtime.SERVICES)} services over one database; a context passes "
                     f"{' > '.join(stages)}", class_="muted")
    body = join([banner, intro, _vm_section(rt), _readiness_section(readiness), latest,
                 _models_section(counts), _services_section(statuses)])
    return page("RTWO VM \u2014 Virtual Machine & Execution Sandbox", body, script=True)


def summary_json(rt: Runtime, readiness: ReadinessCache, instructions: InstructionsCache) -> dict:
    """What the live script updates on the overview: record counts and service statuses."""
    counts = model_counts(rt, instructions)
    return {"models": {name: n for name, (n, _) in counts.items()},
            "modelsExact": {name: exact for name, (_, exact) in counts.items()},
            "services": {k: {"state": state, "evidence": evidence} for k, (state, evidence)
                         in service_statuses(rt, readiness, instructions).items()}}


def sections_json(rt: Runtime, readiness: ReadinessCache, instructions: InstructionsCache) -> dict:
    """``/overview/sections``: the VM and readiness sections as the page renders them (HTML,
    every value escaped) and the summary, for the live script to put on the open page."""
    return {"sections": {"vm": str(_vm_section(rt)), "readiness": str(_readiness_section(readiness))},
            "readinessVersion": readiness.version,
            "summary": summary_json(rt, readiness, instructions)}
