"""A normalising recogniser of corpus requests: which published vector a (possibly blinded)
request was made from, and how its addresses were moved.

This is what an implementation written to pass would do against a blinded run (spec
chapter 11.8.4) — it is used by the test fixtures twice: the seeded-fault adapter finds the
vectors it targets with it, and the lookup adapter answers recognised requests from the
corpus with it, to show which transformations defeat which lookup.

A request is normalised by ignoring everything the blinding moves or adds: the context, the
limits, the storage, every contract but the entry one, the data sections, the code after the
last instruction reachable from offset 0, and every push operand equal to one of the
request's addresses. The published vectors with the same normal form are candidates; the one
consistent with the request (call data a prefix once address words are masked, limits no
lower, one contract more at most) and closest to it wins.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from typing import Any, Mapping, Sequence

import spec
from reference_vm import container
from reference_vm.decode import decode
from reference_vm.rules import rules

MASK = (1 << 64) - 1


def decoded(blob: bytes, version: str | None = None):
    """(container, instructions) of a container under spec ``version`` (default the newest,
    which runs the containers of every version); InvalidCode when it does not decode."""
    r = rules(version or spec.latest())
    parsed = container.parse(blob, r)
    return parsed, decode(parsed.code, r.instruction_set(parsed.version))


def exact_key(vector_input: Any) -> str:
    return json.dumps(vector_input, sort_keys=True, separators=(",", ":"))


def _word(text: Any) -> int | None:
    try:
        value = int(text, 16)
    except (TypeError, ValueError):
        return None
    return value if 0 <= value <= MASK else None


def addresses(vector_input: Mapping[str, Any]) -> frozenset[int]:
    found = [*vector_input["pre_state"]["contracts"], vector_input["message"]["to"], vector_input["message"]["caller"]]
    return frozenset(w for w in map(_word, found) if w is not None)


@functools.lru_cache(maxsize=16384)
def _reachable(code_hex: str, masked: frozenset[int]) -> str | None:
    """The code section up to its last instruction reachable from offset 0, with every push
    operand equal to an address masked; None when the container does not decode."""
    try:
        parsed, instructions = decoded(bytes.fromhex(code_hex[2:]))
    except Exception:  # noqa: BLE001 - invalid code is never blinded: its bytes are the key
        return None
    at = {d.offset: d for d in instructions}
    seen, todo, end = set(), [0] if instructions else [], 0
    while todo:
        offset = todo.pop()
        d = at.get(offset)
        if d is None or offset in seen:
            continue
        seen.add(offset)
        end = max(end, d.end)
        flow = d.instruction.flow
        if flow in ("next", "branch", "call_sub"):
            todo.append(d.end)
        if flow in ("jump", "branch", "call_sub"):
            todo.append(d.immediate)
    parts = []
    for d in instructions:
        if d.offset >= end:
            break
        ins = d.instruction
        value = "A" if ins.immediate_kind == "value" and d.immediate in masked else d.immediate
        parts.append(f"{ins.mnemonic}:{value}" if ins.immediate_size else ins.mnemonic)
    return " ".join(parts)


def _code_form(code_hex: str, masked: frozenset[int]) -> str:
    form = _reachable(code_hex, masked)
    return code_hex if form is None else form


def normal_form(vector_input: Mapping[str, Any]) -> str:
    masked = addresses(vector_input)
    entry = vector_input["pre_state"]["contracts"].get(vector_input["message"]["to"])
    sandbox = vector_input["sandbox"]
    return json.dumps([vector_input["policy"], sandbox["isolation_level"], sandbox["storage_access"],
                       None if entry is None else _code_form(entry["code"], masked)], sort_keys=True)


def _masked_call_data(vector_input: Mapping[str, Any]) -> bytes:
    masked = addresses(vector_input)
    data = bytearray(bytes.fromhex(vector_input["message"]["call_data"][2:]))
    i = 0
    while i + 8 <= len(data):
        value = int.from_bytes(data[i:i + 8], "little")
        if value and value in masked:
            data[i:i + 8] = bytes(8)
            i += 8
        else:
            i += 1
    return bytes(data)


def _limits_raised(published: Mapping[str, Any], request: Mapping[str, Any]) -> bool:
    """Whether each request limit is the published one or raised as a blinding raises it."""
    for name, value in published.items():
        got = request.get(name)
        if type(value) is not int or type(got) is not int:
            if value != got:
                return False
        elif not value <= got <= value + 16 + value // 8:
            return False
    return True


def _contract_forms(vector_input: Mapping[str, Any]) -> list[str]:
    masked = addresses(vector_input)
    return sorted(_code_form(body["code"], masked) for body in vector_input["pre_state"]["contracts"].values())


def _contains(request: list[str], published: list[str]) -> bool:
    left = list(request)
    for form in published:
        if form not in left:
            return False
        left.remove(form)
    return len(left) <= 1


def _distance(published: Mapping[str, Any], request: Mapping[str, Any]) -> tuple:
    limits = published["sandbox"]["limits"]
    return (sum(abs(request["sandbox"]["limits"][k] - v) for k, v in limits.items()
                if type(v) is int and type(request["sandbox"]["limits"].get(k)) is int),
            -sum(published["context"][k] == request["context"][k] for k in ("block_time", "random_seed")),
            len(request["message"]["call_data"]) - len(published["message"]["call_data"]))


class Recogniser:
    def __init__(self, vectors: Sequence[Mapping[str, Any]]):
        self.exact = {exact_key(v["input"]): v for v in vectors}
        self.forms: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for v in vectors:
            self.forms[normal_form(v["input"])].append(v)

    def candidates(self, vector_input: Any) -> list[Mapping[str, Any]]:
        """The published vectors the request may have been made from, closest first (those
        with the same input, or the same normal form and consistent with it)."""
        try:
            found = self.exact.get(exact_key(vector_input))
            if found is not None:
                return [v for v in self.forms[normal_form(found["input"])] if v["input"] == found["input"]]
            return self._normalised(vector_input)
        except (KeyError, TypeError, AttributeError, ValueError):
            return []

    def find(self, vector_input: Any) -> tuple[Mapping[str, Any], dict[int, int]] | None:
        """The published vector the request was most likely made from and the address map
        (published -> request), or None."""
        found = self.candidates(vector_input)
        return (found[0], self._mapping(found[0]["input"], vector_input)) if found else None

    def _normalised(self, request: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        data = _masked_call_data(request)
        forms = _contract_forms(request)
        scored = []
        for v in self.forms.get(normal_form(request), ()):
            published = v["input"]
            own = _masked_call_data(published)
            if (data[:len(own)] != own or len(data) > len(own) + 16
                    or not _limits_raised(published["sandbox"]["limits"], request["sandbox"]["limits"])
                    or not _contains(forms, _contract_forms(published))):
                continue
            scored.append((_distance(published, request), v["id"], v))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [v for d, _, v in scored if d == scored[0][0]]

    @staticmethod
    def _mapping(published: Mapping[str, Any], request: Mapping[str, Any]) -> dict[int, int]:
        """Published address -> request address: the entry, the caller, then contracts whose
        normalised code is the same."""
        out: dict[int, int] = {}
        for key in ("to", "caller"):
            a, b = _word(published["message"][key]), _word(request["message"][key])
            if a is not None and b is not None:
                out[a] = b
        mine, theirs = addresses(published), addresses(request)
        free = [(w, _code_form(body["code"], theirs)) for a, body in request["pre_state"]["contracts"].items()
                if (w := _word(a)) is not None and w not in out.values()]
        for a, body in published["pre_state"]["contracts"].items():
            wa = _word(a)
            if wa is None or wa in out:
                continue
            form = _code_form(body["code"], mine)
            match = next((i for i, (_, f) in enumerate(free) if f == form), None)
            if match is not None:
                out[wa] = free.pop(match)[0]    
        return out


def moved(result: Mapping[str, Any], mapping: Mapping[int, int]) -> dict[str, Any]:
    """A published result with its addresses moved as the request's were."""
    def m(text: str) -> str:
        value = int(text, 16)
        return hex(mapping.get(value, value))

    out = json.loads(json.dumps(result))
    out["state_changes"] = sorted((dict(c, address=m(c["address"])) for c in out["state_changes"]),
                                  key=lambda c: (int(c["address"], 16), int(c["key"], 16)))
    out["events"] = [dict(e, address=m(e["address"])) for e in out["events"]]
    out["calls"] = [dict(c, caller=m(c["caller"]), callee=m(c["callee"])) for c in out["calls"]]
    return out
