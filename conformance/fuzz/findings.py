"""Findings: a shrunk divergent request as a schema-valid vector, buckets, and DIR/findings.

A finding vector is an ordinary conformance vector (chapter 11.2): the input of the shrunk
request, the expected result from the reference, tags with source ``fuzz`` and the categories
``fuzz``, ``seed_<seed>`` and ``class_<divergence class>``. DIR/findings/ is written with
conformance.corpus (group file and manifest with digest), so ``rtwo-vm conformance run --dir
DIR/findings`` takes it as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance import corpus
from conformance.fuzz.classify import slug
from conformance.fuzz.program import FuzzInput, disassemble
from conformance.vector import Case, content_hash, expected_of, run_reference, tags_of

GENERATOR = "rtwo-vm fuzz"
FINDINGS = "findings"
SAFETY_NET = "safety-net"               # DIR/safety-net: requests that met the wall-clock limit twice
SAFETY_NET_CLASS = "safety-net:timeout"
# Vectors of these classes are wall-clock events, not divergences: never promoted.
NOT_VERDICTS = ("class_safety_net", "class_process_timeout")


def vector_id(seed: int, index: int) -> str:
    return f"fuzz/s{seed}/{index:09d}"


def categories(seed: int, kind: str) -> tuple[str, ...]:
    return ("fuzz", f"seed_{seed}", f"class_{slug(kind)}")


def make_vector(inp: FuzzInput, seed: int, index: int, kind: str, impl: str,
                description: str | None = None) -> dict[str, Any]:
    """The vector of a (shrunk) request, expected result from the reference."""
    from conformance.constants import SPEC_VERSION
    from conformance.constants import GENERATOR_VERSION
    vi = inp.vector_input()
    result = run_reference(vi)
    result_json = result.to_json()
    case = Case(id=vector_id(seed, index), description="", code=b"", opcodes=tuple(inp.mnemonics()),
                categories=categories(seed, kind), source="fuzz")
    vector = {
        "id": case.id,
        "description": description or (f"Fuzz finding: request {index} of campaign seed {seed}, shrunk; "
                                       f"divergence class {kind} of {impl}."),
        "tags": tags_of(case, result_json),
        "input": vi,
        "expected": expected_of(result),
    }
    vector["_meta"] = {"spec_version": SPEC_VERSION, "generator": f"{GENERATOR} {GENERATOR_VERSION}",
                       "content_hash": content_hash(vector)}
    return vector


def program_text(inp: FuzzInput) -> list[str]:
    out = []
    for address in sorted(inp.contracts):
        code, storage = inp.contracts[address]
        head = f"contract {address:#x}" + (" (entry)" if address == inp.to else "")
        if storage:
            head += "  storage " + ", ".join(f"{k:#x}={v:#x}" for k, v in sorted(storage.items()))
        out.append(head)
        out += ["  " + line for line in disassemble(code)]
    if inp.to not in inp.contracts:
        out.append(f"entry {inp.to:#x}: no contract")
    p = inp.policy
    out.append(f"call data 0x{inp.call_data[:32].hex()}{'...' if len(inp.call_data) > 32 else ''}"
               f" ({len(inp.call_data)} bytes); limits " + ", ".join(f"{k}={v}" for k, v in inp.limits.items()))
    out.append("policy " + ", ".join(f"{k}={p[k]}" for k in ("time_access", "randomness", "external_call",
                                                             "storage_access"))
               + f", isolation {inp.isolation}"
               + (f", allowed {p['allowed']}" if p["allowed"] is not None else "")
               + (f", forbidden {p['forbidden']}" if p["forbidden"] else ""))
    return out


def bucket_text(bucket: Mapping[str, Any]) -> str:
    f = bucket.get("finding") or {}
    lines = [f"[{bucket['count']}x] {bucket.get('name', bucket['impl'])}: {bucket['class']}"
             + (f"  -> {f['vector_id']}" if f.get("vector_id") else "")]
    if f:
        lines.append(f"  first at request {bucket['first_index']}; shrunk from {f['original_size']} to "
                     f"{f['size']} instructions in {f['tests']} tests")
        if f.get("exposed_as"):
            lines.append(f"  only the trace differed: the vector returns the diverging stack word "
                         f"(class {f['exposed_as']})")
        lines += ["    " + line for line in f.get("program", [])]
        lines += ["  diff: " + d for d in f.get("diff", [])[:12]]
        if f.get("trace"):
            lines.append("  trace: " + f["trace"])
    return "\n".join(lines)


def write_findings(directory: Path, vectors: Iterable[Mapping[str, Any]], seed: int) -> None:
    """Replace DIR/findings with these vectors (a corpus directory with its manifest)."""
    vectors = sorted(vectors, key=lambda v: v["id"])
    directory.mkdir(parents=True, exist_ok=True)
    corpus.write(list(vectors), directory, {"random_seed": seed, "smt_inputs": None})
