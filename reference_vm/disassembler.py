"""Container bytes to RTWO assembly that assembles back to the same bytes.

Jump targets that land on instructions get labels ``L<offset>``; PUSHn keep their explicit
size; bytes that do not decode (undefined opcodes, truncated immediates) are written as
``.byte`` so that even invalid code round-trips. Only the container header must be valid.
"""

from __future__ import annotations

import spec
from reference_vm import container
from reference_vm.errors import InvalidCode
from reference_vm.rules import rules as rules_of

HEX_LINE = 32


def _decode_lenient(code: bytes, table) -> list[tuple[int, spec.Instruction | None, int]]:
    out: list[tuple[int, spec.Instruction | None, int]] = []
    pc = 0
    while pc < len(code):
        ins = table.get(code[pc])
        if ins is None or pc + ins.size > len(code):
            out.append((pc, None, code[pc]))
            pc += 1
            continue
        out.append((pc, ins, int.from_bytes(code[pc + 1:pc + ins.size], "little")))
        pc += ins.size
    return out


def _label(offset: int) -> str:
    return f"L{offset:04x}"


def disassemble(blob: bytes, *, offsets: bool = True) -> str:
    """Assembly text for a container, decoded by the instruction set of the version its header
    names. Raises InvalidCode if the header is invalid or names no version of the spec."""
    names = {v.number: v.version for v in spec.versions()}
    version = names.get((blob[4], blob[5])) if len(blob) >= 6 and blob[:4] == container.MAGIC else None
    if version is None:
        container.parse(blob, rules_of(spec.versions()[0].version))   # the header's own error
        raise InvalidCode("UNSUPPORTED_VERSION")
    rules = rules_of(version)
    parsed = container.parse(blob, rules)
    decoded = _decode_lenient(parsed.code, rules.instruction_set(parsed.version))
    boundaries = {pc for pc, ins, _ in decoded if ins is not None}
    targets = {imm for _, ins, imm in decoded
               if ins is not None and ins.immediate_kind == "jump_target" and imm in boundaries}
    lines = [".code"]
    for pc, ins, imm in decoded:
        if pc in targets:
            lines.append(f"{_label(pc)}:")
        if ins is None:
            text = f".byte 0x{imm:02x}"
        elif ins.immediate_kind == "none":
            text = ins.mnemonic.lower()
        elif ins.immediate_kind == "jump_target":
            text = f"{ins.mnemonic.lower()} {_label(imm) if imm in targets else imm}"
        else:
            text = f"{ins.mnemonic.lower()} {imm if imm < 65536 else hex(imm)}"
        lines.append(f"    {text:<28}; {pc:#06x}" if offsets else f"    {text}")
    if parsed.data:
        lines.append(".data")
        for start in range(0, len(parsed.data), HEX_LINE):
            lines.append(f"    .hex {parsed.data[start:start + HEX_LINE].hex()}")
    return "\n".join(lines) + "\n"
