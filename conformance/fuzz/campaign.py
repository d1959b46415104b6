"""A campaign: epochs of requests farmed out to workers, merged centrally, saved to resume.

Requests are numbered; request i of campaign seed s is ``generate(s, i, pool)`` where the pool
is the one at the start of i's epoch. An epoch is EPOCH requests cut into tasks of TASK, both
fixed, so the pool each request sees — and therefore the request itself, its verdict and which
divergent request of a class gets shrunk — is the same for any number of workers, local or on
Ray. At the end of an epoch the coordinator merges the workers' new cells, arcs and inputs in
request order, sends the additions to every worker, records buckets and writes DIR/state.json
(``--resume DIR`` continues from it) and DIR/findings/.

``--runs N`` ends the campaign after N requests (a reproducible verdict); ``--seconds S`` is a
wall-clock bound, checked between epochs, and reported as such.

The per-request wall-clock limit (``--timeout``) is a safety net, not a verdict: how long a
request takes depends on the machine's load. A request that meets it runs once more on a fresh
process with RETRY_FACTOR times the limit (its answer then is judged like any other); one that
meets that too goes to the safety-net list (DIR/safety-net/, a corpus directory to reproduce it
with ``conformance run --dir``), which is reported apart, never counted as a divergence, never
shrunk, never stops a ``--stop-on-finding`` campaign and is refused by ``vectors promote``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from conformance.corpus.vector import BASE
from conformance.fuzz.backend import BackendError, make_backend
from conformance.fuzz.findings import FINDINGS, SAFETY_NET, bucket_text, check_outputs, write_findings
from conformance.fuzz.pool import Pool, corpus_seeds, fits
from conformance.fuzz.program import FuzzInput
from conformance.fuzz.unsupported import blocking_key, element, summary, summary_text
from conformance.fuzz.state import (
    FINDING_BYTES, FINDINGS_KEPT, GROWTH_KEEP, HELLO_BYTES, INTERNAL_BYTES, INTERNAL_KEEP, MAX_BUCKETS,
    MAX_CELLS, MAX_COMMAND, MAX_NAME, SAFETY_NET_KEEP, STATE_VERSION, StateError, load_state, save_state,
)

__all__ = ["CapabilityMissing", "Options", "StateError", "load_state", "report_json", "report_text", "run_campaign", "crashed_now"]

EPOCH = 256
TASK = 32
SAVE_SECONDS = 5.0            # the state is written at most this often (and at the end)


@dataclass
class Options:
    impls: list[str]
    out: Path
    seed: int = 1
    seconds: float | None = None
    runs: int | None = None
    workers: int = 1
    ray: str | None = None
    timeout: float = 10.0
    resume: bool = False
    stop_on_finding: bool = False
    worker_config: dict[str, Any] = field(default_factory=dict)
    factory: Callable | None = None     # the workers' factory (default conformance.fuzz.worker.make_worker)
    state: dict[str, Any] | None = None  # the checked state to resume (else read from out)
    spec_version: str = BASE            # the version every request runs under (rtwo-vm fuzz --spec-version)
    sequences: int = 0                  # sequence mode: scenarios of 2..K steps (rtwo-vm fuzz --sequences K)


class CapabilityMissing(Exception):
    """Sequence mode against an implementation whose hello does not announce "scenario"."""


def _new_state(options: Options) -> dict[str, Any]:
    from conformance.constants import corpus_dir
    from conformance.corpus import store
    from conformance.fuzz.feedback import corpus_cells
    vectors = store.load(corpus_dir(options.spec_version))
    seeds = corpus_seeds(vectors, options.spec_version)
    return {"version": STATE_VERSION, "spec_version": options.spec_version, "seed": options.seed,
            "impls": list(options.impls),
            "next_index": 0, "pool": [s.to_json() for s in seeds], "pool_added": 0,
            "corpus_cells": len(corpus_cells(vectors)), "cells": sorted(corpus_cells(vectors)), "arcs": [],
            "classes": [], "buckets": {}, "executions": 0, "seconds": 0.0, "outcomes": {}, "workers": {},
            "growth": [], "divergent": 0, "sessions": 0, "safety_net": [], "safety_net_count": 0,
            "internal_errors": [], "skip": [], **({"sequences": options.sequences} if options.sequences else {})}


def _size(value: Any) -> int:
    return len(json.dumps(value))


def _merge(state: dict[str, Any], pool: Pool, cells: set, arcs: set, results: list[dict], elapsed: float) -> dict:
    """Fold one epoch's results in request order; the additions every worker must apply."""
    added_pool, added_cells, added_arcs, added_classes, added_net = [], [], [], [], []
    news = sorted((n for r in results for n in r["new"]), key=lambda n: n[0])
    for _idx, c, a, inp in news:
        # at most MAX_CELLS of each are recorded (a name longer than MAX_NAME is not one we make)
        fresh_c = [x for x in c if x not in cells and len(x) <= MAX_NAME][:MAX_CELLS - len(cells)]
        fresh_a = [x for x in a if x not in arcs and len(x) <= MAX_NAME][:MAX_CELLS - len(arcs)]
        if fresh_c or fresh_a:
            cells.update(fresh_c)
            arcs.update(fresh_a)
            added_cells += fresh_c
            added_arcs += fresh_a
            if fits(inp):            # a larger request counts its coverage but is not mutated further
                pool.add(FuzzInput.from_json(inp))
                added_pool.append(inp)
    findings = {(f["impl"], f["class"]): f for r in sorted(results, key=lambda r: r["start"])[::-1]
                for f in r["findings"]}
    buckets = state["buckets"]
    for idx, impl, kind in sorted(d for r in results for d in r["divergences"]):
        key = f"{impl}|{kind}"
        state["divergent"] += 1
        if key not in buckets:
            if len(buckets) >= MAX_BUCKETS or len(kind) > MAX_NAME:
                continue              # counted in "divergent" only
            hello = (state.get("hellos") or [None] * len(state["impls"]))[impl] or {}
            name = (hello.get("implementation") or {}).get("name") or state["impls"][impl]
            buckets[key] = {"impl": impl, "name": str(name)[:MAX_COMMAND], "command": state["impls"][impl],
                            "class": kind, "count": 0, "first_index": idx, "first_seconds": round(elapsed, 3),
                            "finding": None}
            added_classes.append(key)
        buckets[key]["count"] += 1
        found = findings.get((impl, kind))
        if found is not None and buckets[key]["finding"] is None and _size(found) <= FINDING_BYTES \
                and sum(b["finding"] is not None for b in buckets.values()) < FINDINGS_KEPT:
            buckets[key]["finding"] = found
    net = state["safety_net"]
    for entry in sorted((e for r in results for e in r.get("safety_net", ())), key=lambda e: (e["index"], e["impl"])):
        state["safety_net_count"] += 1
        if len(net) < SAFETY_NET_KEEP and _size(entry) <= FINDING_BYTES:
            net.append(entry)
            added_net.append(entry["vector_id"])
    for r in results:
        state["executions"] += r["count"]
        for k, v in r["outcomes"].items():
            state["outcomes"][k] = state["outcomes"].get(k, 0) + v
        w = state["workers"].setdefault(str(r["worker"]), {"requests": 0, "busy_seconds": 0.0})
        w["requests"] += r["count"]
        w["busy_seconds"] += r["seconds"]
    return {"pool": added_pool, "cells": added_cells, "arcs": added_arcs, "classes": added_classes,
            "safety_net": added_net}


