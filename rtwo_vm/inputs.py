"""Reading the CLI's inputs: code files, hex, words, state files. Errors are CliError."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reference_vm import AssemblyError, Contract, assemble
from reference_vm.assembler import parse_number

ASSEMBLY_SUFFIXES = (".rasm", ".asm", ".s")


class CliError(Exception):
    """A bad argument or input file: the CLI prints the message on one line and exits 2."""


def read_code(path: str) -> bytes:
    """Container bytes from an assembly file, a hex text file or a binary container."""
    p = Path(path)
    try:
        blob = p.read_bytes()
    except OSError as err:
        raise CliError(f"cannot read {path}: {err.strerror or err}") from None
    if p.suffix in ASSEMBLY_SUFFIXES:
        try:
            return assemble(blob.decode("utf-8"))
        except UnicodeDecodeError:
            raise CliError(f"{path}: assembly must be UTF-8 text") from None
        except AssemblyError as err:
            raise CliError(f"{path}: {err}") from None
    text = blob.strip()
    if text and re.fullmatch(rb"(0x)?[0-9a-fA-F\s]+", text):
        return parse_hex(text.decode())
    return blob


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
        raise CliError(f"{what} must be a number, got {text!r}") from None
    if not 0 <= value < 1 << 64:
        raise CliError(f"{what} must be a 64-bit unsigned word, got {text}")
    return value


def parse_count(text: str, what: str) -> int:
    try:
        value = parse_number(text)
    except ValueError:
        raise CliError(f"{what} must be an integer, got {text!r}") from None
    if value < 0:
        raise CliError(f"{what} must not be negative, got {text}")
    return value


def parse_assignment(text: str, what: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key or not value:
        raise CliError(f"{what} must look like KEY=VALUE, got {text!r}")
    return key, value


def read_state_file(path: str, base: Path | None = None) -> dict[int, Contract]:
    """A JSON pre-state: {"contracts": {"0xADDR": {"code": FILE-or-HEX, "storage": {K: V}}}}."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise CliError(f"cannot read {path}: {err.strerror or err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CliError(f"{path}: not valid JSON: {err}") from None
    contracts = doc.get("contracts") if isinstance(doc, dict) else None
    if not isinstance(contracts, dict):
        raise CliError(f"{path}: expected an object with a \"contracts\" object")
    out = {}
    root = base or Path(path).parent
    for addr_text, body in contracts.items():
        address = parse_word(addr_text, f"{path}: contract address")
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            raise CliError(f"{path}: contract {addr_text} needs a \"code\" string")
        code_ref = body["code"]
        code = (parse_hex(code_ref, f"{path}: code of {addr_text}") if code_ref.startswith("0x")
                else read_code(str(root / code_ref)))
        storage_doc = body.get("storage", {})
        if not isinstance(storage_doc, dict):
            raise CliError(f"{path}: storage of {addr_text} must be an object")
        storage = {parse_word(k, f"{path}: storage key"): parse_word(str(v), f"{path}: storage value")
                   for k, v in storage_doc.items()}
        out[address] = Contract(code, storage)
    return out


# -- argparse types for numeric options: finite, and positive or not negative as named ------
# nan and inf are usage errors everywhere (argparse prints the message and exits 2).

def _number(text: str, kind, what: str):
    import argparse
    import math
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} expected, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


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
