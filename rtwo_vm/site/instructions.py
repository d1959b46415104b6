"""The instruction reference of every version: an index (one table per instruction type, each
mnemonic linking its page) and one page per instruction, at ``reference/instructions/<mnemonic>.md``
below the version's folder (rtwo_vm/site/versions.py).

An instruction's page holds everything known about it, each part generated from where it is
defined: its row of the instruction table and the clauses of the chapters that define it, quoted
(spec/data, spec/chapters); its theorems with their statuses and its z3 model (proofs/); the
vectors of the committed corpus tagged with it (conformance/vectors/); and the clauses that
define it or that its vectors and theorems check, with their checks (rtwo_vm/clause_coverage.py).
A version's pages hold that version's instructions only.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import spec
from rtwo_vm.site import clauses as docclauses, evidence
from rtwo_vm.site.versions import banner, chapter_target, introduced, version_root
from spec import clauses as spec_clauses

if TYPE_CHECKING:
    from rtwo_vm.clause_coverage import Report

INDEX = "reference/instructions.md"
SHOWN_VECTORS = 400          # vector ids listed on a page (the rest are counted)
_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|/)([^)#]*)(#[^)]*)?\)")


def anchor(mnemonic: str) -> str:
    return mnemonic.lower()


def page_path(mnemonic: str) -> str:
    """The site path of an instruction's page below its version's folder."""
    return f"reference/instructions/{anchor(mnemonic)}.md"


@dataclass
class Evidence:
    """What the pages of one version show beside the spec data (gathered once per version)."""
    proofs: dict[str, list[dict]] = field(default_factory=dict)
    registered: dict[str, list[tuple[str, tuple[int, ...]]]] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    vectors: dict[str, list[dict]] | None = None
    notes: list[str] = field(default_factory=list)
    coverage: "Report | None" = None


def gather(version: str) -> Evidence:
    evidence.UNAVAILABLE.clear()
    found = Evidence(proofs=evidence.proof_evidence(version))
    found.vectors = evidence.vectors_by_opcode(version)
    found.models = evidence.model_sources(version)
    found.registered = evidence.registered_theorems(version)
    found.notes = [("Proof statuses are those of the `rtwo-vm prove` report this site was built "
                    "with." if found.proofs else (f"No proof statuses: {evidence.REFUSED[0]}. " if evidence.REFUSED
                                                  else "No `rtwo-vm prove` report was present when "
                                                  "this site was built: ") + "the theorems are "
                    "listed with their widths, without a status.")]
    missing = [f"{why}." for why in evidence.UNAVAILABLE.values()]
    if missing:
        found.notes.append("No z3 models or theorems are shown: " + " ".join(missing))
    found.coverage = docclauses.report(version)
    return found


def pages(version: str) -> dict[str, str]:
    """Site path -> Markdown: ``version``'s index and the page of each of its instructions."""
    root = version_root(version)
    found = gather(version)
    out = {f"{root}{INDEX}": banner(index(version, found), version, INDEX)}
    for ins in spec.load(version).instructions:
        path = page_path(ins.mnemonic)
        out[f"{root}{path}"] = banner(instruction_page(ins, version, found), version, path)
    return out


