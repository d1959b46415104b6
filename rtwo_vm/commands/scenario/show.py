"""Printing a scenario run step by step, and writing scenario vectors (.jsonl) atomically."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance.corpus.vector import vector_line
from rtwo_vm.arguments.inputs import CliError
from spec.files import FileRefused, atomic_write, output_file

MAX_SHOWN = 64          # bytes of output or event data printed (the rest as "...")


def _bytes(text: str) -> str:
    return text if len(text) <= 2 + 2 * MAX_SHOWN else text[:2 + 2 * MAX_SHOWN] + f"... ({(len(text) - 2) // 2} bytes)"


def _outcome(result: Mapping[str, Any]) -> str:
    out = result["status"]
    if result["error"]:
        out += f" {result['error']}" + (f" at pc {result['error_pc']}" if result["error_pc"] is not None else "")
    return out


def step(index: int, step_input: Mapping[str, Any], result: Mapping[str, Any],
         context: str | None) -> None:
    m = step_input["message"]
    print(f"step {index}: {m['caller']} -> {m['to']}, call data {_bytes(m['call_data'])}"
          f" (spec {step_input['spec_version']}{', context ' + context if context else ''})")
    print(f"  {_outcome(result)}; output {_bytes(result['output'])}")
    for c in result["state_changes"]:
        print(f"  state {c['address']}[{c['key']}]: {c['before']} -> {c['after']}")
    for e in result["events"]:
        print(f"  event {e['address']} topics [{', '.join(e['topics'])}] data {_bytes(e['data'])}")
    for c in result["calls"]:
        print(f"  call depth {c['depth']} {c['caller']} -> {c['callee']}: {c['status']}"
              + (f" {c['error']}" if c["error"] else "") + f", compute {c['compute']}")
    u = result["usage"]
    print(f"  usage compute {u['compute']}, memory {u['memory_pages']} pages, storage "
          f"{u['storage_units']} units (reads {u['storage_reads']}, writes {u['storage_writes']}, "
          f"new slots {u['storage_new_slots']}); fee {result['fee']}")


def state(post: Mapping[str, Any]) -> None:
    print("final state:")
    for address, body in post["contracts"].items():
        slots = ", ".join(f"{k} = {v}" for k, v in body["storage"].items())
        print(f"  {address}: {slots or '(empty storage)'}")


def scenario(item, run, where: str) -> None:
    steps = item.input["steps"]
    print(f"{item.id}: {len(steps)} steps on {len(item.input['pre_state']['contracts'])} contracts, "
          f"on {where}")
    for index, (step_input, result) in enumerate(zip(steps, run.results)):
        step(index, step_input, result, run.contexts[index] if run.contexts else None)
    state(run.post_state)


def verdict(found: Sequence[str], where: str, vector: bool, is_reference: bool) -> None:
    if found:
        for problem in found:
            print(f"DIFFERS: {problem}")
    elif vector:
        print(f"agrees: {where} gives the vector's expected results" +
              ("" if is_reference else " and the reference's"))
    elif not is_reference:
        print(f"agrees: {where} gives the reference's results")
    print()


def output_path(path: str) -> Path:
    """The --out file, checked before anything runs (a symbolic link or a folder is refused)."""
    try:
        return output_file(path, "scenario vector file")
    except FileRefused as err:
        raise CliError(str(err).splitlines()[0]) from None


def write(path: Path, vectors: Sequence[Mapping[str, Any]]) -> None:
    """The vectors as JSON lines (canonical), written whole or not at all."""
    try:
        atomic_write(path, "".join(vector_line(v) + "\n" for v in vectors))
    except FileRefused as err:
        raise CliError(str(err).splitlines()[0]) from None
    except OSError as err:
        raise CliError(f"cannot write {path}: {err.strerror or err}") from None
