"""The bodies of ``rtwo-vm symbolic`` and ``rtwo-vm equivalence`` (options:
rtwo_vm/commands/symbolic.py; the work: proofs/symbolic/; printing and vector folders:
rtwo_vm/commands/symbolic/report.py).

Every argument is read and checked before anything is explored, as ``rtwo-vm run`` reads
its own (the same parsers: hostile input gets one line and exit 2).
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

from rtwo_vm.arguments.userfiles import file_limits
from rtwo_vm.arguments.inputs import (
    CliError, parse_assignment, parse_count, parse_hex, parse_word, policy_of, read_code,
    read_state_file,
)

EXIT_COULD_NOT_RUN = 3
COMPARE_FIELDS = ("status", "error", "error_pc", "output", "storage", "events", "calls",
                  "usage", "fee")


def spec_version(args) -> str:
    """The command's spec version (``--spec-version``), refused in one line without models."""
    from proofs import versions
    try:
        args.spec_version = versions.resolve(args.spec_version, versions.SYMBOLIC)  # the inputs read it
    except versions.UnmodelledVersion as err:
        raise CliError(f"--spec-version: {err}") from None
    return args.spec_version


def setup_of(args, file: str | None = None):
    """The proofs.symbolic Setup the options describe (CliError on a bad one)."""
    from proofs.symbolic.world import Setup, limits_problem, policy_problem
    from proofs.words import width
    from reference_vm import Limits

    version = spec_version(args)
    numbers = width(None, version).num
    address = parse_word(args.address, "--address")
    codes, pinned = {}, {}
    if args.state:
        for a, contract in read_state_file(args.state, version).items():
            codes[a] = contract.code
            pinned[a] = dict(contract.storage)
    for item in args.contract or ():
        addr_text, path = parse_assignment(item, "--contract")
        codes[parse_word(addr_text, "--contract address")] = read_code(path, version)
    storage = {}
    for item in args.storage or ():
        key, value = parse_assignment(item, "--storage")
        storage[parse_word(key, "--storage key")] = parse_word(value, "--storage value")
    codes[address] = read_code(file or args.file, version)
    pinned[address] = {**pinned.get(address, {}), **storage}
    seed = None
    if args.seed is not None:
        seed = parse_hex(args.seed, "--seed")
        if len(seed) != numbers.seed_size:
            raise CliError(f"--seed must be {numbers.seed_size} bytes of hex")
    limits = Limits(**{name: parse_count(getattr(args, name), f"--{name.replace('_', '-')}")
                       for name in Limits.DIMENSIONS if getattr(args, name) is not None})
    problem = limits_problem(limits, version)
    if problem:
        raise CliError(f"limits: {problem}")
    policy = policy_of(args)
    problem = policy_problem(policy, version)
    if problem:
        raise CliError(f"policy: {problem}")
    if not 0 <= args.max_calldata <= numbers.call_data_size:
        raise CliError(f"--max-calldata must be 0..{numbers.call_data_size} (the spec's call "
                       "data size)")
    try:
        from proofs.symbolic.solve import budget
        budget(args.rlimit, args.budgets)
    except ValueError as err:
        raise CliError(f"--budgets: {err}") from None
    caller = None if args.caller is None else parse_word(args.caller, "--caller")
    call_data = None if args.calldata is None else parse_hex(args.calldata, "--calldata")
    time = None if args.time is None else parse_word(args.time, "--time")
    try:
        return Setup(
            entry=address, codes=codes, version=version, policy=policy, limits=limits,
            max_calldata=args.max_calldata, caller=caller, call_data=call_data, time=time,
            seed=seed, storage={a: s for a, s in pinned.items() if s},
            concrete_storage=args.concrete_storage, loop_bound=args.loop_bound,
            max_paths=args.max_paths, max_steps=args.max_steps, max_work=args.max_work,
            rlimit=args.rlimit, deadline=args.deadline, z3_memory=args.z3_memory)
    except ValueError as err:
        raise CliError(str(err)) from None


def _reason(err: Exception) -> str:
    if isinstance(err, (RecursionError, ctypes.ArgumentError)):
        return "a term of the path is too deep for Python's stack (a very long path)"
    return str(err).splitlines()[0][:200]




