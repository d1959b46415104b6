"""rtwo-vm: assemble, disassemble, run and inspect RTWO VM contracts.

The entry point: every command is a module of rtwo_vm/commands/ (one command, one module or
package), registered here by declaration.

Exit codes: 0 success; 1 the VM ran and the outcome was not success (the result is still
printed); 2 a bad argument or input (one line on stderr, nothing else done); 70 a bug (an
unexpected exception, reported on one line instead of a traceback).
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

import spec
from rtwo_vm.arguments.inputs import CliError
from rtwo_vm.arguments.parsing import group_commands, harden

INTERNAL_EXIT = 70  # EX_SOFTWARE: an unexpected exception, never an input error


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other input error
        raise CliError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rtwo-vm", description=__doc__.splitlines()[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"rtwo-vm {_package_version()} (spec versions {', '.join(spec.names())})")
    # A command that runs other commands (check) calls this entry point; it never imports the CLI.
    parser.set_defaults(cli_main=main)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    # Every command is a module (or package) of rtwo_vm/commands/ with register(sub), so that
    # heavy imports (z3, sqlite) happen only when their command runs.
    for module in _command_modules():
        module.register(sub)
    harden(parser)
    group_commands(parser, sub)
    return parser


def _package_version() -> str:
    """The installed distribution's version (pyproject.toml's, written once)."""
    from importlib import metadata
    try:
        return metadata.version("rtwo-vm")
    except metadata.PackageNotFoundError:   # run from a checkout that was never installed
        return "(not installed)"


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