def run_campaign(options: Options, on_epoch: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run (or resume) a campaign; returns the final state. Raises BackendError when the
    workers cannot start (an implementation that does not start, Ray unavailable),
    spec.files.FileRefused when an output path is a link or a folder holds files the campaign
    did not write, StateError for a state that cannot be resumed or whose implementations are
    not the ones given. An unexpected error in a worker stops the campaign with its state and
    findings saved and the error recorded (``crashed_now``)."""
    out = check_outputs(options.out)
    if options.resume:
        state = options.state if options.state is not None else load_state(out)
        if state["impls"] != list(options.impls):
            raise StateError(impls_differ(out, state["impls"], options.impls))
        if state["spec_version"] != options.spec_version:
            raise StateError(f"{out}: a campaign of spec {state['spec_version']}, resumed with --spec-version "
                             f"{options.spec_version}: resume it with --spec-version {state['spec_version']}")
        if state.get("sequences", 0) != options.sequences:
            raise StateError(f"{out}: {mode_text(state.get('sequences', 0))}, resumed as "
                             f"{mode_text(options.sequences)} (a campaign is resumed in its own mode)")
    else:
        state = _new_state(options)
    options.state = None
    state["sessions"] += 1
    pool = Pool.from_json(state["pool"], state["pool_added"])
    cells, arcs = set(state["cells"]), set(state["arcs"])
    config = {**options.worker_config, "seed": state["seed"], "impls": list(options.impls),
              "spec_version": state["spec_version"],
              "timeout": options.timeout, "pool": state["pool"], "pool_added": state["pool_added"],
              "cells": state["cells"], "arcs": state["arcs"], "classes": list(state["buckets"]),
              "findings_full": _findings_full(state),
              "skip": list(state["skip"]), "sequences": state.get("sequences", 0)}
    from conformance.fuzz.worker import make_worker
    if state.get("sequences"):
        from conformance.fuzz.sequence_worker import make_sequence_worker as make_worker
    base = state["seconds"]
    backend = make_backend(options.factory or make_worker, (config,), options.workers, options.ray)
    started = saved = time.perf_counter()      # worker (and cluster) start-up is not counted
    try:
        state["hellos"] = [h if h is None or _size(h) <= HELLO_BYTES else {} for h in backend.call("hellos")[0]]
        if state.get("sequences"):
            _check_scenario(state["hellos"], list(options.impls))
        config.clear()
        while True:
            done = state["next_index"]
            if options.runs is not None and done >= options.runs:
                state["stopped"] = f"--runs {options.runs}"
                break
            if options.seconds is not None and time.perf_counter() - started >= options.seconds:
                state["stopped"] = f"--seconds {options.seconds:g} (wall clock)"
                break
            if options.stop_on_finding and state["buckets"]:
                state["stopped"] = "the first finding"
                break
            end = done + EPOCH if options.runs is None else min(done + EPOCH, options.runs)
            tasks = [{"start": s, "count": min(TASK, end - s), "pool_size": len(pool)} for s in range(done, end, TASK)]
            try:
                results = backend.map(tasks)
            except KeyboardInterrupt:
                state["stopped"] = "interrupted (the unfinished epoch is not counted)"
                break
            except BackendError as err:            # a worker process or actor lost with its task
                _record(state, [{"index": done, "last_index": end - 1, "worker": None, "exception": str(err),
                                 "traceback": getattr(err, "detail", "") or "", "input": None}], skip=False)
                break
            crashes = sorted((r["crash"] for r in results if r.get("crash")), key=lambda c: c["index"])
            if crashes:                            # the epoch is not merged: it runs again on --resume,
                _record(state, crashes)            # without the requests that crashed
                break
            elapsed = base + time.perf_counter() - started
            full_before = _findings_full(state)
            additions = _merge(state, pool, cells, arcs, results, elapsed)
            if _findings_full(state) and not full_before:
                additions["findings_full"] = True    # no finding is kept any more: the workers stop shrinking
            net = additions.pop("safety_net")
            if any(additions.values()):
                try:
                    backend.broadcast(additions)
                except BackendError as err:        # the epoch is merged: the next one is lost
                    _record(state, [{"index": end, "last_index": end + EPOCH - 1, "worker": None,
                                     "exception": str(err), "traceback": err.detail, "input": None}], skip=False)
                    _finish_epoch(state, end, elapsed, pool, cells, arcs)
                    break
            _finish_epoch(state, end, elapsed, pool, cells, arcs)
            found = bool(additions["classes"] or any(r["findings"] for r in results))
            if found or net or time.perf_counter() - saved >= SAVE_SECONDS:
                _snapshot(state, pool, cells, arcs)
                if found:
                    write_findings(out / FINDINGS, _vectors(state), state["seed"], state["spec_version"])
                if net:
                    write_findings(out / SAFETY_NET, _net_vectors(state), state["seed"], state["spec_version"])
                save_state(out, state)
                saved = time.perf_counter()
            if on_epoch:
                on_epoch(state)
    finally:
        backend.close()
    _snapshot(state, pool, cells, arcs)
    write_findings(out / FINDINGS, _vectors(state), state["seed"], state["spec_version"])
    if state["safety_net"]:
        write_findings(out / SAFETY_NET, _net_vectors(state), state["seed"], state["spec_version"])
    save_state(out, state)
    return state


def mode_text(sequences: int) -> str:
    return f"a campaign of sequences of up to {sequences} steps" if sequences else "a campaign of single calls"


def _check_scenario(hellos: list, impls: list[str]) -> None:
    """Sequence mode needs every implementation to run scenario requests (chapter 11.9.4)."""
    for hello, command in zip(hellos, impls):
        if "scenario" not in ((hello or {}).get("capabilities") or []):
            name = ((hello or {}).get("implementation") or {}).get("name") or command
            raise CapabilityMissing(f"--sequences needs the adapter capability \"scenario\" (spec 11.9.4), which "
                                    f"{str(name)[:200]!r} does not announce in its hello")


def _findings_full(state: dict[str, Any]) -> bool:
    return sum(b["finding"] is not None for b in state["buckets"].values()) >= FINDINGS_KEPT


def _finish_epoch(state: dict[str, Any], end: int, elapsed: float, pool: Pool, cells: set, arcs: set) -> None:
    state["next_index"] = end
    state["seconds"] = elapsed
    state["coverage_cells"], state["coverage_arcs"], state["pool_size"] = len(cells), len(arcs), len(pool)
    state["growth"].append({"seconds": round(elapsed, 3), "executions": state["executions"],
                            "cells": len(cells), "arcs": len(arcs), "pool": len(pool),
                            "buckets": len(state["buckets"])})
    if len(state["growth"]) > GROWTH_KEEP:            # thinned: every other point, and the last
        state["growth"] = state["growth"][:-1:2] + state["growth"][-1:]


def _record(state: dict[str, Any], crashes: list[dict[str, Any]], skip: bool = True) -> None:
    """Record internal errors (a worker's crash at a request, or a worker lost with a task) in
    the state; a crashed request is skipped from now on (--resume does not run it again)."""
    errors = state["internal_errors"]
    for crash in crashes:
        entry = {**crash, "session": state["sessions"]}
        if _size(entry) > INTERNAL_BYTES:
            entry["input"] = None
        if _size(entry) > INTERNAL_BYTES:
            entry["traceback"] = entry["traceback"][-(INTERNAL_BYTES // 2):]
            entry["exception"] = entry["exception"][:1000]
        if len(errors) < INTERNAL_KEEP:
            errors.append(entry)
            if skip and entry["index"] not in state["skip"]:
                state["skip"].append(entry["index"])
    first = crashes[0]
    where = f"request {first['index']}" if skip else f"requests {first['index']}..{first['last_index']}"
    state["stopped"] = f"an internal error at {where}"


def crashed_now(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The internal errors of the session that just ran."""
    return [e for e in state.get("internal_errors", ()) if e["session"] == state["sessions"]]


def impls_differ(out: Path, recorded: list[str], given: list[str], named: bool = True) -> str:
    """The one-line refusal of a resume whose implementations are not the campaign's."""
    ran = " ".join(f"--impl {c!r}" for c in recorded)
    now = " ".join(f"--impl {c!r}" for c in given) if named else "none (the reference adapter)"
    return (f"cannot resume from {out}: the campaign ran against {ran[:600]}, this resume names {now[:600]}; "
            "give the same --impl options (the state never chooses what runs)")


def _snapshot(state: dict[str, Any], pool: Pool, cells: set, arcs: set) -> None:
    state["pool"], state["pool_added"] = pool.to_json(), pool.added
    state["cells"], state["arcs"] = sorted(cells), sorted(arcs)


def _vectors(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [b["finding"]["vector"] for b in state["buckets"].values() if b.get("finding")]


def _net_vectors(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["vector"] for e in state["safety_net"]]


def report_json(state: dict[str, Any], out: Path) -> dict[str, Any]:
    seconds = max(state["seconds"], 1e-9)
    impls = []
    for cmd, hello in zip(state["impls"], state.get("hellos") or [None] * len(state["impls"])):
        impl = (hello or {}).get("implementation") or {}
        impls.append({"command": cmd, "name": impl.get("name"), "version": impl.get("version"),
                      "trace": "trace" in ((hello or {}).get("capabilities") or [])})
    buckets = []
    # divergences in order of appearance, then the unsupported sub-buckets, most blocking first
    order = sorted((b for b in state["buckets"].values() if element(b["class"]) is None), key=lambda b: b["first_index"])
    order += sorted((b for b in state["buckets"].values() if element(b["class"]) is not None), key=blocking_key)
    for b in order:
        f = b.get("finding") or {}
        buckets.append({**{k: v for k, v in b.items() if k != "finding"},
                        "finding": {k: v for k, v in f.items() if k not in ("vector", "input")} or None,
                        "text": bucket_text(b)})
    return {
        "seed": state["seed"], "spec_version": state["spec_version"], "implementations": impls,
        "sequences": state.get("sequences", 0),
        "executions": state["executions"],
        "seconds": round(state["seconds"], 3), "execs_per_second": round(state["executions"] / seconds, 1),
        "stopped": state.get("stopped"),
        "workers": [{"worker": int(w), "requests": v["requests"], "busy_seconds": round(v["busy_seconds"], 3),
                     "execs_per_second": round(v["requests"] / max(v["busy_seconds"], 1e-9), 1)}
                    for w, v in sorted(state["workers"].items(), key=lambda kv: int(kv[0]))],
        "coverage": {"cells": len(state["cells"]), "cells_beyond_corpus": len(state["cells"]) - state["corpus_cells"],
                     "arcs": len(state["arcs"]), "pool": len(state["pool"])},
        "growth": state["growth"], "outcomes": dict(sorted(state["outcomes"].items())),
        "divergent_requests": state["divergent"], "buckets": buckets,
        "unsupported": summary(list(state["buckets"].values())),
        "findings": str(out / FINDINGS),
        "safety_net": {"count": state["safety_net_count"], "directory": str(out / SAFETY_NET),
                       "note": "requests that met the wall-clock limit twice: not divergences, not in the exit status",
                       "entries": [{k: v for k, v in e.items() if k != "vector"} for e in state["safety_net"]]},
        "internal_errors": [{"seed": state["seed"], **{k: v for k, v in e.items() if k != "input"},
                             "reproduce": "rtwo-vm fuzz --resume DIR skips it" if e.get("last_index") is None
                             else "a worker was lost with these requests: --resume DIR runs them again"}
                            for e in state.get("internal_errors", ())],
        "note": "each request is a function of the seed and its index; --seconds only bounds how many ran",
    }


def report_text(report: dict[str, Any]) -> str:
    cov = report["coverage"]
    lines = [f"fuzz campaign seed {report['seed']} (spec {report['spec_version']}): {report['executions']:,} requests "
             f"in {report['seconds']:.1f} s "
             f"({report['execs_per_second']:,.0f}/s; stopped by {report['stopped']})"
             + (f"; each a sequence of 2 to {report['sequences']} calls on a shared state" if report.get("sequences")
                else ""),
             "implementations: " + ", ".join(f"{i['name'] or '?'} ({i['command']})" for i in report["implementations"]),
             "workers: " + ", ".join(f"#{w['worker']} {w['requests']:,} requests, {w['execs_per_second']:,.0f}/s busy"
                                     for w in report["workers"]),
             f"coverage: {cov['cells']} grid cells ({cov['cells_beyond_corpus']} beyond the corpus), "
             f"{cov['arcs']} reference branch arcs, pool {cov['pool']}"]
    if not report["buckets"]:
        lines.append("no divergence")
    else:
        lines.append(f"{len(report['buckets'])} divergence buckets from {report['divergent_requests']} divergent "
                     f"requests (findings in {report['findings']}):")
        lines += summary_text(report.get("unsupported", []))
        lines += ["", *("\n".join([b["text"], ""]) for b in report["buckets"])]
    net = report["safety_net"]
    if net["count"]:
        names = {i: (impl["name"] or impl["command"]) for i, impl in enumerate(report["implementations"])}
        lines.append(f"safety net (wall clock, not a verdict): {net['count']} request(s) met the limit twice; "
                     f"not counted as divergences (reproduce with rtwo-vm conformance run --dir {net['directory']} "
                     "--impl CMD --timeout SECONDS):")
        lines += [f"  request {e['index']} on {names.get(e['impl'], e['impl'])} ({e['run']}): "
                  f"{e['detail']} -> {e['vector_id']}" for e in net["entries"]]
        if net["count"] > len(net["entries"]):
            lines.append(f"  ... and {net['count'] - len(net['entries'])} more (not kept)")
    for e in report["internal_errors"]:
        where = (f"request {e['index']}" if e.get("last_index") is None
                 else f"requests {e['index']}..{e['last_index']}")
        lines += ["", f"INTERNAL ERROR (a bug of the fuzzer, not a divergence) at {where} of campaign seed "
                      f"{e['seed']}" + (f", worker {e['worker']}" if e.get("worker") is not None else "")
                      + f", session {e['session']}: {e['exception']}  ({e['reproduce']})"]
        lines += ["  " + line for line in e["traceback"].rstrip().splitlines()]
    return "\n".join(lines)
