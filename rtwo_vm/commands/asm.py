"""``rtwo-vm asm FILE``: assemble a .rasm file into a container of one spec version (chapter
9), written beside it (``.rtwo``), to ``-o``, or printed as hex."""

from __future__ import annotations

from pathlib import Path

from spec import files
from rtwo_vm.arguments.inputs import CliError, add_spec_version, read_code


def register(sub) -> None:
    p = sub.add_parser("asm", help="assemble a .rasm file into a container")
    p.add_argument("file", help=".rasm assembly file")
    p.add_argument("-o", "--output", help="output path (default: FILE with .rtwo; - for hex on stdout)")
    p.add_argument("--hex", action="store_true", help="print the container as hex instead")
    add_spec_version(p, "the version of the container written, whose mnemonics are known")
    p.set_defaults(func=_cmd_asm)


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
