"""The body of ``rtwo-vm symbolic CONTRACT --invariant FILE --depth K`` (the work:
proofs/symbolic/sequences.py): every invariant checked after every call of every sequence of
up to K calls; a violation printed as the sequence (and the ``rtwo-vm run`` command of each
call on the storage before it) and written as a scenario vector (chapter 11.9) into
``--counterexamples DIR``/scenarios/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rtwo_vm.arguments.inputs import CliError
from rtwo_vm.arguments.userfiles import file_limits
from rtwo_vm.commands.symbolic import run as bodies

GROUP = "invariants"
CONFLICTS = (("properties", "--properties"), ("calldata", "--calldata"),
             ("emit_vectors", "--emit-vectors"))


def check(args) -> int:
    from proofs.symbolic import invariants, sequences
    from proofs.symbolic.bounds import DEFAULT_DEPTH
    from proofs.symbolic.properties import PropertyError
    from rtwo_vm.commands.symbolic import spreading

    for name, flag in CONFLICTS:
        if getattr(args, name, None) is not None:
            raise CliError(f"{flag} cannot be used with --invariant (every call of a sequence "
                           "has its own symbolic call data)")
    depth = args.depth or DEFAULT_DEPTH
    setup = bodies.setup_of(args)
    bodies._output_dir(args.counterexamples, "--counterexamples")
    try:
        invs = invariants.load(args.invariant, setup.entry, sorted(setup.codes),
                               *file_limits(args))
    except PropertyError as err:
        raise CliError(str(err)) from None
    try:
        with spreading.solving(args) as solver:
            result = sequences.check(setup, invs, depth, args.max_states, solver)
    except spreading.could_not_run() as err:
        print(f"rtwo-vm: symbolic: could not run: {bodies._reason(err)}", file=sys.stderr)
        return bodies.EXIT_COULD_NOT_RUN
    violated = [v for v in result.verdicts if v.verdict == "violated"]
    written = write_scenarios(args, result, violated) if violated else None
    code = sequences.exit_code(result.verdicts)
    if args.json:
        print(json.dumps(as_json(result, written, code), indent=1, sort_keys=True))
    else:
        print(text(args, result, written))
    for v in result.verdicts:
        if v.verdict == "disagreement":
            print(f"rtwo-vm: MODEL DISAGREEMENT: {v.detail}", file=sys.stderr)
    return code


def _stats(result) -> dict:
    s = result.solver.stats
    return {"depth": result.depth, "paths": result.paths, "states": result.states,
            "explorations": result.explorations, "queries": s.queries, "unknown": s.unknown,
            "work_units": s.rlimit_spent}


def as_json(result, written, code: int) -> dict:
    return {"exit": code, "verdicts": [v.to_json() for v in result.verdicts],
            "stats": _stats(result), "scenarios": written}


def _files(args) -> dict:
    """Address -> the file of each contract given on the command line (for the commands)."""
    from rtwo_vm.arguments.inputs import parse_assignment, parse_word
    out = {}
    for item in args.contract or ():
        a, path = parse_assignment(item, "--contract")
        out[parse_word(a, "--contract address")] = path
    out[parse_word(args.address, "--address")] = args.file
    return out


def _run_flags(args) -> str:
    """The limits and policy options of the command line, as ``rtwo-vm run`` takes them."""
    out = [f"--{n.replace('_', '-')} {getattr(args, n)}" for n in
           ("compute", "memory_pages", "storage_units") if getattr(args, n) is not None]
    out += [f"--{n.replace('_', '-')}" for n in ("allow_time", "allow_randomness", "forbid_calls")
            if getattr(args, n)]
    if args.storage_access != "read_write":
        out.append(f"--storage-access {args.storage_access}")
    out += [f"--forbid {op}" for op in args.forbid or ()] + [f"--allow {op}" for op in args.allow or ()]
    return " ".join(out)


def commands(args, setup, witness) -> list[str]:
    """One ``rtwo-vm run`` command per call, on the storage the replay had before it (time
    and seed as the call had them)."""
    files = _files(args)
    state = {a: dict(s) for a, s in witness.initial.items()}
    lines = []
    for call in witness.calls:
        where = files.get(call.target)
        pins = " ".join(f"--storage {k:#x}={v:#x}" for k, v in sorted(state.get(call.target, {}).items()) if v)
        others = [f"--contract {a:#x}={f}" for a, f in sorted(files.items()) if a != call.target]
        data = call.call_data.hex() or '""'
        flags = " ".join(part for part in (
            f"--address {call.target:#x}", f"--caller {call.caller:#x}",
            f"--calldata {data}", pins, " ".join(others), _run_flags(args),
            f"--time {call.block_time:#x}" if call.block_time else "",
            f"--seed {call.seed.hex()}" if any(call.seed) else "",
            f"--spec-version {setup.version}") if part)
        hidden = sorted(a for a, slots in state.items() if a != call.target and any(slots.values()))
        note = (f"   # storage of {', '.join(hex(a) for a in hidden)} not pinned here: see the "
                "scenario vector" if hidden else "")
        lines.append(f"rtwo-vm run {where or '<code of ' + hex(call.target) + '>'} {flags}{note}")
        if call.result["status"] == "success":
            for ch in call.result["state_changes"]:
                state.setdefault(int(ch["address"], 16), {})[int(ch["key"], 16)] = int(ch["after"], 16)
    return lines


def _scenario_input(setup, witness) -> dict:
    """The scenario input (11.9) of a replayed sequence: the initial storage it assumed and
    each call as a single-call vector input's members."""
    from proofs.symbolic.vectors import vector_input
    from proofs.symbolic.witness import Witness
    steps = []
    pre_state = None
    for call in witness.calls:
        one = vector_input(setup, Witness(call.caller, call.call_data, call.block_time,
                                          call.seed, witness.initial))
        one["message"]["to"] = hex(call.target)
        pre_state = pre_state or one.pop("pre_state")
        one.pop("pre_state", None)
        steps.append({"spec_version": setup.version, **one})
    return {"pre_state": pre_state, "steps": steps}


