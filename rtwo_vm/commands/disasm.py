"""``rtwo-vm disasm FILE``: a container as assembly text, decoded by the instruction set of the
version its header names (chapter 9)."""

from __future__ import annotations

import sys

import spec
from reference_vm import disassemble
from reference_vm.errors import VMError
from rtwo_vm.arguments.inputs import CliError, read_code


def register(sub) -> None:
    p = sub.add_parser("disasm", help="disassemble a container (binary or hex file)")
    p.add_argument("file", help="container: binary or hex text")
    p.add_argument("--no-offsets", action="store_true", help="omit the offset comments")
    p.set_defaults(func=_cmd_disasm)


def _cmd_disasm(args) -> int:
    blob = read_code(args.file, spec.latest())   # a .rasm file: assembled as the newest version
    try:
        sys.stdout.write(disassemble(blob, offsets=not args.no_offsets))
    except VMError as err:
        raise CliError(f"{args.file}: not a valid container: {err.code}") from None
    return 0
