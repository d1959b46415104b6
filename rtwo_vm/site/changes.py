"""The "What changed in <version>" page of every version that has a base, generated from the
version's declared diff (``spec/versions/<version>/diff.toml``), its changelog section
(``spec/CHANGELOG.md``) and the comparison of the two versions as loaded (``spec.diff``).

Every data difference and every replaced or added prose section is listed under the item it
belongs to, with the vectors of the version's corpus that check the item (as
``rtwo-vm conformance run --filter`` expressions, counted on the committed corpus), and the
proof of the item: ``rtwo-vm prove --diff <base> <version>`` run when the page is built
(proofs/diff/, about five seconds), its status per item, and per instruction what differs and
the witness (the vector filled for both versions, or the replay of a witness no single frame
of the base version can rebuild).
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

import spec
from rtwo_vm.site import versions as docversions
from spec import diff as spec_diff, prose, versioning

NOT_PROVED = "not proved (no SMT models of this version here)"
NO_WITNESS = "—"
_ROW = re.compile(r"^\|\s*([A-Za-z0-9]+)\s*\|(.*)\|\s*(.*?)\s*\|\s*$")


def changelog_items(version: str) -> dict[str, tuple[str, str]]:
    """Item id -> (where, change) from the table of ``version``'s section of spec/CHANGELOG.md
    (the section whose heading starts ``## <version> ``); empty when there is none."""
    text = resources.files("spec").joinpath("CHANGELOG.md").read_text(encoding="utf-8")
    out: dict[str, tuple[str, str]] = {}
    inside = False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line.startswith(f"## {version} ")
            continue
        match = _ROW.match(line) if inside else None
        if match and match.group(1) != "Item":
            out[match.group(1)] = (match.group(2).strip(), match.group(3))
    return out


def item_filters(item: dict[str, Any], version: str) -> list[str]:
    """``--filter`` expressions selecting the vectors of ``version``'s corpus that exercise an
    item: its instructions (rows added or changed, and the mnemonics it ``affects`` when it adds
    none), its
    outcome codes, and for a container item the vectors of chapter 3.1."""
    table = spec.load(version)
    mnemonics: list[str] = []
    codes: list[str] = []
    for op in versioning.operations(item):
        if op["op"] in ("add", "change") and op["file"] == "instructions":
            mnemonics.append(op["row"]["mnemonic"] if op["op"] == "add" else op["match"])
        if op["op"] == "add" and op["file"] == "errors":
            codes.append(op["row"]["code"])
    sections: list[str] = []
    adds = any(op["op"] == "add" and op["file"] == "instructions" for op in versioning.operations(item))
    for affected in item.get("affects", []):
        # An item that adds instructions changes the ones it affects only through them (SSTORE
        # fails in a frame only STATICCALL makes): its vectors are those of what it adds.
        if affected in table.by_mnemonic and not adds:
            mnemonics.append(affected)
        elif affected in table.errors:
            codes.append(affected)
        elif affected.startswith("container "):
            sections.append("3.1")
    return ([f"opcode={m}" for m in dict.fromkeys(mnemonics)] + [f"outcome={c}" for c in codes]
            + [f"section={s}" for s in sections])


def _corpus(version: str) -> list[dict] | None:
    try:
        from conformance.constants import corpus_dir
        from conformance.corpus import store
    except ImportError:
        return None
    folder = corpus_dir(version)
    return store.load(folder) if folder.exists() else None


def _count(vectors: list[dict] | None, filters: list[str]) -> str:
    if vectors is None:
        return "no corpus"
    if not filters:
        return str(len(vectors))
    from conformance.corpus.selection import select
    return str(len(select(vectors, filters)))


def _short(value: Any) -> str:
    if value is None:
        return "—"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def _section_link(version: str, number: str, prefix: str) -> str:
    """A link to section ``number`` of ``version``'s chapters on the site, from a page whose
    way back to the site's root is ``prefix``."""
    text = prose.section_text(version, number)
    if text is None:
        return f"§{number} (not in {version})"
    return f"[§{number}]({prefix}{docversions.version_root(version)}{docversions.chapter_target(number, version)})"


def changes_page(version: str) -> str:
    """The Markdown of the "What changed in ``version``" page."""
    row = spec.version(version)
    if row.base is None:
        raise ValueError(f"version {version} is the base: nothing changed")
    base = row.base
    comparison = spec_diff.compare(base, version)
    logged = changelog_items(version)
    vectors = _corpus(version)
    proof = _proof(base, version)
    prefix = "../"
    lines = [f"# What changed in {version}", "",
             f"Spec {version} (release {row.release}) is spec {base} plus the items below. This page "
             f"is generated from `spec/versions/{version}/diff.toml`, the {version} section of "
             f"`spec/CHANGELOG.md` and the comparison of the two versions as loaded (`rtwo-vm spec diff "
             f"{base} {version}`): {len(comparison.items)} items, {len(comparison.data)} data "
             f"differences, {len(comparison.prose)} prose sections. The [upgrade guide]"
             f"(../guides/upgrading.md) says how to move a conforming {base} VM to {version}.", ""]
    if comparison.problems:
        lines += ['!!! danger "The diff does not match the versions"', "",
                  *(f"    - {p}" for p in comparison.problems), ""]
    lines += [f"Vectors are those of the {version} corpus (`conformance/vectors/{version}/`) that "
              f"`rtwo-vm conformance run --spec-version {version}` selects with the filters shown. "
              f"The proof status is that of `rtwo-vm prove --diff {base} {version}`, run when this "
              "page was built: every instruction of both versions is proved unchanged unless an "
              "item declares it changed, and each declared change is shown by a witness.", ""]
    if proof is not None:
        counts = proof[0].to_json()["counts"]
        lines += ["**Proof:** " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
                  + f" (models at {64} bits; z3 under its deterministic budget, unsat re-checked "
                  "by cvc5).", ""]
        failed = proof[0].failures + proof[0].undecided
        if failed:
            lines += [f'!!! danger "rtwo-vm prove --diff {base} {version} fails"', "",
                      *(f"    - {r.mnemonic}: {r.status}"
                        + (f" (differs in {', '.join(k for k, v in r.components.items() if v == 'differs')})"
                           if r.components else "") + f": {r.note}" for r in failed), ""]
    lines += ["| item | kind | title | data differences | sections | vectors | proof status "
              "| witness vector |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for item in comparison.items:
        short = item["id"].split("/")[1]
        data = [d for d in comparison.data if item["id"] in d.items]
        filters = item_filters(item, version)
        lines.append(f"| [{short}](#{short.lower()}) | {item['kind'].replace('_', ' ')} | "
                     f"{item['title']} | {len(data)} | {len(item['sections'])} | "
                     f"{_count(vectors, filters)} | {_status(proof, item)} | "
                     f"{_witnesses(proof, item)} |")
    lines.append("")
    for item in comparison.items:
        lines += _item(item, comparison, logged, vectors, version, base, prefix)
        lines += _proof_section(proof, item)
    extra = [(k, v) for k, v in logged.items() if k not in {i["id"].split("/")[1] for i in comparison.items}]
    if extra:
        lines += ["## Changelog items without data or prose changes {#changelog-only}", "",
                  "| item | where | change |", "| --- | --- | --- |",
                  *(f"| {k} | {where} | {change} |" for k, (where, change) in extra), ""]
    return "\n".join(lines) + "\n"


def _item(item: dict, comparison: spec_diff.Comparison, logged: dict[str, tuple[str, str]],
          vectors: list[dict] | None, version: str, base: str, prefix: str) -> list[str]:
    short = item["id"].split("/")[1]
    out = [f"## {short}: {item['title']} {{#{short.lower()}}}", "",
           f"*Kind:* {item['kind'].replace('_', ' ')}. *Sections:* "
           + ", ".join(_section_link(version, s, prefix) for s in item["sections"]) + ".", "",
           " ".join(item.get("motivation", "").split()), ""]
    if short in logged:
        out += [f"**Changelog** ({logged[short][0]}): {logged[short][1]}", ""]
    data = [d for d in comparison.data if item["id"] in d.items]
    if data:
        out += ["| data | change | before | after |", "| --- | --- | --- | --- |",
                *(f"| `{d.where}` | {d.change} | {_short(d.before)} | {_short(d.after)} |" for d in data), ""]
    texts = [d for d in comparison.prose if item["id"] in d.items]
    if texts:
        out += ["| section | change | in " + base + " | in " + version + " |", "| --- | --- | --- | --- |"]
        for d in texts:
            number = d.where.split(" ", 1)[1]
            old = _section_link(base, number, prefix) if d.before is not None else "—"
            new = _section_link(version, number, prefix) if d.after is not None else "—"
            out.append(f"| {number} | {d.change} | {old} | {new} |")
        out.append("")
        for d in texts:
            out += [f'??? note "Diff of {d.where}"', "", "    ```diff",
                    *(f"    {line}" if line else "" for line in d.lines), "    ```", ""]
    filters = item_filters(item, version)
    shown = " ".join(f"--filter '{f}'" for f in filters)
    out += ["| checked by | vectors |", "| --- | --- |",
            f"| `rtwo-vm conformance run --spec-version {version}{' ' + shown if shown else ''}` | "
            f"{_count(vectors, filters)} |", ""]
    return out


@functools.cache
def _proof(base: str, version: str):
    """(report, witness vector ids, vectors by version) of ``prove --diff``, or None without
    the proofs package or models of both versions; once per process (a function of the code
    alone, as the site is built from it)."""
    try:
        from proofs import versions
        from proofs.diff import run
    except ImportError:
        return None
    if not all(v in versions.MODELLED for v in (base, version)):
        return None
    from rtwo_vm.commands.prove.diff import witness_vectors
    report = run.run(base, version)
    vectors, ids = witness_vectors(report)
    return report, ids, vectors


def _declared(proof, item: dict):
    return next(i for i in proof[0].declarations.items if i.id == item["id"])


def _status(proof, item: dict) -> str:
    return NOT_PROVED if proof is None else proof[0].item_status(_declared(proof, item))


def _witnesses(proof, item: dict) -> str:
    if proof is None:
        return NO_WITNESS
    found = [f"`{proof[1][r.mnemonic]}`" for r in proof[0].rows_of(_declared(proof, item))
             if proof[1].get(r.mnemonic, "").startswith("diff/")]
    replayed = [r.mnemonic for r in proof[0].rows_of(_declared(proof, item))
                if r.replay is not None and not proof[1].get(r.mnemonic, "").startswith("diff/")]
    if replayed:
        found.append(f"replayed on the interpreter: {', '.join(replayed)} "
                     f"([below](#{item['id'].split('/')[1].lower()}))")
    return ", ".join(found) or NO_WITNESS


def _proof_section(proof, item: dict) -> list[str]:
    if proof is None:
        return []
    report, ids, vectors = proof
    rows = report.rows_of(_declared(proof, item))
    if not rows:
        return []
    out = [f"**Proof** (`rtwo-vm prove --diff {report.old} {report.new}`): "
           f"{report.item_status(_declared(proof, item))}.", "",
           "| instruction | status | differs in | proved equal | witness |",
           "| --- | --- | --- | --- | --- |"]
    for r in rows:
        differs = ", ".join(k for k, v in r.components.items() if v == "differs") or "—"
        equal = sum(1 for v in r.components.values() if v == "equal")
        witness = ids.get(r.mnemonic, "—")
        if r.replay is not None:
            a, b = (r.replay["results"][v] for v in (report.old, report.new))
            witness = (f"{witness}; replayed: {report.old} {a['status']} "
                       f"(compute {a['meters']['compute']}), {report.new} {b['status']} "
                       f"(compute {b['meters']['compute']})")
        out.append(f"| {r.mnemonic} | {r.status} | {differs} | "
                   f"{equal or '—'} components | {witness.replace('|', '/')} |")
    out.append("")
    for r in rows:
        pair = [v for version in (report.old, report.new) for v in vectors[version]
                if v["id"] == ids.get(r.mnemonic)]
        if pair:
            out += [f'??? example "Witness vector {pair[0]["id"]} ({report.old} and {report.new})"',
                    "", "    ```json",
                    *(f"    {json.dumps(v, sort_keys=True)}" for v in pair), "    ```", ""]
    return out
