"""Reading the CLI's inputs: code files, hex, words, state files. Errors are CliError.

Everything read here is hostile: each file is read with a bound on its size (from the spec's
limits where the spec has one), parsed with bounded depth, and any way it can be wrong ends
as a CliError with one line naming the file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import spec
from spec import files
from reference_vm import AssemblyError, Contract, Policy, assemble
from reference_vm.assembler import parse_number
from reference_vm.container import HEADER_SIZE, MAGIC

ASSEMBLY_SUFFIXES = (".rasm", ".asm", ".s")

# The largest container any version admits (chapter 3.1): a binary input is refused beyond it.
MAX_CONTAINER = max(HEADER_SIZE + m["code_size"] + m["data_size"]
                    for m in (spec.load(v.version).limits["machine"] for v in spec.versions()))
# Hex text of the largest container, with room for whitespace between the digits.
MAX_HEX_TEXT = 4 * MAX_CONTAINER + 2
# Assembly has no spec bound of its own (comments, .zero); this one is generous.
MAX_ASSEMBLY = 64 * MAX_CONTAINER
# A JSON state or storage file (--state, --storage-file): room for millions of slots.
MAX_JSON = 256 * 1024 * 1024
MAX_JSON_DEPTH = 64
_HEX_TEXT = re.compile(rb"(0x)?[0-9a-fA-F\s]+")


class CliError(Exception):
    """A bad argument or input file: the CLI prints the message on one line and exits 2."""


def _read_prefix(path: str, count: int) -> bytes:
    """At most ``count`` bytes of the regular file ``path`` through spec.files (a FIFO, a
    device or a /proc file is refused before a byte is read, and opening one never waits)."""
    try:
        return files.read_prefix(path, count, "CLI input")
    except files.FileRefused as err:
        raise CliError(str(err).splitlines()[0]) from None


def read_bounded(path: str, limit: int, what: str = "") -> bytes:
    """The bytes of ``path``, reading at most ``limit`` + 1 of them; refused when larger."""
    blob = _read_prefix(path, limit + 1)
    if len(blob) > limit:
        raise CliError(f"{path}: larger than the {limit} bytes {what or 'allowed'}")
    return blob


def _looks_like_text(blob: bytes) -> bool:
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\t\r\n\f\v" for ch in text)


def spec_version(text: str) -> str:
    """argparse type of ``--spec-version``: a version of spec/versions.toml (else a usage
    error: one line, exit 2)."""
    import argparse
    try:
        return spec.version(text).version
    except spec.VersionError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_spec_version(parser, what: str = "the spec version to use", *aliases: str) -> None:
    """``--spec-version V`` on a command, by default the newest version (spec/versions.toml's
    last): the value then flows through the command's calls, never through a global.
    ``aliases``: other spellings of the option (``spec show --version``)."""
    parser.add_argument("--spec-version", *aliases, dest="spec_version", type=spec_version,
                        default=spec.latest(), metavar="VERSION",
                        help=f"{what} (default: the newest, {spec.latest()}; "
                             f"versions: {', '.join(spec.names())})")


def read_code(path: str, version: str) -> bytes:
    """Container bytes from an assembly file (.rasm, .asm, .s: assembled into a container of
    spec version ``version``), a hex text file or a binary container (taken as it is: its
    header names its version). Any other text file is refused, not run as a (truncated)
    container."""
    if Path(path).suffix in ASSEMBLY_SUFFIXES:
        blob = read_bounded(path, MAX_ASSEMBLY, "an assembly file may hold")
        try:
            return assemble(blob.decode("utf-8"), version)
        except UnicodeDecodeError:
            raise CliError(f"{path}: assembly must be UTF-8 text") from None
        except AssemblyError as err:
            raise CliError(f"{path}: {err}") from None
        except RecursionError:
            raise CliError(f"{path}: assembly too deeply nested") from None
    # At most one byte past the largest hex text is read; a binary container is then held
    # to the largest the spec admits (hex digits with whitespace take more bytes).
    blob = _read_prefix(path, MAX_HEX_TEXT + 1)
    binary = blob[:len(MAGIC)] == MAGIC or not _looks_like_text(blob[:4096])
    limit = MAX_CONTAINER if binary else MAX_HEX_TEXT
    if len(blob) > limit:
        raise CliError(f"{path}: larger than the largest container ({MAX_CONTAINER} bytes, "
                       "chapter 3.1)" + ("" if binary else " written as hex"))
    if binary:
        return blob
    text = blob.strip()
    if text and _HEX_TEXT.fullmatch(text):
        code = parse_hex(text.decode(), f"{path}: hex")
        if len(code) > MAX_CONTAINER:
            raise CliError(f"{path}: larger than the largest container ({MAX_CONTAINER} bytes, "
                           "chapter 3.1)")
        return code
    raise CliError(f"{path}: a text file that is neither assembly (name it .rasm) nor hex")


def parse_hex(text: str, what: str = "hex") -> bytes:
    cleaned = "".join(text.split()).removeprefix("0x")
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise CliError(f"{what} is not valid hex: {text[:40]!r}") from None


def parse_word(text: str, what: str) -> int:
    try:
        value = parse_number(text)
    except ValueError:
        raise CliError(f"{what} must be a number, got {text[:40]!r}") from None
    if not 0 <= value < 1 << 64:
        raise CliError(f"{what} must be a 64-bit unsigned word, got {text[:40]}")
    return value


def parse_count(text: str, what: str) -> int:
    try:
        value = parse_number(text)
    except ValueError:
        raise CliError(f"{what} must be an integer, got {text[:40]!r}") from None
    if value < 0:
        raise CliError(f"{what} must not be negative, got {text[:40]}")
    return value


def parse_assignment(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise CliError(f"{what} must look like KEY=VALUE, got {text[:40]!r}")
    return key, value


def read_json(path: str, limit: int = MAX_JSON) -> Any:
    """A JSON document of at most ``limit`` bytes and MAX_JSON_DEPTH levels of nesting."""
    blob = read_bounded(path, limit, "a JSON input may hold")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    if _depth(text) > MAX_JSON_DEPTH:
        raise CliError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as err:  # JSONDecodeError, too many digits
        raise CliError(f"{path}: not valid JSON: {str(err).splitlines()[0][:120]}") from None


def _depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings (a bound checked before parsing)."""
    depth = deepest = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        ch = token.group()
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _word_value(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise CliError(f"{what} must be a number or a hex string, got {type(value).__name__}")
    return parse_word(str(value), what)


def parse_storage(doc: Any, what: str) -> dict[int, int]:
    """A storage object {KEY: VALUE}, keys and values words as text (or JSON integers)."""
    if not isinstance(doc, dict):
        raise CliError(f"{what} must be an object mapping keys to values")
    return {parse_word(k, f"{what}: key"): _word_value(v, f"{what}: value of {k[:40]}")
            for k, v in doc.items()}


def read_storage_file(path: str) -> dict[int, int]:
    """deploy --storage-file: {"KEY": "VALUE", ...} (or {"storage": {...}})."""
    doc = read_json(path)
    if isinstance(doc, dict) and set(doc) == {"storage"}:
        doc = doc["storage"]
    return parse_storage(doc, path)


def _inside(root: Path, name: str, what: str) -> str:
    """``root / name`` when it stays inside ``root`` (links resolved): a file names data
    beside it, never a path elsewhere on the machine."""
    target = root / name
    try:
        inside = target.resolve().is_relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):   # a NUL byte, a link loop
        inside = False
    if Path(name).is_absolute() or not inside:
        raise CliError(f"{what}: {name[:80]!r} is not a file inside {root} (the state file's folder)")
    return str(target)


