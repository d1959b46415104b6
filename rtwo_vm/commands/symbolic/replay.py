"""A counterexample of ``rtwo-vm symbolic`` as every input it assumed and a ready ``rtwo-vm
run`` line that reproduces it (issue 39, item 5).

The inputs: the caller, the call data (its length and every word, little-endian, chapter 2),
the storage the model set (non-zero slots) and the slots the path reads or writes that it left
zero (assumed zero: ``rtwo-vm run`` leaves every slot not given zero), the block time and
seed when they were symbolic. The run line repeats the options of the symbolic run that
``rtwo-vm run`` takes (address, other contracts, pre-state, limits, policy, spec version) and
gives the witness's caller, call data (``--calldata-words`` when it is a whole number of
words, else ``--calldata``), the entry contract's storage (``--storage KEY=VALUE``), time and
seed. Storage of another contract the model set is not expressible on the command line
(``run`` sets it only through ``--state FILE``): then the line says so and the counterexample
vector (``rtwo-vm run FILE.jsonl --vector-id ID``) is the replay.
"""

from __future__ import annotations

import shlex

from rtwo_vm.arguments.words import output_words, word_size

# Options of `rtwo-vm symbolic` that `rtwo-vm run` takes as they are (their destinations).
PASSED = (("address", "--address"), ("state", "--state"), ("compute", "--compute"),
          ("memory_pages", "--memory-pages"), ("storage_units", "--storage-units"),
          ("storage_access", "--storage-access"))
FLAGS = (("allow_time", "--allow-time"), ("allow_randomness", "--allow-randomness"),
         ("forbid_calls", "--forbid-calls"))
REPEATED = (("contract", "--contract"), ("forbid", "--forbid"), ("allow", "--allow"))


def words_of(data: bytes, version: str) -> tuple[list[int], bytes]:
    """The whole words of ``data`` and the bytes after the last one."""
    whole = len(data) - len(data) % word_size(version)
    return output_words(data[:whole], version) or [], data[whole:]


def inputs(exploration, w) -> dict:
    """Every input the counterexample assumed (JSON)."""
    setup = exploration.setup
    words, rest = words_of(w.call_data, setup.version)
    out = {"caller": hex(w.caller), "call_data": "0x" + w.call_data.hex(),
           "call_data_length": len(w.call_data), "call_data_words": [hex(x) for x in words],
           "call_data_rest": "0x" + rest.hex() if rest else None,
           "storage_set": {hex(a): {hex(k): hex(v) for k, v in sorted(s.items())}
                           for a, s in sorted(w.storage.items()) if s},
           "storage_assumed_zero": {hex(a): [hex(k) for k in sorted(keys)]
                                    for a, keys in sorted(w.zero_slots.items()) if keys},
           "storage_not_read": "every other slot (no path condition reads it)"}
    if setup.time_symbolic:
        out["block_time"] = hex(w.block_time)
    if setup.seed_symbolic:
        out["seed"] = "0x" + w.seed.hex()
    return out


def inputs_lines(exploration, w) -> list[str]:
    """What the printed ``input:`` line (caller, call data hex, non-zero storage, time, seed)
    leaves implicit: the call data's words and the slots assumed zero."""
    doc = inputs(exploration, w)
    words = doc["call_data_words"]
    lines = [f"  call data: {doc['call_data_length']} bytes" + (
        f", words [{', '.join(words)}]" if words else "")
        + (f", then bytes {doc['call_data_rest']}" if doc["call_data_rest"] else "")]
    for address, keys in doc["storage_assumed_zero"].items():
        lines.append(f"  storage of {address} assumed zero (read or written, not set): "
                     + ", ".join(keys))
    return lines


def run_line(args, exploration, w, file: str | None = None) -> tuple[list[str], str | None]:
    """``rtwo-vm run`` arguments that reproduce the counterexample (of ``file``, default the
    command's contract), and why they cannot (None when they do)."""
    setup = exploration.setup
    argv = ["rtwo-vm", "run", file or args.file]
    for dest, flag in PASSED:
        value = getattr(args, dest, None)
        if value is not None and not (dest == "storage_access" and value == "read_write"):
            argv += [flag, str(value)]
    for dest, flag in REPEATED:
        for value in getattr(args, dest, None) or ():
            argv += [flag, value]
    for dest, flag in FLAGS:
        if getattr(args, dest, False):
            argv.append(flag)
    argv += ["--spec-version", setup.version, "--caller", hex(w.caller)]
    words, rest = words_of(w.call_data, setup.version)
    if w.call_data and not rest:
        argv += ["--calldata-words", ",".join(hex(x) for x in words)]
    elif w.call_data:
        argv += ["--calldata", "0x" + w.call_data.hex()]
    for key, value in sorted(w.storage.get(setup.entry, {}).items()):
        argv += ["--storage", f"{key:#x}={value:#x}"]
    if setup.time_symbolic or args.time is not None:
        argv += ["--time", hex(w.block_time)]
    if setup.seed_symbolic or args.seed is not None:
        argv += ["--seed", "0x" + w.seed.hex()]
    # Another contract's slots: only those --state lists (pinned, the file gives them to run)
    others = sorted(a for a, s in w.storage.items() if a != setup.entry and any(
        setup.storage.get(a, {}).get(k) != v for k, v in s.items()))
    why = None
    if others:
        why = (f"storage of {', '.join(hex(a) for a in others)} is set by the model and "
               "`rtwo-vm run` takes another contract's storage only in a --state file: replay "
               "the counterexample vector instead")
    return argv, why


def replay_doc(args, exploration, verdict, vector: str | None) -> dict:
    """The ``replay`` part of a counterexample's JSON: its inputs, the run line, the vector."""
    w = verdict.replay.witness
    argv, why = run_line(args, exploration, w)
    return {"inputs": inputs(exploration, w), "run": None if why else shlex.join(argv),
            "run_argv": None if why else argv, "run_not_possible": why, "vector": vector}


def replay_lines(args, exploration, verdict, vector: str | None) -> list[str]:
    doc = replay_doc(args, exploration, verdict, vector)
    lines = inputs_lines(exploration, verdict.replay.witness)
    if doc["run"]:
        lines.append(f"  replay: {doc['run']}")
    else:
        lines.append(f"  replay: {doc['run_not_possible']}")
    if vector:
        lines.append(f"  replay the vector: {vector}")
    return lines


def distinguishing_doc(args, result) -> dict:
    """An equivalence's distinguishing input: every input it assumed and one run line per
    side (contract B, or contract A under the other version)."""
    w = result.witness
    runs, why = [], []
    for x, file in zip(result.explorations, (args.file, getattr(args, "other", None) or args.file)):
        argv, reason = run_line(args, x, w, file)
        runs.append(None if reason else shlex.join(argv))
        why.append(reason)
    return {"inputs": inputs(result.explorations[0], w), "runs": runs,
            "run_not_possible": next((r for r in why if r), None)}


def distinguishing_lines(args, result, labels) -> list[str]:
    doc = distinguishing_doc(args, result)
    lines = inputs_lines(result.explorations[0], result.witness)
    for label, run in zip(labels, doc["runs"]):
        lines.append(f"  replay {label}: {run or doc['run_not_possible']}")
    return lines
