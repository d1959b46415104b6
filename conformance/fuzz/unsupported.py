"""What an implementation says it does not support: the instruction or request feature its
``UNSUPPORTED_INPUT`` message names (chapter 11.5), so that a partial VM's unsupported answers
fall into one bucket per missing element instead of one bucket for all of them.

The message is adapter output, hence hostile: only its first MESSAGE_CHARS characters are
read, and a name is accepted only when it is one the project knows — a mnemonic of the
instruction table of any version (``spec.load(version)``; upper case, as the table writes it, so the English "not"
is never NOT), an opcode number of the table after the word "opcode" or "instruction"
(``opcode 0x30``, ``opcode 48``) or as a lone two-digit hex byte (``0x30``, not after "offset"
or "pc"), or a field name of the request below its top-level groups (``allowed_operations``,
``storage_access``, ``compute``: the deepest one named). So the classes made from messages are bounded by the table and the request
form. The first instruction named wins; a feature counts only when no instruction is named; a
message naming neither stays the single unnamed class.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from conformance.fuzz.program import FuzzInput, known_mnemonics, row_of_opcode

UNSUPPORTED = "error:UNSUPPORTED_INPUT"    # the class of an unsupported answer naming nothing known
MESSAGE_CHARS = 200
_TOKEN = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+|[A-Za-z_][A-Za-z0-9_]*")
_OPCODE_WORDS = ("opcode", "instruction", "op")
_NOT_OPCODE_WORDS = ("offset", "pc", "at", "position", "size", "length")


def _depths(value: Any, depth: int, out: dict[str, int]) -> dict[str, int]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if isinstance(key, str) and not key.startswith("0x"):
                out[key] = max(out.get(key, 0), depth)
                _depths(inner, depth + 1, out)
    return out


# The request's field names (as the fuzzer writes a request) with their nesting depth; the
# top-level groups (a bare "message" or "policy" says little) and words as short as "to" are left out.
FEATURES = {k: d for k, d in _depths(FuzzInput(contracts={}).vector_input(), 1, {}).items() if d >= 2 and len(k) > 2}


def _number(token: str) -> int | None:
    try:
        return int(token, 16) if token[:2].lower() == "0x" else int(token)
    except ValueError:
        return None


def named(message: Any) -> str | None:
    """The instruction mnemonic or request field an unsupported message names, else None."""
    if not isinstance(message, str):
        return None
    tokens = _TOKEN.findall(message[:MESSAGE_CHARS])
    feature, depth = None, 0
    for i, token in enumerate(tokens):
        before = tokens[i - 1].lower() if i else ""
        if token in known_mnemonics():
            return token
        if token[0].isdigit():
            value = _number(token)
            lone_byte = len(token) == 4 and token[:2].lower() == "0x" and before not in _NOT_OPCODE_WORDS
            found = row_of_opcode(value) if value is not None else None
            if found is not None and (before in _OPCODE_WORDS or lone_byte):
                return found.mnemonic
        elif FEATURES.get(token, 0) > depth:
            feature, depth = token, FEATURES[token]
    return feature


def unsupported_class(message: Any) -> str:
    """The divergence class of an UNSUPPORTED_INPUT answer: split by what it names."""
    name = named(message)
    return f"{UNSUPPORTED}:{name}" if name else UNSUPPORTED


def element(kind: str) -> str | None:
    """For an unsupported class, what it names ("" when nothing); None for any other class."""
    if kind == UNSUPPORTED:
        return ""
    if kind.startswith(UNSUPPORTED + ":"):
        return kind[len(UNSUPPORTED) + 1:]
    return None


def element_kind(name: str) -> str:
    return "instruction" if name in known_mnemonics() else "feature" if name else "unnamed"


def blocking_key(bucket: Mapping[str, Any]) -> tuple:
    """The report's order of unsupported sub-buckets: most requests first, then by name."""
    return (bucket["impl"], -bucket["count"], element(bucket["class"]) or "~", bucket["first_index"])


def summary(buckets: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per implementation, its unsupported sub-buckets, most blocking first: what each names
    (an instruction, a request feature, or nothing known), how many requests, the finding."""
    out = []
    for b in sorted((b for b in buckets if element(b["class"]) is not None), key=blocking_key):
        name = element(b["class"]) or ""
        f = b.get("finding") or {}
        out.append({"impl": b["impl"], "name": b.get("name", b["impl"]), "names": name or None,
                    "element": element_kind(name), "count": b["count"], "class": b["class"],
                    "vector_id": f.get("vector_id"), "size": f.get("size"), "minimal": f.get("minimal")})
    return out


def summary_text(entries: list[Mapping[str, Any]]) -> list[str]:
    lines: list[str] = []
    for impl in sorted({e["impl"] for e in entries}):
        mine = [e for e in entries if e["impl"] == impl]
        total = sum(e["count"] for e in mine)
        lines.append(f"unsupported by {mine[0]['name']}: {total:,} requests in {len(mine)} sub-buckets by what it "
                     "names, most blocking first:")
        width = max(len(e["names"] or "(unnamed)") for e in mine)
        for e in mine:
            label = (e["names"] or "(unnamed)").ljust(width)
            what = "" if e["element"] == "instruction" else f" ({e['element']})"
            shrunk = ""
            if e["vector_id"]:
                shrunk = (f"  -> {e['vector_id']}, {e['size']} instructions"
                          + ("" if e["minimal"] is None else ", minimal" if e["minimal"] else ", budget spent"))
            lines.append(f"  {label} {e['count']:>7,}{what}{shrunk}")
    return lines