def read_state_file(path: str, version: str, base: Path | None = None) -> dict[int, Contract]:
    """A JSON pre-state: {"contracts": {"0xADDR": {"code": FILE-or-HEX, "storage": {K: V}}}}."""
    doc = read_json(path)
    contracts = doc.get("contracts") if isinstance(doc, dict) else None
    if not isinstance(contracts, dict):
        raise CliError(f"{path}: expected an object with a \"contracts\" object")
    out = {}
    root = base or Path(path).parent
    for addr_text, body in contracts.items():
        address = parse_word(addr_text, f"{path}: contract address")
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            raise CliError(f"{path}: contract {addr_text[:40]} needs a \"code\" string")
        code_ref = body["code"]
        code = (parse_hex(code_ref, f"{path}: code of {addr_text}") if code_ref.startswith("0x")
                else read_code(_inside(root, code_ref, f"{path}: code of {addr_text[:40]}"), version))
        storage = parse_storage(body.get("storage", {}), f"{path}: storage of {addr_text[:40]}")
        out[address] = Contract(code, storage)
    return out


def operation_names(names: list[str] | None, option: str, version: str) -> tuple[str, ...] | None:
    """Mnemonics (any case) and instruction types (any case) of spec version ``version`` for
    --forbid/--allow, spelled as the spec spells them; an unknown name is a usage error, not a
    run-time refusal."""
    if names is None:
        return None
    table = spec.load(version)
    types = {t.lower(): t for t in table.instruction_types}
    out = []
    for name in names:
        if name.upper() in table.by_mnemonic:
            out.append(name.upper())
        elif name.lower() in types:
            out.append(types[name.lower()])
        else:
            raise CliError(f"{option} {name[:40]!r}: not a mnemonic or instruction type "
                           f"in spec {version} (types: {', '.join(sorted(types.values()))}; "
                           f"mnemonics: rtwo-vm spec opcodes --spec-version {version})")
    return tuple(out)


