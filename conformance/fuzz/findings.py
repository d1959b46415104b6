"""Findings: a shrunk divergent request as a schema-valid vector, buckets, and DIR/findings.

A finding vector is an ordinary conformance vector (chapter 11.2): the input of the shrunk
request, the expected result from the reference, tags with source ``fuzz`` and the categories
``fuzz``, ``seed_<seed>`` and ``class_<divergence class>``. DIR/findings/ is written with
conformance.corpus.store (group file and manifest with digest), so ``rtwo-vm conformance run --dir
DIR/findings`` takes it as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.corpus import store
from spec.files import FileRefused, atomic_write, output_dir, refuse_link
from conformance.fuzz.classify import slug
from conformance.fuzz.program import FuzzInput, disassemble
from conformance.corpus.vector import Case, expected_of, run_reference, stamped, tags_of

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
    """The vector of a (shrunk) request of its spec version, expected result from the reference."""
    vi = inp.vector_input()
    result = run_reference(vi, inp.version)
    result_json = result.to_json()
    case = Case(id=vector_id(seed, index), description="", code=b"", opcodes=tuple(inp.mnemonics()),
                categories=categories(seed, kind), source="fuzz")
    vector = {
        "id": case.id,
        "description": description or (f"Fuzz finding: request {index} of campaign seed {seed}, shrunk; "
                                       f"divergence class {kind} of {impl}."),
        "tags": tags_of(case, result_json, inp.version),
        "input": vi,
        "expected": expected_of(result, inp.version),
    }
    from conformance.constants import GENERATOR_VERSION
    return stamped(vector, inp.version, f"{GENERATOR} {GENERATOR_VERSION}")


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
        ended: dict[bool | None, str] = {True: " (minimal: no reduction keeps the class)", False: " (the test budget ran out)"}
        if "steps" in f:
            shrunk = (f"{f['original_steps']} steps of {f['original_size']} instructions to {f['steps']} steps "
                      f"of {f['size']}")
        else:
            shrunk = f"{f['original_size']} to {f['size']} instructions"
        lines.append(f"  first at request {bucket['first_index']}; shrunk from {shrunk} in {f['tests']} tests"
                     f"{ended.get(f.get('minimal'), '')}")
        if f.get("exposed_as"):
            lines.append(f"  only the trace differed: the vector returns the diverging stack word "
                         f"(class {f['exposed_as']})")
        lines += ["    " + line for line in f.get("program", [])]
        lines += ["  diff: " + d for d in f.get("diff", [])[:12]]
        if f.get("trace"):
            lines.append("  trace: " + f["trace"])
    return "\n".join(lines)


# The files a campaign writes into DIR/findings and DIR/safety-net (a corpus directory of the
# "fuzz" id group), the only ones it ever replaces or removes there.
OWN_FILES = (f"{store.group_of(vector_id(0, 0))}.jsonl", store.MANIFEST)
# Sequence mode's findings are scenario vectors: the folder "scenarios" of the findings folder
# (a corpus folder's scenario folder, chapter 11.9.5), group "fuzz", with its manifest.
SCENARIOS = "scenarios"
OWN_SCENARIO_FILES = ("fuzz.jsonl", store.MANIFEST)
OUTPUT_FILES = ("state.json", "report.json", "report.txt")


def _own_folder(directory: Path, own: tuple[str, ...] = OWN_FILES, inner: bool = True) -> Path:
    """``directory`` as a folder of the campaign's own: created if missing; refused when it is
    a link, not a folder, or holds anything but ``own`` (and this module's temporary files; in
    a findings folder, its own scenario folder), or one of those is a link."""
    folder = output_dir(directory, "findings folder")
    for entry in sorted(folder.iterdir()):
        name = entry.name
        if name.startswith(".") and name.endswith(".tmp") and any(name.startswith(f".{mine}.") for mine in own):
            continue                  # a temporary file of atomic_writer left by a kill
        if inner and name == SCENARIOS:
            _own_folder(entry, OWN_SCENARIO_FILES, inner=False)
            continue
        if name not in own:
            raise FileRefused(f"{folder}: holds {name!r}, which a fuzz campaign does not write; the campaign "
                              "writes only into a folder of its own")
        if entry.is_symlink() or not entry.is_file():
            raise FileRefused(f"{entry}: is a link or not a regular file; the campaign does not write through it")
    return folder


def check_outputs(out: Path) -> Path:
    """The campaign folder, checked before anything runs: not a link, its report and state
    files not links, its findings and safety-net folders its own (FileRefused otherwise)."""
    folder = output_dir(out, "campaign folder")
    for name in OUTPUT_FILES:
        refuse_link(folder / name, name)
    for name in (FINDINGS, SAFETY_NET):
        if (folder / name).exists() or (folder / name).is_symlink():
            _own_folder(folder / name)
    return folder


def write_findings(directory: Path, vectors: Iterable[Mapping[str, Any]], seed: int, version: str) -> None:
    """Replace the vectors in DIR/findings (a corpus directory of spec ``version``, the
    campaign's, with its manifest): each file written atomically (spec.files.atomic_write), a
    group file no longer needed removed, and nothing else touched (see _own_folder)."""
    folder = _own_folder(directory)
    scenarios = [v for v in vectors if v["id"].startswith("scenario/")]
    vectors = [v for v in vectors if not v["id"].startswith("scenario/")]
    if scenarios or (folder / SCENARIOS).is_dir():
        _write_scenarios(folder / SCENARIOS, scenarios, version)
    files = store.render(sorted(vectors, key=lambda v: v["id"]), version, {"random_seed": seed, "smt_inputs": None})
    if set(files) - set(OWN_FILES):
        raise FileRefused(f"{folder}: a finding outside the fuzz group ({sorted(set(files) - set(OWN_FILES))[0]})")
    for name, text in files.items():        # the group file, then the manifest naming it
        atomic_write(folder / name, text)
    for name in OWN_FILES:                  # only then a group file the manifest no longer names
        if name not in files and (folder / name).is_file() and not (folder / name).is_symlink():
            (folder / name).unlink()


def _write_scenarios(directory: Path, vectors: list[Mapping[str, Any]], version: str) -> None:
    """Replace the scenario vectors of DIR/findings/scenarios (sequence mode's findings), as
    write_findings replaces the single-call ones."""
    from conformance.scenario import store as scenario_store
    folder = _own_folder(directory, OWN_SCENARIO_FILES, inner=False)
    files = scenario_store.render(vectors, version)
    if set(files) - set(OWN_SCENARIO_FILES):
        raise FileRefused(f"{folder}: a finding outside the fuzz scenario group")
    for name, text in files.items():
        atomic_write(folder / name, text)
    for name in OWN_SCENARIO_FILES:
        if name not in files and (folder / name).is_file() and not (folder / name).is_symlink():
            (folder / name).unlink()
