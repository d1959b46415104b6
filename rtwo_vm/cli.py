"""rtwo-vm: assemble, disassemble, run and inspect RTWO VM contracts.

Exit codes: 0 success; 1 the VM ran and the outcome was not success (the result is still
printed); 2 a bad argument or input (one line on stderr, nothing else done); 70 a bug (an
unexpected exception, reported on one line instead of a traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import NoReturn

import spec
from spec import files
from reference_vm import (
    Context, Contract, Limits, Message, WorldState, disassemble, execute,
)
from reference_vm.errors import VMError
from reference_vm.result import canonical
from reference_vm.trace import FORMATS as TRACE_FORMATS, tracer_for
from rtwo_vm.inputs import (
    CliError, add_spec_version, parse_assignment, parse_count, parse_hex,
    parse_word, policy_of, read_code, read_state_file,
)
from rtwo_vm.parsing import RUN_OPTION_GROUPS, group_commands, group_options, harden

INTERNAL_EXIT = 70  # EX_SOFTWARE: an unexpected exception, never an input error
DEFAULT_ADDRESS = "0x100"
DEFAULT_CALLER = "0"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other input error
        raise CliError(message)


def _cmd_asm(args) -> int:
    blob = read_code(args.file, args.spec_version)
    if args.hex or args.output == "-":
        print(blob.hex())
        return 0
    out = Path(args.output) if args.output else Path(args.file).with_suffix(".rtwo")
    try:   # a temporary name beside it, renamed: a failed write keeps the old file whole
        files.atomic_write(files.output_file(out, "container"), blob)
    except files.FileRefused as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"cannot write {out}: {err.strerror or err}") from None
    print(f"{out}: {len(blob)} bytes")
    return 0


def _cmd_disasm(args) -> int:
    blob = read_code(args.file, spec.latest())   # a .rasm file: assembled as the newest version
    try:
        sys.stdout.write(disassemble(blob, offsets=not args.no_offsets))
    except VMError as err:
        raise CliError(f"{args.file}: not a valid container: {err.code}") from None
    return 0


def _cmd_run(args) -> int:
    if Path(args.file).suffix == ".jsonl":   # a vector file (rtwo-vm symbolic writes them)
        from rtwo_vm.symbolic_cli import run_vector
        return run_vector(args)
    if args.vector_id is not None:
        raise CliError("--vector-id needs a vector file (FILE.jsonl)")
    if args.engine == "native":        # an optional extra: without it, refuse before anything
        import native_vm
        if native_vm.missing():
            raise CliError(native_vm.missing())
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
    message = Message(address, parse_word(args.caller, "--caller"),
                      parse_hex(args.calldata, "--calldata"))
    seed = parse_hex(args.seed, "--seed") if args.seed else bytes(32)
    if len(seed) != 32:
        raise CliError("--seed must be 32 bytes of hex")
    context = Context(parse_word(args.time, "--time"), seed)
    limits = Limits(**{name: parse_count(getattr(args, name), f"--{name.replace('_', '-')}")
                       for name in Limits.DIMENSIONS if getattr(args, name) is not None})
    policy = policy_of(args)
    run = execute
    if args.engine == "compiled":
        from compiled_vm import execute as run
    elif args.engine == "native":
        import native_vm
        run = native_vm.execute
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
    print(canonical(doc) if args.canonical else _pretty(doc))
    return 0 if result.ok else 1


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


def _pretty(doc) -> str:
    import json
    return json.dumps(doc, indent=2, sort_keys=True)


def _cmd_examples(args) -> int:
    from rtwo_vm.examples import bundled_directory, run_directory
    runs = run_directory(Path(args.directory) if args.directory else bundled_directory(),
                         args.spec_version)
    if args.json:
        print(_pretty([{"scenario": r.scenario, "call": r.index, "result": r.result.to_json()}
                       for r in runs]))
        return 0
    head = f"{'scenario':<24} {'#':>2} {'status':<10} {'error':<24} {'compute':>9} {'pages':>5} {'st.units':>8} {'fee':>9}  output"
    print(head)
    print("-" * len(head))
    for r in runs:
        res = r.result
        out = res.output.hex()
        out = out if len(out) <= 32 else out[:29] + "..."
        print(f"{r.scenario:<24} {r.index:>2} {res.status:<10} {res.error or '-':<24} "
              f"{res.usage.compute:>9} {res.usage.memory_pages:>5} {res.usage.storage_units:>8} "
              f"{res.fee:>9}  0x{out}")
    print(f"{len(runs)} calls in {len({r.scenario for r in runs})} scenarios")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rtwo-vm", description=__doc__.splitlines()[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"rtwo-vm 1.1.0 (spec versions {', '.join(spec.names())})")
    # A command that runs other commands (check) calls this entry point; it never imports the CLI.
    parser.set_defaults(cli_main=main)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("asm", help="assemble a .rasm file into a container")
    p.add_argument("file", help=".rasm assembly file")
    p.add_argument("-o", "--output", help="output path (default: FILE with .rtwo; - for hex on stdout)")
    p.add_argument("--hex", action="store_true", help="print the container as hex instead")
    add_spec_version(p, "the version of the container written, whose mnemonics are known")
    p.set_defaults(func=_cmd_asm)

    p = sub.add_parser("disasm", help="disassemble a container (binary or hex file)")
    p.add_argument("file", help="container: binary or hex text")
    p.add_argument("--no-offsets", action="store_true", help="omit the offset comments")
    p.set_defaults(func=_cmd_disasm)

    p = sub.add_parser("run", help="run a contract and print the result as JSON")
    p.add_argument("file", help=".rasm assembly, hex text or a binary container; or a .jsonl "
                                "file of vectors, whose request is run as it stands")
    p.add_argument("--calldata", default="0x", help="call data as hex")
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
    p.add_argument("--engine", choices=["reference", "compiled", "native"], default="reference",
                   help="the reference interpreter (default), the compiled engine (compiled_vm) or "
                        "the native tier (native_vm; needs the native extra: llvmlite)")
    add_spec_version(p, "the version the execution runs under (and of the containers of .rasm files)")
    p.set_defaults(func=_cmd_run)
    run_parser = p

    p = sub.add_parser("examples", help="run the example scenarios and print their results")
    p.add_argument("directory", nargs="?", default=None,
                   help="directory of scenario files (*.toml; default: the bundled examples)")
    p.add_argument("--json", action="store_true", help="print full results as JSON")
    add_spec_version(p, "the version of scenarios that name none")
    p.set_defaults(func=_cmd_examples)


    # Each tool adds its own commands (rtwo_vm/commands/*.py, each with register(sub)), so
    # that heavy imports (z3, sqlite) happen only when their command runs.
    for module in _command_modules():
        module.register(sub)
    harden(parser)
    group_commands(parser, sub)
    group_options(run_parser, RUN_OPTION_GROUPS)
    return parser


def _command_modules():
    import importlib
    import pkgutil

    import rtwo_vm.commands as commands
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__))
    return [importlib.import_module(f"rtwo_vm.commands.{name}") for name in names]


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except CliError as err:
        print(f"rtwo-vm: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rtwo-vm: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except RecursionError:
        print("rtwo-vm: error: input nested too deeply", file=sys.stderr)
        return 2
    except MemoryError:
        print("rtwo-vm: error: input too large for memory", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - the last line of defence: still one line
        # Every input error is meant to be a CliError above; reaching this is a bug, said so
        # in one line with its own exit status rather than as a traceback.
        detail = str(err).splitlines()[0][:200] if str(err) else ""
        print(f"rtwo-vm: internal error (a bug; please report it): {type(err).__name__}: "
              f"{detail}", file=sys.stderr)
        return INTERNAL_EXIT


if __name__ == "__main__":
    sys.exit(main())