def instruction_name(name: str | None, what: str, version: str):
    """The instruction row of spec version ``version`` named by a mnemonic (any case) or an
    opcode number."""
    table = spec.load(version)
    if not name:
        raise CliError(f"{what} needs a mnemonic or an opcode (e.g. ADD or 0x01)")
    ins = table.by_mnemonic.get(name.upper())
    if ins is None:
        try:
            ins = table.by_opcode.get(parse_number(name))
        except ValueError:
            ins = None
    if ins is None:
        raise CliError(f"no instruction {name[:40]!r} in spec {version} "
                       f"(rtwo-vm spec opcodes --spec-version {version} lists them)")
    return ins


# -- argparse types for numeric options: finite, and positive or not negative as named ------
# nan and inf are usage errors everywhere (argparse prints the message and exits 2).

def _number(text: str, kind, what: str):
    import argparse
    import math
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} expected, got {text[:40]!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text[:40]!r}")
    return value


def finite_float(text: str) -> float:
    """Any finite number (every float option of every command: see parsing.harden)."""
    return _number(text, float, "a number")


def positive_float(text: str) -> float:
    """A finite number above 0 (seconds, rates)."""
    import argparse
    value = _number(text, float, "a number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer of at least 1 (counts, sizes)."""
    import argparse
    value = _number(text, int, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    """An integer of at least 0 (0 disables: passes, samples)."""
    import argparse
    value = _number(text, int, "an integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return value


def policy_of(args) -> Policy:
    """The determinism policy that ``rtwo-vm run``'s policy options name (and every command
    that takes them: symbolic, equivalence), with names of ``args.spec_version``."""
    return Policy(time_access="allowed" if args.allow_time else "forbidden",
                  randomness="seeded" if args.allow_randomness else "forbidden",
                  external_call="forbidden" if args.forbid_calls else "allowed",
                  storage_access=args.storage_access,
                  allowed_operations=operation_names(args.allow, "--allow", args.spec_version),
                  forbidden_operations=operation_names(args.forbid or [], "--forbid",
                                                       args.spec_version) or ())
