"""What a property may see of a call, as placeholders: symbols of the real terms' sorts.

A properties file runs only in a child process (userfile.py). It never gets the exploration's
terms: the parent describes the call as *slots* — the inputs (caller, call data, block time,
seed, each contract's storage before the call) and, for each path's end, its status and
error (plain strings) and the result's terms (storage after, output, events, usage, fee) —
each slot a placeholder symbol named ``rtwo_view_...`` of the real term's sort. In the child,
``objects`` builds the exploration and end that ``properties.Call`` reads from those
placeholders, so the user's functions build their claims over them. In the parent,
``symbols`` declares the same placeholders for reading the claims' text back (claimtext.py),
and ``reals`` gives what each placeholder stands for on a path: a term, or for a byte string
(call data, output, an event's data) its length and its ``read`` function, called at each
index the claim reads, exactly as ``Call`` would call it on the real bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import z3

from proofs.machine import Bytes

PREFIX = "rtwo_view_"


@dataclass(frozen=True)
class Slot:
    name: str            # the placeholder's symbol
    sort: tuple          # ("bv", n), ("array", n, m) or ("bytes", n): a length of n bits and
    #                      a byte function of an n-bit index (its symbol: name; the length's:
    #                      name + "_len")


@dataclass(frozen=True)
class EndView:
    index: int
    status: str
    error: str | None
    slots: dict          # key -> Slot: post_<address>, output, usage_<name>, fee, event...
    events: tuple        # (address key, topic keys, data key) per event


@dataclass(frozen=True)
class View:
    entry: int
    inputs: dict         # key -> Slot: caller, block_time, seed, calldata, pre_<address>
    ends: tuple = field(default_factory=tuple)


def _sort_of(term) -> tuple:
    s = term.sort()
    if isinstance(s, z3.ArraySortRef):
        return ("array", s.domain().size(), s.range().size())
    return ("bv", s.size())


def _slot(key: str, term) -> Slot:
    return Slot(PREFIX + key, _sort_of(term))


def _bytes_slot(key: str, data: Bytes) -> Slot:
    return Slot(PREFIX + key, ("bytes", data.length.size()))


def describe(exploration) -> View:
    """The slots of an exploration: its inputs and every path's end."""
    x = exploration.inputs
    inputs = {"caller": _slot("caller", x.caller), "block_time": _slot("block_time", x.block_time),
              "seed": _slot("seed", x.seed), "calldata": _bytes_slot("calldata", x.call_data)}
    for address, array in sorted(x.storage.items()):
        inputs[f"pre_{address:#x}"] = _slot(f"pre_{address:#x}", array)
    ends = []
    for end in exploration.ends:
        slots = {f"post_{a:#x}": _slot(f"post_{a:#x}", arr) for a, arr in sorted(end.post.items())}
        slots["output"] = _bytes_slot("output", end.output)
        slots.update({f"usage_{k}": _slot(f"usage_{k}", v) for k, v in end.usage.items()})
        slots["fee"] = _slot("fee", end.fee)
        events = []
        for n, e in enumerate(end.events):
            topics = tuple(f"event{n}_topic{k}" for k in range(len(e.topics)))
            slots[f"event{n}_address"] = _slot(f"event{n}_address", e.address)
            slots.update({t: _slot(t, term) for t, term in zip(topics, e.topics)})
            slots[f"event{n}_data"] = _bytes_slot(f"event{n}_data", e.data)
            events.append((f"event{n}_address", topics, f"event{n}_data"))
        ends.append(EndView(end.index, end.status, end.error, slots, tuple(events)))
    return View(exploration.setup.entry, inputs, tuple(ends))


def _placeholder(slot: Slot):
    kind = slot.sort[0]
    if kind == "bv":
        return z3.BitVec(slot.name, slot.sort[1])
    if kind == "array":
        return z3.Array(slot.name, z3.BitVecSort(slot.sort[1]), z3.BitVecSort(slot.sort[2]))
    length = z3.BitVec(slot.name + "_len", slot.sort[1])
    byte = z3.Function(slot.name, z3.BitVecSort(slot.sort[1]), z3.BitVecSort(8))

    def read(j, f=byte):
        return f(j)
    return Bytes(length, read)


def objects(view: View, index: int | None = None) -> tuple:
    """(exploration, end) as ``properties.Call`` reads them, built from placeholders: the end
    of path ``index`` (None: no end, a pre-condition's view)."""
    made = {key: _placeholder(slot) for key, slot in view.inputs.items()}
    inputs = SimpleNamespace(
        caller=made["caller"], call_data=made["calldata"], block_time=made["block_time"],
        seed=made["seed"], storage={int(k[4:], 16): v for k, v in made.items()
                                    if k.startswith("pre_")})
    exploration = SimpleNamespace(inputs=inputs, setup=SimpleNamespace(entry=view.entry))
    if index is None:
        return exploration, None
    e = view.ends[index]
    slots = {key: _placeholder(slot) for key, slot in e.slots.items()}
    end = SimpleNamespace(
        index=e.index, status=e.status, error=e.error,
        post={int(k[5:], 16): v for k, v in slots.items() if k.startswith("post_")},
        output=slots["output"], fee=slots["fee"],
        usage={k[6:]: v for k, v in slots.items() if k.startswith("usage_")},
        events=[SimpleNamespace(address=slots[a], topics=tuple(slots[t] for t in ts),
                                data=slots[d]) for a, ts, d in e.events])
    return exploration, end


def symbols(view: View, index: int | None = None) -> dict:
    """Symbol text -> (slot key, the placeholder: a constant, or a byte function and its
    length's constant) for the inputs and, given ``index``, that path's end."""
    out: dict = {}
    slots = dict(view.inputs)
    if index is not None:
        slots.update(view.ends[index].slots)
    for key, slot in slots.items():
        made = _placeholder(slot)
        if isinstance(made, Bytes):
            out[slot.name + "_len"] = (key + "_len", made.length)
            out[slot.name] = (key, made.read(z3.BitVec("j", slot.sort[1])).decl())
        else:
            out[slot.name] = (key, made)
    return out


def reals(exploration, end=None) -> dict:
    """Slot key -> what it stands for: a term, or (for a byte string) its Bytes; each byte
    string's length also under key + "_len"."""
    x = exploration.inputs
    out: dict = {"caller": x.caller, "block_time": x.block_time, "seed": x.seed,
                 "calldata": x.call_data, "calldata_len": x.call_data.length}
    out.update({f"pre_{a:#x}": arr for a, arr in x.storage.items()})
    if end is None:
        return out
    out.update({f"post_{a:#x}": arr for a, arr in end.post.items()})
    out.update({"output": end.output, "output_len": end.output.length, "fee": end.fee})
    out.update({f"usage_{k}": v for k, v in end.usage.items()})
    for n, e in enumerate(end.events):
        out[f"event{n}_address"] = e.address
        out.update({f"event{n}_topic{k}": t for k, t in enumerate(e.topics)})
        out[f"event{n}_data"] = e.data
        out[f"event{n}_data_len"] = e.data.length
    return out