def write_scenarios(args, result, violated) -> dict:
    """Each violation as a scenario vector in --counterexamples DIR/scenarios/."""
    from conformance.scenario import store
    from conformance.scenario.fill import fill_input
    from proofs.symbolic.vectors import slug
    name = slug(Path(args.file).stem)
    vectors = [fill_input(_scenario_input(result.setup, v.witness),
                          id=f"scenario/{GROUP}/{name}/{slug(v.name)}",
                          description=f"{name}: a sequence of {len(v.witness.calls)} call(s) after "
                                      f"which invariant {v.name} fails (rtwo-vm symbolic "
                                      "--invariant, replayed on the reference)",
                          source="symbolic", categories=("invariant",),
                          opcodes=v.witness.mnemonics)
               for v in violated]
    folder = store.folder(Path(args.counterexamples))
    try:
        store.write(vectors, folder, result.setup.version)
    except OSError as err:
        raise CliError(f"cannot write {folder}: {getattr(err, 'strerror', None) or err}") from None
    return {"dir": str(folder), "ids": [v["id"] for v in vectors]}


def text(args, result, written) -> str:
    stats = _stats(result)
    lines = [f"symbolic {args.file} at {result.setup.entry:#x}: invariants after every call of "
             f"every sequence of up to {result.depth} call(s) to "
             f"{', '.join(hex(a) for a in sorted(result.setup.codes))}",
             f"explored: {stats['explorations']} call explorations, paths per depth "
             f"{stats['paths']}, states checked per depth {stats['states']}; solver: "
             f"{stats['queries']} queries, {stats['unknown']} unknown, {stats['work_units']} "
             "work units"]
    for v in result.verdicts:
        shown = {"holds": f"holds to depth {result.depth}"}.get(v.verdict, v.verdict)
        lines.append(f"invariant {v.name}: {shown} ({v.detail})")
        if v.verdict in ("bounded", "unknown", "stopped"):
            lines.append("  NOT proved; " + _lift(v))
        w = v.witness
        if w is None:
            continue
        initial = "; ".join(f"{a:#x}: {{{', '.join(f'{k:#x}: {x:#x}' for k, x in sorted(s.items()))}}}"
                            for a, s in sorted(w.initial.items()))
        lines.append(f"  initial storage assumed (slots listed, zeros included; every other "
                     f"slot 0): {initial or 'none'}")
        for n, call in enumerate(w.calls, 1):
            changes = ", ".join(f"{c['address']}[{c['key']}] {c['before']} -> {c['after']}"
                                for c in call.result["state_changes"]) or "no change"
            lines.append(f"  call {n}: to {call.target:#x} caller {call.caller:#x} call data "
                         f"0x{call.call_data.hex()}: {call.result['error'] or call.result['status']}"
                         f", {changes}")
        lines.append(f"  claim: {w.claim}")
        lines.append(f"  replay: {w.status}: {w.detail}")
        for cmd in commands(args, result.setup, w):
            lines.append(f"  $ {cmd}")
    if written:
        lines.append(f"scenario vectors: {len(written['ids'])} in {written['dir']}")
    return "\n".join(lines)


def _lift(v) -> str:
    names = "; ".join(v.bounds or v.undecided[:2]) or v.detail
    hints = {"max-states": "--max-states", "max-paths": "--max-paths", "max-steps": "--max-steps",
             "max-work": "--max-work", "loop bound": "--loop-bound",
             "max-calldata": "--max-calldata", "simplify steps": "a smaller contract"}
    options = sorted({o for k, o in hints.items() if k in names})
    if v.verdict == "unknown":
        options.append("--rlimit" if "work" not in names else "--max-work")
    if v.verdict == "stopped":
        options.append("--deadline or --z3-memory")
    return f"raise {' or '.join(sorted(set(options))) or 'the bound'} to go further: {names}"
