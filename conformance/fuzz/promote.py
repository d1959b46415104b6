"""``rtwo-vm vectors promote DIR/findings [IDS...]``: findings into the committed corpus.

Chosen findings become entries of ``conformance/fuzz/promoted.jsonl`` (the ``fuzz`` source,
conformance.corpus.fuzz_source): id, description, categories, opcodes and input — never the expected
result, which the filler recomputes. Then the corpus is filled from every source exactly as
``rtwo-vm vectors fill`` does and written with its manifest and digest, so ``vectors fill
--check`` stays clean and the fill stays deterministic. Promoting the same finding twice
changes nothing. A finding is for the spec version of its campaign: its entry names that version
when it is not the first (``spec_version``), and its vector is filled into the corpus of that
version and of every later one.

A findings folder is a corpus folder from outside: its manifest and group files are read
bounded (conformance.corpus.store), every chosen finding is a valid vector, and its entry is checked
(conformance.corpus.fuzz_source.entry_problems: limits a fill can afford) before the reference runs
anything. Nothing is written before everything is filled and valid and every output path is
checked; then each corpus file and promoted.jsonl are replaced atomically (spec.files), never
through a symbolic link.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from conformance.corpus import store
from conformance.corpus import fuzz_source
from conformance.fuzz.findings import NOT_VERDICTS
from conformance.corpus.vector import BASE, SOURCES, VERSIONS
from reference_vm.result import canonical
from spec.files import FileRefused, atomic_write, output_dir, refuse_link


class PromoteError(ValueError):
    """Nothing to promote, an unknown id, or a finding that cannot enter the corpus."""


def entry_of(vector: dict[str, Any]) -> dict[str, Any]:
    entry = {"id": vector["id"], "description": vector["description"],
             "categories": [c for c in vector["tags"]["categories"]], "opcodes": list(vector["tags"]["opcodes"]),
             "input": vector["input"]}
    version = vector["_meta"]["spec_version"]
    if version != BASE:            # a first version's entry names none (as every entry before 1.1)
        entry[fuzz_source.VERSION_KEY] = version
    return entry


def findings_of(findings_dir: Path) -> list[dict[str, Any]]:
    """The vectors of a findings folder, read bounded; PromoteError (one line) otherwise."""
    try:
        store.checked_manifest(findings_dir)
        return store.load(findings_dir)
    except FileNotFoundError:
        raise PromoteError(f"{findings_dir}: no findings here (no manifest.json; "
                           "give the findings folder of a campaign, DIR/findings)") from None
    except (ValueError, OSError) as err:
        detail = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise PromoteError(f"cannot read the findings in {findings_dir}: {detail}") from None


def chosen_entries(found: list[dict[str, Any]], ids: Sequence[str], where: Path) -> list[dict[str, Any]]:
    """The promoted entries of the chosen findings (all when ``ids`` is empty), each checked
    before anything runs."""
    from conformance.corpus.fill import MAX_GENERATED_BYTES
    from conformance.corpus.schema import corpus_problems
    by_id = {v["id"]: v for v in found}
    unknown = [i for i in ids if i not in by_id]
    scenarios = " (its scenario findings, of rtwo-vm fuzz --sequences, are not promoted: the fuzz source holds " \
        "single-call vectors only; they replay from its scenarios folder)" if (where / "scenarios").is_dir() else ""
    if unknown:
        raise PromoteError(f"no finding {unknown[0]!r} in {where}{scenarios if unknown[0].startswith('scenario/') else ''}")
    chosen = [by_id[i] for i in (ids or sorted(by_id))]
    if not chosen:
        raise PromoteError(f"{where} holds no findings{scenarios}")
    problems = corpus_problems(chosen)
    if problems:
        raise PromoteError("invalid finding: " + problems[0])
    out = []
    for v in chosen:
        if v["tags"]["source"] != "fuzz":
            raise PromoteError(f"{v['id']}: not a fuzz finding (source {v['tags']['source']})")
        if any(c.startswith(NOT_VERDICTS) for c in v["tags"]["categories"]):
            raise PromoteError(f"{v['id']}: a wall-clock safety-net entry (the request met the time limit), "
                               "not a divergence; it cannot be promoted")
        size = len(canonical(v["input"]))
        if size > MAX_GENERATED_BYTES:     # the filled vector holds the input: a fill would leave it out
            raise PromoteError(f"{v['id']}: its input alone takes {size:,} bytes, more than the "
                               f"{MAX_GENERATED_BYTES // 1024} KiB a generated vector may take")
        try:
            out.append(fuzz_source.check_entry(entry_of(v), str(where)))
        except FileRefused as err:
            raise PromoteError(str(err)) from None
    return out


def promote(findings_dir: Path, ids: Sequence[str] = (), *, promoted: Path = fuzz_source.PROMOTED,
            corpus_dir: Path | None = None, sources: Iterable[str] = SOURCES) -> dict[str, dict[str, Any]]:
    """Promote findings (all when ``ids`` is empty) into every version's corpus under
    ``corpus_dir`` (the folder of the version folders); returns the new manifests by version."""
    from conformance.constants import VECTORS_DIR, corpus_dir as version_dir
    from conformance.corpus.fill import MAX_GENERATED_BYTES, fill, fill_checked
    from conformance.corpus.schema import corpus_problems
    from conformance.corpus.vector import vector_line
    from conformance.scenario import store as scenario_store

    target = corpus_dir or VECTORS_DIR
    try:
        refuse_link(promoted, "promoted-findings file")
        refuse_link(target, "corpus folder")
        entries = {e["id"]: e for e in fuzz_source.read(promoted)}
    except FileRefused as err:
        raise PromoteError(str(err)) from None
    for entry in chosen_entries(findings_of(findings_dir), ids, findings_dir):
        earlier = entries.get(entry["id"])
        if earlier is not None and earlier["input"] != entry["input"]:
            # A finding's id is its campaign's seed and request index: another campaign with
            # the same seed (another implementation) names another request so. Replacing the
            # promoted one would silently drop a vector the corpus relies on.
            raise PromoteError(f"{entry['id']}: already promoted with another input (a finding of another "
                               f"campaign with the same seed and request index, in {promoted}); run the "
                               "campaign again with another --seed to promote this one")
        entries[entry["id"]] = entry
    new_cases = [fuzz_source.case_of(e) for e in entries.values()]
    fuzz_vectors: dict[str, list[dict[str, Any]]] = {v: [] for v in VERSIONS}
    for case in sorted(new_cases, key=lambda c: c.id):
        for version, vector in fill_checked(case, VERSIONS).items():
            fuzz_vectors[version].append(vector)
    too_big = [v["id"] for vs in fuzz_vectors.values() for v in vs if len(vector_line(v)) > MAX_GENERATED_BYTES]
    if too_big:
        raise PromoteError(f"{too_big[0]}: larger than {MAX_GENERATED_BYTES // 1024} KiB, which a fill leaves out")
    filled = fill([s for s in sources if s != "fuzz"])
    corpora = {}
    for version, corpus in filled.corpora.items():
        vectors = corpus.vectors + fuzz_vectors[version]
        problems = corpus_problems(vectors, version)
        if problems:
            raise PromoteError(f"the promoted corpus of spec {version} would be invalid: " + problems[0])
        corpora[version] = (vectors, corpus.manifest_extra)
    try:
        output_dir(promoted.parent, "folder of the promoted-findings file")
        output_dir(target, "corpus folder")
        manifests = {version: store.write(vectors, version_dir(version, target), version, extra)
                     for version, (vectors, extra) in corpora.items()}
        # the corpus is refilled whole: its scenario folder with the same filler (11.9.5)
        for version, vectors in scenario_store.fill_all(list(corpora)).items():
            scenario_store.write(vectors, scenario_store.folder(version_dir(version, target)), version)
        atomic_write(promoted, "".join(canonical(entries[k]) + "\n" for k in sorted(entries)))
        return manifests
    except FileRefused as err:
        raise PromoteError(str(err)) from None