def _output_dir(path: str, what: str) -> None:
    from spec.files import FileRefused, refuse_link
    if Path(path).exists() and not Path(path).is_dir():
        raise CliError(f"{what} {path}: exists and is not a directory")
    try:
        refuse_link(path, f"{what} folder")
    except FileRefused as err:
        raise CliError(str(err)) from None


def symbolic(args) -> int:
    from proofs.symbolic.executor import explore
    from proofs.symbolic.properties import NO_FAILURE, PropertyError
    from proofs.symbolic.userfile import load_file
    from proofs.symbolic.verdicts import check, exit_code
    from proofs.symbolic.witness import replay_all
    from rtwo_vm.commands.symbolic import report, spreading

    setup = setup_of(args)
    for folder, what in ((args.emit_vectors, "--emit-vectors"),
                         (args.counterexamples, "--counterexamples")):
        if folder:
            _output_dir(folder, what)
    try:
        props = load_file(args.properties, *file_limits(args)) if args.properties else [NO_FAILURE]
    except PropertyError as err:
        raise CliError(str(err)) from None
    try:
        with spreading.solving(args) as solver:
            exploration = explore(setup, solver)
            replays = replay_all(exploration, solver)
            verdicts = [check(exploration, p, solver) for p in props]
    except spreading.could_not_run() as err:
        print(f"rtwo-vm: symbolic: could not run: {_reason(err)}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    disagreements = [r for r in replays if r.status == "disagrees"]
    name = Path(args.file).stem
    written = {}
    if args.emit_vectors:
        vectors = [report.path_vector(exploration, end, r, name)
                   for end, r in zip(exploration.ends, replays) if r.status == "agrees"]
        written["paths"] = report.write_corpus(args.emit_vectors, vectors, spec_version(args))
    found = [v for v in verdicts if v.verdict == "counterexample"]
    if found:
        vectors = [report.counterexample_vector(exploration, v, name) for v in found]
        written["counterexamples"] = report.write_corpus(args.counterexamples, vectors, spec_version(args))
    code = exit_code(verdicts, len(disagreements))
    if args.json:
        print(json.dumps(report.symbolic_json(exploration, replays, verdicts, written, code,
                                              args.ranges, args), indent=1, sort_keys=True))
    else:
        print(report.symbolic_text(exploration, replays, verdicts, written, args.file,
                                   args.ranges, args))
    for r in disagreements:
        print("rtwo-vm: MODEL DISAGREEMENT: the reference does not give the path's end on its "
              f"witness: {r.differences[0]}", file=sys.stderr)
    return code


def compare_fields(text: str | None) -> tuple:
    if text is None:
        return COMPARE_FIELDS
    names = [n.strip() for n in text.split(",") if n.strip()]
    names = ["storage" if n == "state_changes" else n for n in names]
    bad = [n for n in names if n not in COMPARE_FIELDS]
    if bad or not names:
        raise CliError(f"--compare: {bad[0] if bad else 'nothing'!r} is not a field "
                       f"({', '.join(COMPARE_FIELDS)})")
    return tuple(n for n in COMPARE_FIELDS if n in names)


def _against(args, setup_a):
    """With ``--against U``: contract A's setup under U (its containers those of
    --spec-version, which must be given and differ); CliError otherwise."""
    import dataclasses
    from proofs import versions
    from proofs.symbolic.world import limits_problem, policy_problem
    if args.other is not None:
        raise CliError("--against compares one contract under two versions: give contract A "
                       "only")
    if getattr(args, "given_version", None) is None:
        raise CliError("--against needs --spec-version (the version of the contract's "
                       "container)")
    try:
        against = versions.check(args.against, versions.SYMBOLIC)
    except versions.UnmodelledVersion as err:
        raise CliError(f"--against: {err}") from None
    if against == setup_a.version:
        raise CliError(f"--against {against}: the same version as --spec-version")
    for problem, what in ((limits_problem(setup_a.limits, against), "limits"),
                          (policy_problem(setup_a.policy, against), "policy")):
        if problem:
            raise CliError(f"{what} under {against}: {problem}")
    try:
        return dataclasses.replace(setup_a, version=against)
    except ValueError as err:
        raise CliError(f"--against {against}: {err}") from None


def equivalence(args) -> int:
    from proofs.symbolic.equivalence import compare
    from proofs.symbolic.executor import ModelError
    from rtwo_vm.commands.symbolic import report, spreading

    fields = compare_fields(args.compare)
    args.given_version = args.spec_version
    setup_a = setup_of(args)
    if args.against is not None:
        setup_b = _against(args, setup_a)
        names = (f"{Path(args.file).stem}@{setup_a.version}",
                 f"{Path(args.file).stem}@{setup_b.version}")
        shown = (f"{args.file} under {setup_a.version}", f"and under {setup_b.version}")
    elif args.other is None:
        raise CliError("equivalence needs contract B, or --against VERSION")
    else:
        setup_b = setup_of(args, args.other)
        names = (Path(args.file).stem, Path(args.other).stem)
        shown = (args.file, args.other)
    _output_dir(args.vectors, "--vectors")
    try:
        result = compare(setup_a, setup_b, fields, spreading.solver_of(args))
    except (ModelError, RecursionError, ctypes.ArgumentError) as err:
        print(f"rtwo-vm: equivalence: could not run: {_reason(err)}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    written = None
    if result.verdict == "different":
        vectors = report.distinguishing_vectors(result, *names)
        if args.against is None:
            written = report.write_corpus(args.vectors, vectors, spec_version(args))
        else:
            written = report.write_per_version(args.vectors, vectors)
    if args.json:
        print(json.dumps(report.equivalence_json(result, written, args.against is not None, args),
                         indent=1, sort_keys=True))
    else:
        print(report.equivalence_text(result, *shown, written, args.against is not None, args))
    for d in result.disagreements:
        print(f"rtwo-vm: MODEL DISAGREEMENT: {d}", file=sys.stderr)
    return {"equivalent": 0, "different": 1, "bounded": 4, "unknown": 4, "stopped": 4}.get(
        result.verdict, EXIT_COULD_NOT_RUN)


def run_vector(args) -> int:
    """``rtwo-vm run FILE.jsonl``: run a vector's request (one vector, or --vector-id) on the
    reference interpreter, print the result and say whether it is the vector's expected one."""
    from proofs.symbolic.vectors import request_of
    from reference_vm import execute
    from reference_vm.result import canonical
    from spec.files import FileRefused, read_bounded

    try:
        text = read_bounded(args.file, 64 << 20, "vector file").decode("utf-8")
    except FileRefused as err:
        raise CliError(str(err)) from None
    except UnicodeDecodeError:
        raise CliError(f"{args.file}: not UTF-8 text") from None
    vectors = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                vectors.append(json.loads(line))
            except (ValueError, RecursionError):
                raise CliError(f"{args.file}:{number}: not a JSON vector") from None
    wanted = getattr(args, "vector_id", None)
    chosen = [v for v in vectors if isinstance(v, dict) and (wanted is None or v.get("id") == wanted)]
    if len(chosen) != 1:
        ids = ", ".join(str(v.get("id"))[:60] for v in vectors[:5] if isinstance(v, dict))
        raise CliError(f"{args.file}: {len(chosen)} vectors match; name one with --vector-id "
                       f"(ids: {ids}{', ...' if len(vectors) > 5 else ''})")
    vector = chosen[0]
    import spec
    meta = vector.get("_meta")
    version = meta.get("spec_version") if isinstance(meta, dict) else None
    version = version if version is not None else getattr(args, "spec_version", None)
    if not isinstance(version, str) or version not in spec.names():
        raise CliError(f"{args.file}: the vector's spec version {str(version)[:20]!r} is not one "
                       f"of {', '.join(spec.names())}")
    try:
        request = request_of(vector["input"], version)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise CliError(f"{args.file}: not a vector input ({type(err).__name__}: {err})"[:200]) from None
    result = execute(*request, version=version)
    doc = result.to_json()
    print(canonical(doc) if args.canonical else json.dumps(doc, indent=2, sort_keys=True))
    expected = vector.get("expected", {}).get("result")
    same = "the vector's expected result" if doc == expected else "NOT the vector's expected result"
    print(f"rtwo-vm: {vector.get('id')}: {same}", file=sys.stderr)
    return 0 if result.ok else 1
