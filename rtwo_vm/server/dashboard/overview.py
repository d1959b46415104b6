"""``/``: the seed's page with real content.

The VM's identity and status from the VM registry, the truthful-data banner, readiness as
the readiness service computed it (each check with its evidence), the eight domain models
with their fields (read from the model dataclasses) and live record counts, and the eleven
services, each with a status derived from its records or evidence. No status word is
written here for a service: each follows from counts and facts by the rule in
:func:`service_statuses`.
"""

from __future__ import annotations

import dataclasses
import inspect

from rtwo_vm.runtime import MODELS, Runtime
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.models import camel
from rtwo_vm.server.dashboard import queries
from rtwo_vm.server.dashboard.background import Background
from rtwo_vm.server.dashboard.html import (
    Markup, esc, join, link, number, page, plural, table, tag,
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


def model_counts(rt: Runtime, background: Background) -> dict[str, int | None]:
    """Records per model; instructions are computed, not stored: the registry's count."""
    counts: dict[str, int | None] = {}
    for model in MODELS:
        service = MODEL_SERVICES[model.__name__]
        if service == "instructions":
            snap = background.snapshot
            counts[model.__name__] = len(snap.instructions) if snap else None
        else:
            counts[model.__name__] = getattr(rt, service).count()
    return counts


def _breakdown(counts: dict[str, int]) -> str:
    return ", ".join(f"{n:,} {k}" for k, n in counts.items())


def service_statuses(rt: Runtime, background: Background) -> dict[str, tuple[str, str]]:
    """For each service: (state, evidence). The state is ``operational`` when its records
    show it working, ``idle`` when it holds no records yet, ``degraded`` or ``not ready``
    when the evidence shows a fault, ``computing`` while its evidence is being computed."""
    out: dict[str, tuple[str, str]] = {}
    vms = queries.grouped(rt, "vms", "status")
    if not vms:
        out["vms"] = ("idle", "no VM registered yet (the first call registers the reference VM)")
    else:
        state = "operational" if vms.get("active") else "degraded"
        out["vms"] = (state, f"{plural(sum(vms.values()), 'VM')}: {_breakdown(vms)}")
    contexts = rt.contexts.count()
    last = queries.latest(rt, "contexts", "created_at", "seq")
    out["contexts"] = (("operational", f"{plural(contexts, 'context')}, last at {last}")
                       if contexts else ("idle", "no contexts yet"))
    boxes = queries.grouped(rt, "sandboxes", "status")
    out["sandboxes"] = (("operational", f"{plural(sum(boxes.values()), 'sandbox', 'sandboxes')}: "
                                        f"{_breakdown(boxes)}") if boxes
                        else ("idle", "no sandboxes provisioned yet"))
    totals = rt.accounting.totals()
    out["accounting"] = (("operational", f"{plural(totals['contexts'], 'context')} charged: "
                                         f"{number(totals['computeUnits'])} compute units, "
                                         f"fee {number(totals['fee'])}") if totals["contexts"]
                         else ("idle", "no resource usage charged yet"))
    policies = queries.grouped(rt, "policies", "status")
    out["policies"] = (("operational" if policies.get("active") else "degraded",
                        f"{plural(sum(policies.values()), 'policy', 'policies')}: "
                        f"{_breakdown(policies)}") if policies
                       else ("idle", "no policies yet (the first call creates the spec default)"))
    snap = background.snapshot
    if snap is None:
        out["instructions"] = ("computing", "the registry's statuses are being computed")
        out["readiness"] = ("computing", "the readiness checks are running")
    else:
        statuses: dict[str, int] = {}
        for ins in snap.instructions:
            statuses[ins.status] = statuses.get(ins.status, 0) + 1
        implemented = sum(1 for i in snap.instructions if i.implemented)
        out["instructions"] = (
            "operational" if snap.instructions and implemented == len(snap.instructions)
            else "degraded",
            f"{implemented}/{len(snap.instructions)} implemented; statuses: "
            f"{_breakdown(statuses) or 'none'} (computed {snap.computed_at})")
        if snap.readiness is None:
            out["readiness"] = ("degraded", f"the checks failed to run: {snap.readiness_error}")
        else:
            report = snap.readiness
            checks: dict[str, int] = {}
            for check in report.checks:
                checks[check.status] = checks.get(check.status, 0) + 1
            out["readiness"] = (report.readiness.replace("_", " "),
                                f"{_breakdown(checks)} (checked {report.checked_at})")
    if contexts:
        newest = queries.contexts_page(rt, before=None, limit=1, stage=None,
                                       execution_status=None, contract=None)
        path = [e.stage for e in rt.contexts.history(newest[0].context.context_id)] if newest else []
        out["lifecycle"] = ("operational", f"{plural(contexts, 'context')} through the lifecycle; "
                                           f"the latest: {' > '.join(path)}")
    else:
        out["lifecycle"] = ("idle", "no executions yet")
    results = queries.grouped(rt, "results", "execution_status")
    out["results"] = (("operational", f"{plural(sum(results.values()), 'result')}: "
                                      f"{_breakdown(results)}") if results
                      else ("idle", "no results recorded yet"))
    violations = queries.grouped(rt, "violations", "severity")
    out["violations"] = (("operational", f"{plural(sum(violations.values()), 'violation')}: "
                                         f"{_breakdown(violations)} severity") if violations
                         else ("idle", "no violations recorded"))
    out["events"] = _publisher_status(rt)
    return out


def _publisher_status(rt: Runtime) -> tuple[str, str]:
    last_id = queries.last_event_id(rt)
    if not last_id:
        return "idle", "no events yet"
    sinks = rt.events.sinks()
    dead = rt.store.single("SELECT count(*) FROM delivery_failures WHERE dead_at IS NOT NULL")[0]
    if not sinks:
        return "recording", (f"outbox up to event #{last_id:,}; no sink registered, so nothing "
                             "is delivered")
    pending = rt.events.undelivered_counts()
    detail = (f"outbox up to event #{last_id:,}; {plural(len(sinks), 'sink')}: "
              + ", ".join(f"{name} {n:,} undelivered" for name, n in pending.items())
              + f"; {plural(dead, 'dead event')}")
    return ("degraded" if dead else "operational"), detail


def _vm_section(rt: Runtime) -> Markup:
    vms = rt.vms.list(limit=20)
    if not vms:
        return tag("section", Markup(f"{tag('h2', 'Virtual machine')}"
                                     f"{tag('p', 'no VM registered yet', class_='muted', id='vm-none')}"),
                   class_="card")
    rows = [(vm.vm_id, vm.vm_name, vm.vm_version, ", ".join(vm.runtime_compatibility),
             vm.execution_mode, tag("span", vm.status, class_=f"state state-{vm.status}"),
             vm.created_at) for vm in vms]
    return tag("section", Markup(tag("h2", "Virtual machine") + table(
        ["VM id", "name", "version", "spec versions", "execution mode", "status", "created"],
        rows, id="vms")), class_="card")


def _readiness_section(background: Background) -> Markup:
    snap = background.snapshot
    since = background.computing_since
    note = tag("p", f"being recomputed since {since}", class_="muted") if since else Markup("")
    if snap is None:
        return tag("section", Markup(tag("h2", "Readiness")
                                     + tag("p", "the readiness checks are running; reload to "
                                                "see them", class_="muted", id="readiness-pending")),
                   class_="card")
    if snap.readiness is None:
        body = tag("p", f"the checks failed to run: {snap.readiness_error}", class_="error")
    else:
        report = snap.readiness
        rows = [(c.name, tag("span", c.status, class_=f"state state-{c.status}"),
                 f"{c.seconds:.2f} s", c.evidence) for c in report.checks]
        body = Markup(tag("p", Markup(f"readiness {tag('strong', report.readiness, id='readiness')}"
                                      f", checked at {esc(report.checked_at)}; computed in the "
                                      f"background in {snap.seconds:.2f} s, recomputed when a "
                                      f"page finds it older than 5 minutes"))
                      + table(["check", "status", "took", "evidence"], rows, id="checks"))
    return tag("section", Markup(tag("h2", "Readiness") + note + body), class_="card")


def _models_section(counts: dict[str, int | None]) -> Markup:
    cards = []
    for model in MODELS:
        name = model.__name__
        doc = inspect.getdoc(model) or ""
        fields = join(tag("code", camel(f.name) + ("?" if f.name in model.OPTIONAL else ""))
                      for f in dataclasses.fields(model))
        count = counts[name]
        shown = "computing" if count is None else (
            f"{count:,} computed from the spec table" if MODEL_SERVICES[name] == "instructions"
            else plural(count, "record"))
        cards.append(tag("div", Markup(
            tag("h3", name) + tag("p", shown, class_="count", data_model=name)
            + tag("p", doc.split("\n\n")[0], class_="muted") + tag("p", fields, class_="fields")),
            class_="model"))
    return tag("section", Markup(tag("h2", f"Domain models \u2014 {len(MODELS)}")
                                 + tag("div", join(cards), class_="models")), class_="card")


def _services_section(statuses: dict[str, tuple[str, str]]) -> Markup:
    rows = []
    for attr in Runtime.SERVICES:
        state, evidence = statuses[attr]
        rows.append((SERVICE_NAMES[attr],
                     tag("span", state, class_=f"state state-{state.replace(' ', '_')}",
                         data_service=attr),
                     tag("span", evidence, data_evidence=attr)))
    return tag("section", Markup(tag("h2", f"Service registry \u2014 {len(Runtime.SERVICES)} services")
                                 + table(["service", "status", "evidence"], rows, id="services")),
               class_="card")


def render(rt: Runtime, background: Background):
    background.refresh()
    counts = model_counts(rt, background)
    statuses = service_statuses(rt, background)
    stages = catalog().stages
    banner = tag("p", Markup(
        "\u26a0 Truthful Data Policy Enforced \u2014 every figure on these pages is read from "
        f"the runtime's records in {tag('code', rt.store.path)} or computed from evidence "
        "when the page is asked for; nothing is a placeholder"), class_="banner", role="note")
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
    body = join([banner, intro, _vm_section(rt), _readiness_section(background), latest,
                 _models_section(counts), _services_section(statuses)])
    return page("RTWO VM \u2014 Virtual Machine & Execution Sandbox", body, script=True)


def summary_json(rt: Runtime, background: Background) -> dict:
    """What the live script updates on the overview: record counts and service statuses."""
    return {"models": model_counts(rt, background),
            "services": {k: {"state": state, "evidence": evidence}
                         for k, (state, evidence) in service_statuses(rt, background).items()}}
