"""Reports of ``rtwo-vm symbolic`` and ``rtwo-vm equivalence``, and their vector folders.

A vector folder is a conformance corpus (spec chapter 11.3): ``symbolic.jsonl`` (one vector
per line, canonical JSON, sorted by id) and ``manifest.json`` (its counts, SHA-256 and
digest), so that ``rtwo-vm conformance run --dir DIR`` replays it as it is.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from rtwo_vm.arguments.inputs import CliError

GROUP = "symbolic"


def path_vector(exploration, end, replay, name: str) -> dict:
    from proofs.symbolic.vectors import path_mnemonics, slug, vector
    return vector(f"{GROUP}/{slug(name)}/path_{end.index}",
                  f"{name}: path {end.index} of rtwo-vm symbolic ({end.outcome}), its witness "
                  "input", exploration.setup, replay.witness, replay.actual,
                  path_mnemonics(exploration, end))


def counterexample_id(name: str, verdict) -> str:
    from proofs.symbolic.vectors import slug
    return f"{GROUP}/{slug(name)}/{slug(verdict.name)}"


def counterexample_vector(exploration, verdict, name: str) -> dict:
    from proofs.symbolic.vectors import path_mnemonics, vector
    end = exploration.ends[verdict.path]
    return vector(counterexample_id(name, verdict),
                  f"{name}: counterexample to property {verdict.name} (path {verdict.path}, "
                  f"{end.outcome})", exploration.setup, verdict.replay.witness,
                  verdict.replay.actual, path_mnemonics(exploration, end))


def distinguishing_vectors(result, name_a: str, name_b: str) -> list[dict]:
    from proofs.symbolic.vectors import path_mnemonics, slug, vector
    xa, xb = result.explorations
    a, b = result.pair
    out = []
    for x, end, res, name, other in ((xa, xa.ends[a], result.results[0], name_a, name_b),
                                     (xb, xb.ends[b], result.results[1], name_b, name_a)):
        out.append(vector(f"{GROUP}/{slug(name_a)}-vs-{slug(name_b)}/{slug(name)}",
                          f"{name}: an input on which it and {other} differ in "
                          f"{', '.join(result.differing)}", x.setup, result.witness, res,
                          path_mnemonics(x, end)))
    return out


def write_corpus(directory: str, vectors: list[dict], version: str) -> dict:
    """Write the vectors of spec ``version`` and their manifest into ``directory``
    (atomically, never through a link); returns {"dir", "file", "ids"}."""
    from conformance.constants import PROTOCOL
    from proofs.symbolic.vectors import GENERATOR, GENERATOR_VERSION, SOURCE, canonical
    from spec.files import FileRefused, atomic_write, output_dir

    vectors = sorted({v["id"]: v for v in vectors}.values(), key=lambda v: v["id"])
    text = "".join(canonical(v) + "\n" for v in vectors)
    digest = hashlib.sha256("".join(f"{v['id']} {v['_meta']['content_hash']}\n"
                                    for v in vectors).encode()).hexdigest()
    manifest = {
        "corpus": "RTWO VM symbolic execution vectors", "spec_version": version,
        "generator": f"{GENERATOR} {GENERATOR_VERSION}", "protocol": PROTOCOL,
        "vector_count": len(vectors), "digest": digest,
        "sources": {"definition": 0, "smt": 0, "random": 0, SOURCE: len(vectors)},
        "random_seed": 0, "smt_inputs": None,
        "files": [{"path": f"{GROUP}.jsonl", "vectors": len(vectors),
                   "sha256": hashlib.sha256(text.encode()).hexdigest()}]}
    try:
        folder = output_dir(directory, "vector folder")
        atomic_write(folder / f"{GROUP}.jsonl", text)
        atomic_write(folder / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    except FileRefused as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"cannot write {directory}: {err.strerror or err}") from None
    return {"dir": directory, "file": str(Path(directory) / f"{GROUP}.jsonl"),
            "ids": [v["id"] for v in vectors]}


# -- symbolic -------------------------------------------------------------------------------

def _path_json(exploration, end, replay, ranges: bool, names: dict) -> dict:
    from proofs.symbolic.outcome import describe
    doc = describe(end, exploration.solver, ranges, names)
    doc["path"] = end.index
    doc["replay"] = replay.status
    doc["witness"] = replay.witness.to_json() if replay.witness else None
    if replay.differences:
        doc["differences"] = replay.differences
    if end.flags:
        doc["flags"] = list(end.flags)
    return doc


def _vector_line(written, name: str, verdict) -> str | None:
    info = (written or {}).get("counterexamples")
    if not info:
        return None
    return f"rtwo-vm run {info['file']} --vector-id {counterexample_id(name, verdict)}"


def _property_json(args, exploration, verdict, written) -> dict:
    from rtwo_vm.commands.symbolic.replay import replay_doc
    doc = verdict.to_json()
    if "counterexample" in doc and verdict.replay.witness is not None and args is not None:
        doc["counterexample"]["reproduce"] = replay_doc(
            args, exploration, verdict, _vector_line(written, Path(args.file).stem, verdict))
    return doc


def symbolic_json(exploration, replays, verdicts, written, code: int, ranges: bool,
                  args=None) -> dict:
    from proofs.symbolic.outcome import input_names
    stats = exploration.solver.stats
    names = input_names(exploration)
    return {
        "contract": hex(exploration.setup.entry),
        "paths": [_path_json(exploration, e, r, ranges, names)
                  for e, r in zip(exploration.ends, replays)],
        "cuts": len(exploration.cuts), "bounds_hit": exploration.bounds_hit,
        "not_explored": exploration.not_explored, "stopped": exploration.stopped,
        "bounds": bounds_json(exploration),
        "dropped_after_sha256": exploration.refuted,
        "witnesses": _replay_counts(replays),
        "properties": [_property_json(args, exploration, v, written) for v in verdicts],
        "vectors": written,
        "solver": {"queries": stats.queries, "unknown": stats.unknown, "timeout": stats.timeout,
                   "rlimit_per_query": exploration.solver.rlimit,
                   "work_units": stats.rlimit_spent, "steps": exploration.steps,
                   "frame_ends": exploration.frame_ends},
        "exit": code,
    }


def bounds_json(exploration) -> dict:
    """The bounds the run had (deterministic) and its safety nets."""
    setup = exploration.setup
    return {"max_calldata": None if setup.call_data is not None else setup.max_calldata,
            "loop_bound": setup.loop_bound, "max_paths": setup.max_paths,
            "max_steps": setup.max_steps, "max_work": setup.max_work,
            "rlimit": exploration.solver.rlimit,
            "safety_nets": {"deadline_seconds": setup.deadline, "z3_memory_mb": setup.z3_memory}}


def bounds_text(exploration) -> str:
    b = bounds_json(exploration)
    calldata = "call data fixed" if b["max_calldata"] is None else \
        f"max-calldata {b['max_calldata']}"
    return (f"bounds: {calldata}, loop bound {b['loop_bound']}, max-paths {b['max_paths']}, "
            f"max-steps {b['max_steps']}, max-work {b['max_work']}, rlimit {b['rlimit']} per "
            f"query; safety nets: deadline {b['safety_nets']['deadline_seconds']:g} s, z3 "
            f"memory {b['safety_nets']['z3_memory_mb']} MB")


def _replay_counts(replays) -> dict:
    out: dict = {}
    for r in replays:
        key = r.status if not r.status.startswith("no witness") else "no witness"
        out[key] = out.get(key, 0) + 1
    return out


def _short(value, limit: int = 34) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _num(v) -> str:
    """A number, or a range [least, greatest] (? where the budget left a side undecided)."""
    if not isinstance(v, list):
        return "?" if v is None else str(v)
    return "..".join("?" if x is None else str(x) for x in v)


def symbolic_text(exploration, replays, verdicts, written, file: str, ranges: bool,
                  args=None) -> str:
    from proofs.symbolic.outcome import describe
    from rtwo_vm.commands.symbolic.replay import replay_lines
    ends, cuts = exploration.ends, exploration.cuts
    statuses: dict = {}
    for e in ends:
        statuses[e.outcome] = statuses.get(e.outcome, 0) + 1
    lines = [f"symbolic {file} at {hex(exploration.setup.entry)}: {len(ends)} "
             f"path{'s' if len(ends) != 1 else ''} ("
             + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + f"), {len(cuts)} "
             f"cut by bounds" + (f" ({', '.join(exploration.bounds_hit)})" if cuts else "")]
    head = (f"  {'path':>4}  {'outcome':<24} {'output':<36} {'changes':>7} {'events':>6} "
            f"{'compute':>11} {'fee':>13}  witness on the reference")
    if exploration.refuted:
        lines[0] += (f"; {exploration.refuted} more dropped: no input follows them once SHA-256 "
                     "takes its true values")
    for item in exploration.not_explored:
        lines.append(f"  not explored: {item}")
    if exploration.stopped:
        lines.append(f"  STOPPED: {exploration.stopped}")
    lines += [head, "  " + "-" * (len(head) - 2)]
    for end, r in zip(ends, replays):
        d = describe(end, exploration.solver, ranges)
        out = d["output"] if isinstance(d["output"], str) else (
            f"{_num(d['output']['length'])} bytes, symbolic")
        lines.append(f"  {end.index:>4}  {end.outcome:<24} {_short(out):<36} "
                     f"{len(d['state_changes']):>7} {len(d['events']):>6} "
                     f"{_num(d['usage']['compute']):>11} {_num(d['fee']):>13}  {r.status}")
    counts = _replay_counts(replays)
    lines.append("witnesses: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                 + f" (of {len(ends)} paths, replayed on reference_vm)")
    stats = exploration.solver.stats
    lines.append(f"solver: {stats.queries} queries, {stats.unknown} unknown, "
                 f"{stats.rlimit_spent} work units (at most {exploration.solver.rlimit} each); "
                 f"{exploration.steps} instructions, {exploration.frame_ends} frame ends")
    lines.append(bounds_text(exploration))
    for v in verdicts:
        lines.append(f"property {v.name}: {v.verdict}" + (f" ({v.detail})" if v.detail else ""))
        if v.verdict == "stopped" and v.lift:
            lines.append(f"  to lift: {'; '.join(v.lift)}")
        if v.replay is not None and v.replay.witness is not None:
            w = v.replay.witness
            lines.append(f"  input: caller {hex(w.caller)}, call data 0x{w.call_data.hex()}"
                         + "".join(f", storage of {hex(a)} {{" + ", ".join(
                             f"{hex(k)}: {hex(x)}" for k, x in sorted(s.items())) + "}"
                             for a, s in sorted(w.storage.items()) if s)
                         + (f", block time {hex(w.block_time)}"
                            if exploration.setup.time_symbolic else "")
                         + (f", seed 0x{w.seed.hex()}" if exploration.setup.seed_symbolic else ""))
            if args is not None:
                lines += replay_lines(args, exploration, v,
                                      _vector_line(written, Path(args.file).stem, v))
            end = exploration.ends[v.path]
            claim = v.claim if v.claim != "false" else f"the path ends in {end.outcome}"
            lines.append(f"  claim: {_short(claim, 160)}  =  false")
            for term, value in v.evaluated[:8]:
                lines.append(f"  {_short(term, 90)}  =  {value}")
            res = v.replay.actual
            lines.append(f"  reference: {res['status']}" + (f" {res['error']}" if res["error"] else "")
                         + f", output {_short(res['output'], 40)}, state changes "
                         + _short(json.dumps([[c["key"], c["before"], c["after"]]
                                              for c in res["state_changes"]]), 200))
        for u in v.undecided[:3]:
            lines.append(f"  undecided: {u}")
    for kind, info in sorted((written or {}).items()):
        lines.append(f"vectors ({kind}): {len(info['ids'])} in {info['file']} "
                     f"(rtwo-vm conformance run --dir {info['dir']}; one: rtwo-vm run "
                     f"{info['file']} --vector-id {info['ids'][0] if info['ids'] else '-'})")
    return "\n".join(lines)


# -- equivalence ----------------------------------------------------------------------------

def write_per_version(directory: str, vectors: list[dict]) -> dict:
    """Vectors of several spec versions: one corpus per version in DIRECTORY/VERSION/ (a
    corpus is of one version); returns {"dir", "file": [one per version], "ids"}."""
    by_version: dict = {}
    for v in vectors:
        by_version.setdefault(v["_meta"]["spec_version"], []).append(v)
    out: dict = {"dir": directory, "file": [], "ids": []}
    for version, group in sorted(by_version.items()):
        info = write_corpus(str(Path(directory) / version), group, version)
        out["file"].append(info["file"])
        out["ids"] += info["ids"]
    return out


def equivalence_lift(result) -> list[str]:
    """What would lift an equivalence's bounds, budget or safety net."""
    from proofs.symbolic.verdicts import verdict_lift
    return verdict_lift(result.verdict, result.bounds, result.stopped or "")


