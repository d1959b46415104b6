"""RTWO assembly: text to a container of a given spec version (spec chapter 9, 9.8).

Syntax, one statement per line; ``;`` or ``#`` starts a comment::

    .code                 ; the code section (the default)
    start:                ; a label: the offset of what follows in its section
        push 42           ; the shortest PUSHn holding the value (negatives: two's complement)
        push1 7           ; an explicit PUSHn keeps its size
        push message      ; a label pushes its offset, always as PUSH4
        jumpi start       ; jump targets are labels or numbers
        stop
    .data                 ; the data section (DATACOPY, DATASIZE)
    message: .ascii "hi\\n"
        .byte 1, 0xff     ; raw bytes, also allowed in .code (to build invalid code)
        .word 1234        ; one little-endian word
        .hex 00ff10       ; bytes written as hex
        .zero 16          ; zero bytes

Numbers are decimal, 0x hex or 0b binary, with optional ``_`` separators and a leading ``-``.
Mnemonics and directives are case-insensitive; labels are case-sensitive. Each section holds
at most the machine's code_size and data_size bytes (spec/data/limits.toml): a statement that
would make its section larger fails, naming its line, before anything is allocated.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import spec
from reference_vm import container
from reference_vm.rules import rules as rules_of

LABEL = re.compile(r"^([A-Za-z_.$][A-Za-z0-9_.$]*):")
IDENT = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")
HEX2 = re.compile(r"[0-9A-Fa-f]{2}")


@dataclass(frozen=True)
class _Table:
    """What assembling for one version needs from its table."""

    by_mnemonic: dict[str, spec.Instruction]
    by_opcode: dict[int, spec.Instruction]
    pushes: dict[int, str]        # the PUSHn rows by immediate size
    push_sizes: tuple[int, ...]
    label_push: str               # a label is pushed as the PUSHn of a jump target's size,
    #                               so that offsets are known before labels are
    section_limits: dict[str, int]


@functools.cache
def _table(version: str) -> _Table:
    table = spec.load(version)
    pushes = {row.immediate_size: row.mnemonic for row in table.instructions
              if row.immediate_kind == "value"}
    label_size = next(r.immediate_size for r in table.instructions if r.immediate_kind == "jump_target")
    machine = table.limits["machine"]
    return _Table(dict(table.by_mnemonic), dict(table.by_opcode), pushes, tuple(sorted(pushes)),
                  pushes[label_size], {"code": machine["code_size"], "data": machine["data_size"]})
# Digits of a number literal: far more than any word needs, few enough to parse in no time.
MAX_NUMBER_DIGITS = 200


class AssemblyError(ValueError):
    """A line of assembly could not be assembled; the message names the line."""


@dataclass
class _Item:
    line: int
    section: str
    offset: int
    size: int
    kind: str            # "ins" or "bytes"
    opcode: int = 0
    operand: str | None = None
    raw: bytes = b""


def parse_number(text: str) -> int:
    if re.match(r"-?[0-9]", text.strip()) is None:  # `_1` is a name, never a number (9.6)
        raise ValueError(f"not a number: {text!r}")
    t = text.strip().replace("_", "").lower()
    if len(t) > MAX_NUMBER_DIGITS:
        raise ValueError(f"number too long: {text[:20]!r}...")
    negative = t.startswith("-")
    if negative:
        t = t[1:]
    if re.fullmatch(r"0x[0-9a-f]+", t):
        value = int(t, 16)
    elif re.fullmatch(r"0b[01]+", t):
        value = int(t, 2)
    elif re.fullmatch(r"[0-9]+", t):
        value = int(t)
    else:
        raise ValueError(f"not a number: {text!r}")
    return -value if negative else value


def _strip_comment(line: str) -> str:
    in_string = escaped = False
    for i, ch in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in ";#":
            return line[:i]
    return line


def _string_bytes(text: str) -> bytes:
    text = text.strip()
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        raise ValueError("expected a double-quoted string")
    body, out, i = text[1:-1], bytearray(), 0
    escapes = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, '"': 34}
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            nxt = body[i + 1:i + 2]
            if nxt == "x":
                digits = body[i + 2:i + 4]
                if not HEX2.fullmatch(digits):
                    raise ValueError("\\x needs exactly two hex digits")
                out.append(int(digits, 16))
                i += 4
                continue
            if nxt not in escapes:
                raise ValueError(f"unknown escape \\{nxt}")
            out.append(escapes[nxt])
            i += 2
            continue
        if ch == '"':
            raise ValueError('a " inside a string must be escaped as \\"')
        out.extend(ch.encode())
        i += 1
    return bytes(out)


def _directive_bytes(name: str, args: str, word_size: int, room: int) -> bytes:
    """The bytes of a directive, refused when more than ``room`` (what its section can
    still hold)."""
    if name == ".zero":
        count = parse_number(args)
        if count < 0:
            raise ValueError(".zero needs a count that is not negative")
        if count > room:
            raise ValueError(f".zero {count} does not fit: the section can hold {room} more bytes")
        return bytes(count)
    if name == ".ascii":
        return _string_bytes(args)
    if name == ".hex":
        return bytes.fromhex(args.replace(" ", "").removeprefix("0x"))
    values = [parse_number(a) for a in args.split(",") if a.strip()]
    if not values:
        raise ValueError(f"{name} needs at least one value")
    if name == ".byte":
        if any(not -128 <= v <= 255 for v in values):
            raise ValueError(".byte values must fit in a byte")
        return bytes(v & 0xFF for v in values)
    if name == ".word":
        mask = (1 << (8 * word_size)) - 1
        if any(not -(1 << (8 * word_size - 1)) <= v <= mask for v in values):
            raise ValueError(".word values must fit in a word")
        return b"".join((v & mask).to_bytes(word_size, "little") for v in values)
    raise ValueError(f"unknown directive {name}")


def _check_size(tables: _Table, section: str, used: int) -> None:
    if used > tables.section_limits[section]:
        raise ValueError(f"the .{section} section would hold {used} bytes, more than the "
                         f"{tables.section_limits[section]} a container allows")


def _push_size(tables: _Table, value: int, mask: int) -> int:
    v = value & mask
    return next(size for size in tables.push_sizes if v < 1 << (8 * size))  # the widest always fits


def assemble(source: str, version: str) -> bytes:
    """Assemble RTWO assembly into a container of spec version ``version``: its header names
    the version and only that version's mnemonics are known (9.8). Raises AssemblyError;
    spec.VersionError for an unknown version."""
    tables = _table(version)
    word = rules_of(version).word
    items: list[_Item] = []
    labels: dict[str, tuple[str, int]] = {}
    offsets = {"code": 0, "data": 0}
    section = "code"
    for number, full_line in enumerate(source.splitlines(), start=1):
        line = _strip_comment(full_line).strip()
        try:
            while (m := LABEL.match(line)) is not None:
                name = m.group(1)
                if name in labels:
                    raise ValueError(f"label {name!r} defined twice")
                labels[name] = (section, offsets[section])
                line = line[m.end():].strip()
            if not line:
                continue
            head, *tail = line.split(None, 1)
            head_lower, rest = head.lower(), (tail[0].strip() if tail else "")
            if head_lower in (".code", ".data"):
                if rest:
                    raise ValueError(f"{head_lower} takes no operand")
                section = head_lower[1:]
                continue
            if head_lower.startswith("."):
                raw = _directive_bytes(head_lower, rest, word.size,
                                       tables.section_limits[section] - offsets[section])
                items.append(_Item(number, section, offsets[section], len(raw), "bytes", raw=raw))
                offsets[section] += len(raw)
                _check_size(tables, section, offsets[section])
                continue
            if section != "code":
                raise ValueError("instructions belong in the .code section")
            item = _instruction(number, head.upper(), rest, tables, word.mask, offsets["code"])
            items.append(item)
            offsets["code"] += item.size
            _check_size(tables, "code", offsets["code"])
        except (ValueError, IndexError, StopIteration) as err:
            raise AssemblyError(f"line {number}: {err}") from None
    code, data = bytearray(), bytearray()
    for item in items:
        out = code if item.section == "code" else data
        try:
            out.extend(item.raw if item.kind == "bytes" else _encode(item, tables, labels))
        except ValueError as err:
            raise AssemblyError(f"line {item.line}: {err}") from None
    return container.build(bytes(code), bytes(data), spec.load(version).number)


def _instruction(line: int, mnemonic: str, operand: str, tables: _Table, mask: int, offset: int) -> _Item:
    if mnemonic == "PUSH":
        if not operand:
            raise ValueError("push needs an operand")
        if IDENT.match(operand):
            mnemonic = tables.label_push
        else:
            value = parse_number(operand)
            if not -((mask + 1) >> 1) <= value <= mask:
                bits = mask.bit_length()
                raise ValueError(f"push operand {operand} is outside the {bits}-bit word "
                                 f"(from -2^{bits - 1} to 2^{bits}-1)")
            mnemonic = tables.pushes[_push_size(tables, value, mask)]
    ins = tables.by_mnemonic.get(mnemonic)
    if ins is None:
        raise ValueError(f"unknown mnemonic {mnemonic.lower()!r}")
    if ins.immediate_size and not operand:
        raise ValueError(f"{mnemonic.lower()} needs an operand")
    if not ins.immediate_size and operand:
        raise ValueError(f"{mnemonic.lower()} takes no operand")
    return _Item(line, "code", offset, ins.size, "ins", opcode=ins.opcode, operand=operand or None)


def _encode(item: _Item, tables: _Table, labels: dict[str, tuple[str, int]]) -> bytes:
    ins = tables.by_opcode[item.opcode]
    if item.operand is None:
        return bytes([ins.opcode])
    if IDENT.match(item.operand):
        if item.operand not in labels:
            raise ValueError(f"undefined label {item.operand!r}")
        section, value = labels[item.operand]
        if ins.immediate_kind == "jump_target" and section != "code":
            raise ValueError(f"jump target {item.operand!r} is a data label")
    else:
        value = parse_number(item.operand)
    limit = 1 << (8 * ins.immediate_size)
    if ins.immediate_kind == "value" and value < 0 and value >= -(limit // 2):
        value &= limit - 1
    if not 0 <= value < limit:
        raise ValueError(f"operand {item.operand} does not fit {ins.mnemonic.lower()}")
    return bytes([ins.opcode]) + value.to_bytes(ins.immediate_size, "little")
