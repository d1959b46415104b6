"""``rtwo-vm run FILE``: one execution under one spec version, on the reference interpreter or
another engine (``--engine``), printed as the result's JSON; a ``.jsonl`` file of vectors runs
a vector's request as it stands. Exit status 1 when the outcome is not success."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

from spec import files
from reference_vm import Context, Contract, Limits, Message, WorldState
from reference_vm.result import canonical
from reference_vm.trace import FORMATS as TRACE_FORMATS, tracer_for
from rtwo_vm.arguments.inputs import (
    CliError, add_spec_version, parse_assignment, parse_count, parse_hex, parse_word, policy_of,
    read_code, read_state_file,
)
from rtwo_vm.arguments.engines import add_engine, engine_of
from rtwo_vm.arguments.parsing import RUN_OPTION_GROUPS, group_options
from rtwo_vm.arguments.words import add_call_data, call_data, hex_words

DEFAULT_ADDRESS = "0x100"
DEFAULT_CALLER = "0"


def register(sub) -> None:
    p = sub.add_parser("run", help="run a contract and print the result as JSON")
    p.add_argument("file", help=".rasm assembly, hex text or a binary container; or a .jsonl "
                                "file of vectors, whose request is run as it stands")
    add_call_data(p)
    p.add_argument("--caller", default=DEFAULT_CALLER, help="caller address (default: 0)")
    p.add_argument("--address", default=DEFAULT_ADDRESS, help="address to deploy FILE at")
    p.add_argument("--storage", action="append", metavar="KEY=VALUE", help="initial storage of FILE")
    p.add_argument("--contract", action="append", metavar="ADDR=FILE", help="deploy another contract")
    p.add_argument("--state", help="JSON pre-state file with more contracts")
    p.add_argument("--compute", help="compute limit")
    p.add_argument("--memory-pages", dest="memory_pages", help="memory limit in pages")
    p.add_argument("--storage-units", dest="storage_units", help="storage limit in units")
    p.add_argument("--time", default="0", help="block time (needs --allow-time to be read)")
    p.add_argument("--seed", help="32-byte randomness seed as hex")
    p.add_argument("--allow-time", action="store_true", help="time_access = allowed")
    p.add_argument("--allow-randomness", action="store_true", help="randomness = seeded")
    p.add_argument("--forbid-calls", action="store_true", help="external_call = forbidden")
    p.add_argument("--storage-access", default="read_write",
                   choices=["none", "read_only", "read_write"],
                   help="storage_access of the policy (default: read_write)")
    p.add_argument("--forbid", action="append", metavar="OP", help="forbid a mnemonic or type")
    p.add_argument("--allow", action="append", metavar="OP", help="allow only these mnemonics or types")
    p.add_argument("--trace", nargs="?", const="-", metavar="FILE",
                   help="write a JSON-lines step trace to FILE (default: stderr)")
    p.add_argument("--trace-format", choices=TRACE_FORMATS, default="native",
                   help="native (default) or eip3155: EIP-3155 field names, compute as gas")
    p.add_argument("--canonical", action="store_true", help="print canonical JSON (one line)")
    p.add_argument("--vector-id", dest="vector_id", metavar="ID",
                   help="with a .jsonl file of several vectors: the one to run")
    add_engine(p)
    add_spec_version(p, "the version the execution runs under (and of the containers of .rasm files)")
    p.set_defaults(func=_cmd_run)
    group_options(p, RUN_OPTION_GROUPS)


def _cmd_run(args) -> int:
    if Path(args.file).suffix == ".jsonl":   # a vector file (rtwo-vm symbolic writes them)
        from rtwo_vm.commands.symbolic.run import run_vector
        return run_vector(args)
    if args.vector_id is not None:
        raise CliError("--vector-id needs a vector file (FILE.jsonl)")
    run = engine_of(args.engine)     # an engine that cannot run is refused before anything
    address = parse_word(args.address, "--address")
    version = args.spec_version
    contracts = read_state_file(args.state, version) if args.state else {}
    for item in args.contract or ():
        addr_text, path = parse_assignment(item, "--contract")
        contracts[parse_word(addr_text, "--contract address")] = Contract(read_code(path, version))
    storage = {}
    for item in args.storage or ():
        key, value = parse_assignment(item, "--storage")
        storage[parse_word(key, "--storage key")] = parse_word(value, "--storage value")
    contracts[address] = Contract(read_code(args.file, version), storage)
    message = Message(address, parse_word(args.caller, "--caller"), call_data(args, version))
    seed = parse_hex(args.seed, "--seed") if args.seed else bytes(32)
    if len(seed) != 32:
        raise CliError("--seed must be 32 bytes of hex")
    context = Context(parse_word(args.time, "--time"), seed)
    limits = Limits(**{name: parse_count(getattr(args, name), f"--{name.replace('_', '-')}")
                       for name in Limits.DIMENSIONS if getattr(args, name) is not None})
    policy = policy_of(args)
    with contextlib.ExitStack() as stack:
        tracer, trace_file = None, None
        if args.trace == "-":
            tracer = tracer_for(args.trace_format, sys.stderr)
        elif args.trace is not None:
            trace_file = stack.enter_context(_TraceFile(args.trace))
            tracer = tracer_for(args.trace_format, trace_file)
        result = run(WorldState(contracts), message, context, policy, limits, version=version,
                     tracer=tracer)
        if trace_file is not None and trace_file.error is not None:
            raise CliError(f"cannot write {args.trace}: {trace_file.error}")
    doc = result.to_json()
    if args.canonical:   # the canonical result of chapter 7.5, as it stands
        print(canonical(doc))
    else:   # output (returned or revert data) that is whole words, shown as words too
        words = hex_words(result.output, version)
        shown = doc if words is None else {**doc, "output_words": words}
        refused = _refused(result, contracts[address].code, policy, version)
        if refused is not None:   # binding refused an instruction (the result's error_pc is null)
            shown["refused_instruction"] = refused
        print(json.dumps(shown, indent=2, sort_keys=True))
    return 0 if result.ok else 1


def _refused(result, code: bytes, policy, version: str) -> dict | None:
    """The instruction policy binding refused in the entry contract ({"mnemonic", "offset"}),
    found as binding finds it (the first refused in offset order), when the run ended with
    that refusal; the result of chapter 7.5 names only the code (nothing ran)."""
    if result.status != "violation" or result.error_pc is not None:
        return None
    from reference_vm.errors import VMError
    from reference_vm.policy import first_refusal
    from reference_vm.program import load_program
    from reference_vm.rules import rules
    try:
        table = rules(version)
        found = first_refusal(load_program(code, table).code, policy, table.spec)
    except VMError:
        return None
    if found is None or found.error != result.error:
        return None
    return {"mnemonic": found.mnemonic, "offset": found.offset}


class _TraceFile:
    """The --trace file, streamed to a fresh temporary name beside FILE and renamed over it
    when the run ends (spec.files.atomic_writer): a symlink at FILE is refused, and a failed
    run or write keeps an older FILE whole and leaves no temporary file. A failed write (a
    full disk) is remembered rather than raised inside the execution, which would turn it
    into INTERNAL_ERROR; the command then fails with a one-line error."""

    def __init__(self, path: str):
        self.path = path
        self.error: str | None = None

    def __enter__(self) -> "_TraceFile":
        try:
            self._writer = files.atomic_writer(files.output_file(self.path, "trace"), "w")
            self._file = self._writer.__enter__()
        except files.FileRefused as err:
            raise CliError(str(err)) from None
        except (OSError, ValueError) as err:
            raise CliError(f"cannot write {self.path}: {getattr(err, 'strerror', None) or err}") from None
        return self

    def write(self, text: str) -> None:
        if self.error is None:
            try:
                self._file.write(text)
            except OSError as err:
                self.error = err.strerror or str(err)

    def __exit__(self, kind, value, tb) -> None:
        if kind is None and self.error is not None:   # abandon the temporary file
            kind, value = CliError, CliError(self.error)
        try:
            self._writer.__exit__(kind, value, tb)
        except files.FileRefused as err:
            raise CliError(str(err)) from None
        except OSError as err:   # the final flush or fsync (a full disk)
            raise CliError(f"cannot write {self.path}: {err.strerror or err}") from None