def equivalence_json(result, written, versions: bool = False, args=None) -> dict:
    more: dict = {"versions": list(result.versions)} if versions else {}
    if args is not None and result.witness is not None and result.explorations:
        from rtwo_vm.commands.symbolic.replay import distinguishing_doc
        more["reproduce"] = distinguishing_doc(args, result)
    return {**more, "verdict": result.verdict, "stopped": result.stopped,
            "bounds_given": bounds_json(result.explorations[0]) if result.explorations else None,
            "compared": list(result.fields),
            "paths": list(result.paths), "pairs": result.pairs, "queries": result.queries,
            "bounds": result.bounds, "lift": equivalence_lift(result), "undecided": result.undecided,
            "distinguishing_input": result.witness.to_json() if result.witness else None,
            "results": list(result.results), "differing": result.differing,
            "disagreements": result.disagreements, "vectors": written}


def equivalence_text(result, a: str, b: str, written, versions: bool = False, args=None) -> str:
    labels = result.versions if versions else ("A", "B")
    lines = [f"equivalence {a} {b}: {result.verdict}",
             f"  compared: {', '.join(result.fields)}",
             f"  paths: {result.paths[0]} of {labels[0]}, {result.paths[1]} of {labels[1]}; "
             f"{result.pairs} "
             f"pair{'s' if result.pairs != 1 else ''} compared, "
             f"{result.queries} solver queries"]
    from proofs.symbolic.bounds import lift
    for bound in result.bounds:
        lines.append(f"  not shown beyond: {bound} (to lift: {lift(bound)})")
    if result.verdict in ("unknown", "stopped"):
        lines.append(f"  to lift: {'; '.join(equivalence_lift(result))}")
    if result.stopped:
        lines.append(f"  STOPPED: {result.stopped}")
    if result.explorations:
        lines.append("  " + bounds_text(result.explorations[0]))
    for u in result.undecided[:3]:
        lines.append(f"  undecided: {u}")
    if result.witness is not None:
        w = result.witness
        lines.append(f"  distinguishing input: caller {hex(w.caller)}, call data "
                     f"0x{w.call_data.hex()}" + "".join(
                         f", storage of {hex(x)} {{" + ", ".join(
                             f"{hex(k)}: {hex(v)}" for k, v in sorted(s.items())) + "}"
                         for x, s in sorted(w.storage.items()) if s))
        if args is not None and result.explorations:
            from rtwo_vm.commands.symbolic.replay import distinguishing_lines
            lines += distinguishing_lines(args, result, labels)
        for label, res in zip(labels, result.results):
            shown = {f: res.get(f) for f in ("status", "error", "output", *result.differing)}
            lines.append(f"  {label} on it: " + json.dumps(shown, sort_keys=True))
        lines.append(f"  they differ in: {', '.join(result.differing)}")
    if written:
        files = written["file"] if isinstance(written["file"], list) else [written["file"]]
        lines.append(f"  vectors: {' and '.join(files)} ({', '.join(written['ids'])})")
    return "\n".join(lines)