def index(version: str, found: Evidence) -> str:
    table = spec.load(version)
    origin = "`spec/data/instructions.toml`" + "".join(
        f" with `spec/versions/{v}/diff.toml`" for v in spec.lineage(version)[1:])
    new = introduced(version)
    link = lambda m: f"[`{m}`](instructions/{anchor(m)}.md)"   # noqa: E731
    lines = ["# Instruction reference", "",
             f"Generated from {origin} (spec {table.version}): {len(table.instructions)} "
             "instructions, each with a page of its own: its encoding and semantics in the spec's "
             "words, its proofs, its conformance vectors and the clauses that define it. Costs are "
             "compute units; dynamic cost rules are defined in [chapter 5](../spec/05-resources.md).", ""]
    if new:
        lines += [f"New in {version}: " + ", ".join(link(m) for m in new) + ".", ""]
    vectors = found.vectors or {}
    for type_name in table.instruction_types:
        lines += [f"## {type_name.capitalize()}", "",
                  "| opcode | mnemonic | immediate | stack | base cost | cost rule | vectors |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for i in (i for i in table.instructions if i.type == type_name):
            imm = f"{i.immediate_size} B {i.immediate_kind}" if i.immediate_size else "—"
            sig = i.signature.replace("|", "\\|")
            count = len(vectors.get(i.mnemonic, ())) if found.vectors is not None else "—"
            lines.append(f"| `0x{i.opcode:02x}` | {link(i.mnemonic)} | {imm} | `{sig}` | {i.cost} "
                         f"| {i.cost_rule or '—'} | {count} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def _spec_link(section: str, version: str) -> str:
    return f"../../{chapter_target(section, version)}"


def _relinked(text: str, chapter: str) -> str:
    """Clause text written in ``spec/<chapter>`` with its relative links made to work from an
    instruction page (two folders down from the version's root)."""
    def one(match: re.Match) -> str:
        target, fragment = match.group(1), match.group(2) or ""
        return f"](../../spec/{target or chapter}{fragment})"
    return _LINK.sub(one, text)


def _quote(text: str) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in text.strip().splitlines()]


def instruction_page(i: spec.Instruction, version: str, found: Evidence) -> str:
    table = spec.load(version)
    item = introduced(version).get(i.mnemonic)
    sig = i.signature.replace("|", "\\|")
    gate = f" (gate `{i.gate}`)" if i.gate else ""
    rule = ""
    if i.cost_rule:
        section = spec_clauses.rule_section(i.cost_rule, version)
        rule = f" + rule [`{i.cost_rule}`]({_spec_link(section, version)})" if section else f" + rule `{i.cost_rule}`"
    lines = [f"# {i.mnemonic}", "", i.meaning, "",
             f"[All instructions](../instructions.md) · {i.type} · section "
             f"[§{i.section}]({_spec_link(i.section, version)})", "",
             "## Encoding and semantics", "",
             "| property | value |", "| --- | --- |",
             f"| encoding | `0x{i.opcode:02x}`" + (f" + {i.immediate_size}-byte little-endian "
                                                  f"{i.immediate_kind.replace('_', ' ')}" if i.immediate_size else "") + " |",
             f"| stack | `{sig}` — {i.inputs} in, {i.outputs} out |",
             f"| compute | {i.cost} base{rule} |",
             f"| determinism | {i.determinism}{gate} |",
             f"| control flow | {i.flow.replace('_', ' ')} |",
             f"| semantics and edge cases | [§{i.section}]({_spec_link(i.section, version)}) |"]
    if item:
        lines.append(f"| since | spec {version} ([item {item}](../../changes/{version}.md#{item.lower()})) |")
    lines.append("")
    defining = spec_clauses.defining(i.mnemonic, version)
    if defining:
        by_id = spec_clauses.by_id(version)
        lines += [f"In the words of section {i.section} of spec {table.version}:", ""]
        for clause_id in defining:
            clause = by_id[clause_id]
            text = spec_clauses.strip_markers(clause.lead + "\n\n" + clause.text if clause.lead else clause.text)
            lines += _quote(_relinked(text, clause.chapter))
            lines += [">", f"> — clause [{clause_id}](../../spec/{clause.chapter}#{clause_id})", ""]
    lines += _proofs(i, found)
    lines += _vectors(i, version, found)
    lines += _clauses(i, version, found, defining)
    return "\n".join(lines) + "\n"


def _proofs(i: spec.Instruction, found: Evidence) -> list[str]:
    registered = found.registered.get(i.mnemonic, [])
    results = found.proofs.get(i.mnemonic, [])
    out = ["## Proofs", "", *(f"{note}" for note in found.notes), ""]
    if not registered:
        return out + ["No theorem of the proof suite names this instruction.", ""]
    status = {(r.get("theorem"), r.get("width")): str(r.get("status")) + (
        f" ({', '.join(sorted(r['proved_by']))})" if r.get("proved_by") else "") for r in results}
    out += ["| theorem | width | status |", "| --- | --- | --- |"]
    for name, widths in registered:
        for width in widths:
            out.append(f"| `{name}` | {width} | {status.get((name, width), '—')} |")
    for r in results:
        if str(r.get("theorem", "")).startswith("agreement"):
            out.append(f"| `{r['theorem']}` (interpreter) | {r.get('width')} | {r.get('status')} |")
    out.append("")
    model = found.models.get(i.mnemonic)
    if model:
        out += ['??? note "z3 model (proofs/instructions)"', "", "    ```python",
                *("    " + line if line else "" for line in model.splitlines()), "    ```", ""]
    return out


def _vectors(i: spec.Instruction, version: str, found: Evidence) -> list[str]:
    out = ["## Conformance vectors", ""]
    if found.vectors is None:
        return out + [f"No conformance corpus of spec {version} was present when this site was built.", ""]
    mine = found.vectors.get(i.mnemonic, [])
    choose = f"`rtwo-vm vectors list --spec-version {version} --filter 'opcode={i.mnemonic}'`"
    if not mine:
        return out + [f"No vector of the spec {version} corpus is tagged with {i.mnemonic} ({choose}).", ""]
    outcomes = Counter(str(v["tags"].get("outcome")) for v in mine)
    out += [f"{len(mine)} vectors of the spec {version} corpus (`conformance/vectors/{version}/`) "
            f"exercise {i.mnemonic}; {choose} lists them and `rtwo-vm vectors show ID` prints one.", "",
            "| outcome | vectors |", "| --- | --- |",
            *(f"| `{name}` | {n} |" for name, n in sorted(outcomes.items(), key=lambda kv: (-kv[1], kv[0]))), ""]
    shown = mine[:SHOWN_VECTORS]
    title = f"The {len(mine)} vector ids" + (f" (the first {len(shown)})" if len(shown) < len(mine) else "")
    out += [f'??? example "{title}"', "", *(f"    - `{v['id']}` ({v['tags'].get('outcome')})" for v in shown), ""]
    if len(shown) < len(mine):
        out += [f"    and {len(mine) - len(shown)} more.", ""]
    return out


def _proves(check: str) -> str:
    """The instruction a theorem row ("ADD stack_effect") or agreement check
    ("agreement_branches ADD") is of (proofs/links.py names them so)."""
    words = check.split()
    return words[-1] if words[0].startswith("agreement") else words[0]


def _of(link, i: spec.Instruction) -> bool:
    """Whether ``link`` declares something of this instruction: a selector that names it or its
    section (``opcode=ADD``, ``id=policy/ADD/*``, ``instructions of 6.3``), or a theorem or
    agreement check other than those of every instruction (listed on the coverage page)."""
    if link.kind in ("theorem", "agreement"):
        return not link.key.endswith("(every instruction)")
    return bool(re.search(rf"(?<![A-Z0-9]){i.mnemonic}(?![A-Z0-9])", link.key)) or link.key.endswith(f" of {i.section}")


def _clauses(i: spec.Instruction, version: str, found: Evidence, defining: tuple[str, ...]) -> list[str]:
    """The clauses that define the instruction, then those its vectors and theorems check."""
    out = ["## Clauses", ""]
    report = found.coverage
    if report is None:
        return out + ["The clause coverage could not be computed.", ""]
    ids = {v["id"] for v in (found.vectors or {}).get(i.mnemonic, [])}
    rows = []
    for entry in report.clauses:
        mine = [link for link in entry.links if _of(link, i)]
        by_vectors = {c for link in mine if link.kind in ("vector", "scenario") for c in link.checks} & ids
        by_theorems = {c for link in mine if link.kind in ("theorem", "agreement")
                       for c in link.checks if _proves(c) == i.mnemonic}
        why = (["defines it"] if entry.clause.id in defining else []) + (
            [f"{len(by_vectors)} of its vectors"] if by_vectors else []) + (
            [f"{len(by_theorems)} of its proofs"] if by_theorems else [])
        if why:
            rows.append((entry.clause.id in defining, entry, why))
    if not rows:
        return out + ["No clause defines this instruction by name, and no check of it is linked to one.", ""]
    rows.sort(key=lambda row: not row[0])        # the defining clauses first, then in text order
    out += [f"The clauses of spec {version} that define {i.mnemonic}, and those that checks of it "
            "check: vectors selected by its name or section, its theorems and its agreement checks "
            "(what every instruction's checks check is on the [spec coverage page]"
            "(../spec-coverage.md)). `rtwo-vm spec coverage --clause ID` prints a clause's checks; "
            "a clause links to its text, its checks to its chapter's checks page.", "",
            "| clause | section | why here | all its checks | text |", "| --- | --- | --- | --- | --- |"]
    for _, entry, why in rows:
        clause = entry.clause
        counts = ", ".join(f"{entry.count(k)} {docclauses.NAMES[k]}" for k in docclauses.SHORT
                           if entry.count(k)) or (entry.reason.kind if entry.reason else "none")
        summary = html.escape(clause.summary, quote=False).replace("|", "\\|")
        out.append(f"| [{clause.id}](../../spec/{clause.chapter}#{clause.id}) | {clause.section} | "
                   f"{', '.join(why)} | [{counts}](../../clauses/{clause.chapter}#{clause.id}) | {summary} |")
    out.append("")
    return out
