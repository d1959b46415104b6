"""Printing a recorded call (``rtwo-vm call``): each context's outcome, stages, sandbox,
accounting, output (with its words) and violations, a callee's indented under its caller.
A violation raised at policy binding names the instruction refused and its offset (chapter
10.5), as ``policy check`` does."""

from __future__ import annotations

from rtwo_vm.arguments.words import output_words
from rtwo_vm.runtime.catalog import runtime_version


def output_words_of(output: str | None) -> list[int] | None:
    """A recorded output (0x-hex) as words, when it is a whole number of them."""
    return None if output is None else output_words(bytes.fromhex(output[2:]), runtime_version())


def output_words_hex(output: str | None) -> list[str] | None:
    """A recorded output (returned or revert data, 0x-hex) as its words in 0x-hex, the form
    of ``outputWords`` in ``rtwo-vm call --json`` and in the API's answers (one function for
    both); None when it is not a non-empty whole number of words."""
    words = output_words_of(output)
    return None if words is None else [hex(w) for w in words]


def refusal(violation) -> str:
    """"ADD at offset 5": the instruction a violation raised at binding refused."""
    return f"{violation.instruction} at offset {violation.error_pc}"


def print_recorded(rec, indent: str = "") -> None:
    c, r, a = rec.context, rec.result, rec.accounting
    refused = next((refusal(v) for v in rec.violations if v.instruction is not None), "")
    print(f"{indent}context {c.context_id} -> {c.contract_id} (depth {c.depth}): "
          f"{r.execution_status}{' ' + r.error if r.error else ''}"
          f"{f' at pc {r.error_pc}' if r.error_pc is not None else ''}"
          f"{f' ({refused})' if refused else ''}")
    print(f"{indent}  stages: {' > '.join(e.stage for e in rec.history)}")
    print(f"{indent}  sandbox {rec.sandbox.sandbox_id}: {rec.sandbox.isolation_level}, storage "
          f"{rec.sandbox.storage_access_policy}, {rec.sandbox.status}")
    print(f"{indent}  accounting {a.status}: compute {a.compute_units}, memory "
          f"{'-' if a.memory_units is None else a.memory_units} pages, storage "
          f"{'-' if a.storage_units is None else a.storage_units} units, fee "
          f"{'-' if a.fee is None else a.fee}")
    if r.output is not None:
        words = output_words_of(r.output)
        shown = "" if words is None else f" (words {', '.join(map(str, words))})"
        print(f"{indent}  output {r.output}{shown}; {len(r.state_changes)} state changes; "
              f"{len(r.emitted_events)} events; digest {r.digest}")
    for v in rec.violations:
        print(f"{indent}  violation {v.violation_id}: {v.violation_type} ({v.severity}), "
              f"{v.action_taken}{f', refused {refusal(v)}' if v.instruction else ''}")
    for child in rec.children:
        print_recorded(child, indent + "    ")
