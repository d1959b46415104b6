"""``rtwo-vm vectors promote DIR/findings [IDS...]``: findings into the committed corpus.

Chosen findings become entries of ``conformance/fuzz/promoted.jsonl`` (the ``fuzz`` source,
conformance.fuzz.source): id, description, categories, opcodes and input — never the expected
result, which the filler recomputes. Then the corpus is filled from every source exactly as
``rtwo-vm vectors fill`` does and written with its manifest and digest, so ``vectors fill
--check`` stays clean and the fill stays deterministic. Promoting the same finding twice
changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from conformance import corpus
from conformance.fuzz import source as fuzz_source
from conformance.fuzz.findings import NOT_VERDICTS
from conformance.vector import SOURCES
from reference_vm.result import canonical


class PromoteError(ValueError):
    """Nothing to promote, an unknown id, or a finding that cannot enter the corpus."""


def entry_of(vector: dict[str, Any]) -> dict[str, Any]:
    return {"id": vector["id"], "description": vector["description"],
            "categories": [c for c in vector["tags"]["categories"]], "opcodes": list(vector["tags"]["opcodes"]),
            "input": vector["input"]}


def promote(findings_dir: Path, ids: Sequence[str] = (), *, promoted: Path = fuzz_source.PROMOTED,
            corpus_dir: Path | None = None, sources: Iterable[str] = SOURCES) -> dict[str, Any]:
    """Promote findings (all when ``ids`` is empty); returns the new manifest."""
    from conformance.constants import VECTORS_DIR
    from conformance.fill import MAX_GENERATED_BYTES, fill, fill_checked
    from conformance.schema import corpus_problems
    from conformance.vector import vector_line

    try:
        found = corpus.load(findings_dir)
    except (FileNotFoundError, ValueError, KeyError) as err:
        raise PromoteError(f"cannot read the findings in {findings_dir}: {err}") from None
    by_id = {v["id"]: v for v in found}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise PromoteError(f"no finding {unknown[0]!r} in {findings_dir}")
    chosen = [by_id[i] for i in (ids or sorted(by_id))]
    if not chosen:
        raise PromoteError(f"{findings_dir} holds no findings")
    problems = corpus_problems(chosen)
    if problems:
        raise PromoteError("invalid finding: " + problems[0])
    entries = {e["id"]: e for e in fuzz_source.read(promoted)}
    for v in chosen:
        if v["tags"]["source"] != "fuzz":
            raise PromoteError(f"{v['id']}: not a fuzz finding (source {v['tags']['source']})")
        if any(c.startswith(NOT_VERDICTS) for c in v["tags"]["categories"]):
            raise PromoteError(f"{v['id']}: a wall-clock safety-net entry (the request met the time limit), "
                               "not a divergence; it cannot be promoted")
        entries[v["id"]] = entry_of(v)
    new_cases = [fuzz_source.case_of(e) for e in entries.values()]
    fuzz_vectors = [fill_checked(c) for c in sorted(new_cases, key=lambda c: c.id)]
    too_big = [v["id"] for v in fuzz_vectors if len(vector_line(v)) > MAX_GENERATED_BYTES]
    if too_big:
        raise PromoteError(f"{too_big[0]}: larger than {MAX_GENERATED_BYTES // 1024} KiB, which a fill leaves out")
    filled = fill([s for s in sources if s != "fuzz"])
    vectors = filled.vectors + fuzz_vectors
    problems = corpus_problems(vectors)
    if problems:
        raise PromoteError("the promoted corpus would be invalid: " + problems[0])
    promoted.parent.mkdir(parents=True, exist_ok=True)
    promoted.write_text("".join(canonical(entries[k]) + "\n" for k in sorted(entries)), encoding="utf-8")
    return corpus.write(vectors, corpus_dir or VECTORS_DIR, filled.manifest_extra)
