"""Documentation pages rendered from the spec data (used by the MkDocs hook and its tests).

Every figure on these pages comes from spec/data, from the proofs report and from the
conformance corpus when those exist; nothing is typed in twice.
"""

from __future__ import annotations

import importlib
import inspect
import re

import spec
from rtwo_vm.site.versions import banner, chapter_target, introduced, version_root

MERMAID = re.compile(r"```mermaid\n.*?```", re.S)


def offline_chapter(name: str, text: str, version: str) -> str:
    """A chapter as the site shows it: a mermaid diagram (drawn by a script from a CDN, so
    raw text offline) is replaced by the SVG generated from the same spec data."""
    if name.startswith("08-") and MERMAID.search(text):
        return MERMAID.sub(lambda _: lifecycle_svg(version) + "\n\n*The transitions of "
                           "`lifecycle.toml`, drawn from the spec data.*", text, count=1)
    return text


def pages() -> dict[str, str]:
    """Site path -> Markdown for every generated page: the chapters (each clause with its
    checks, rtwo_vm/site/clauses.py), their checks pages, the spec coverage page, instruction
    reference and outcome codes of every version, the other reference pages of the newest,
    and the "What changed" page of every version with a base."""
    from rtwo_vm.site import changes as docchanges, clauses as docclauses
    newest = spec.latest()
    out: dict[str, str] = {}
    for version in spec.names():
        root = version_root(version)
        for name, text in spec.chapters(version).items():
            shown = docclauses.with_badges(offline_chapter(name, text, version), name, version)
            out[f"{root}spec/{name}"] = banner(shown, version, f"spec/{name}")
        out.update(docclauses.pages(version))
        for page, render in (("reference/instructions.md", instruction_reference),
                             ("reference/errors.md", error_reference)):
            out[f"{root}{page}"] = banner(render(version), version, page)
        if spec.version(version).base is not None:
            out[docchanges.changes_path(version)] = docchanges.changes_page(version)
    out["reference/container.md"] = container_page(newest)
    out["reference/lifecycle.md"] = lifecycle_page(newest)
    out["reference/coverage.md"] = coverage_page(newest)
    return out


def anchor(mnemonic: str) -> str:
    return mnemonic.lower()


def _chapter_link(section: str, version: str) -> str:
    return f"../{chapter_target(section, version)}"


def _optional(module: str):
    """An optional package's module, or None when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


_UNAVAILABLE: dict[str, str] = {}   # package -> why it could not be used (for the page's note)


def _versioned(module: str, function: str, version: str, *args):
    """``module.function(*args, version)`` when the function takes a version; a function
    without one (a package that predates versions: it knows the base version only) is called
    for the base version alone. None when the package is missing or cannot serve ``version``;
    the reason is kept in _UNAVAILABLE."""
    try:
        found = getattr(importlib.import_module(module), function)
    except ImportError:
        return None
    except Exception as err:      # a package that fails to load: the page says so, one line
        _UNAVAILABLE[module.split(".")[0]] = f"{module} could not be loaded ({type(err).__name__}: {err})"
        return None
    if "version" in inspect.signature(found).parameters:
        try:
            return found(*args, version=version)
        except ValueError as err:   # proofs.versions.UnmodelledVersion: no models of this version yet
            _UNAVAILABLE[module.split(".")[0]] = f"{module}.{function}: {str(err).splitlines()[0]}"
            return None
    if version != spec.names()[0]:
        _UNAVAILABLE[module.split(".")[0]] = f"{module}.{function} knows spec {spec.names()[0]} only"
        return None
    return found(*args)


_REFUSED: list[str] = []   # why the last report read was not used (for the page's note)


def _report_version(doc: dict) -> str | None:
    """The spec version a proofs report names, if it names one."""
    named = doc.get("spec_version") or (doc.get("scope") or {}).get("spec_version")
    return str(named) if named else None


def _proof_evidence(version: str) -> dict[str, list[dict]]:
    """Theorem rows by mnemonic from the latest full `rtwo-vm prove` report of ``version``, if
    one was produced and is complete and current (proofs.report.assess); otherwise none."""
    _REFUSED.clear()
    # The report `rtwo-vm prove` writes: in the data directory ($RTWO_VM_DATA, else the
    # user's; rtwo_vm/arguments/evidence.py), wherever the site is built from.
    from rtwo_vm.arguments.evidence import default_data_dir
    from rtwo_vm.runtime.tools import EvidenceFiles
    report = EvidenceFiles(default_data_dir()).proofs_report
    if not report.exists():
        return {}
    try:
        from conformance.protocol import loads_bounded
        from spec.files import read_bounded
        doc = loads_bounded(read_bounded(report, 256 << 20, "proofs report"), 64)
    except (OSError, ValueError) as err:
        _REFUSED.append(f"{report} is unreadable ({err})")
        return {}
    if not isinstance(doc, dict):
        _REFUSED.append(f"{report} is not a proofs report")
        return {}
    if _report_version(doc) not in (None, version):
        _REFUSED.append(f"{report} is of spec {_report_version(doc)}, not {version}")
        return {}
    # proofs.report.assess decides whether the report is complete and current for the version
    # it names (checked above to be this page's)
    report_module = _optional("proofs.report")
    judged = report_module.assess(doc) if report_module is not None else None
    usable, why = judged if judged else (False, "the proofs package is not installed")
    if not usable:
        _REFUSED.append(f"{report} was refused: {why}")
        return {}
    rows = doc.get("results", [])
    by_opcode: dict[str, list[dict]] = {}
    for row in rows:
        by_opcode.setdefault(row.get("opcode") or "", []).append(row)
    return by_opcode


def _model_sources(version: str) -> dict[str, str]:
    """Mnemonic -> the z3 model's source, with the word-level rules it closes over."""
    table = _versioned("proofs.instructions", "models", version, 64)
    if table is None:
        return {}
    out = {}
    for mnemonic, model in table.items():
        parts = [inspect.getsource(model)]
        for value in inspect.getclosurevars(model).nonlocals.values():
            if inspect.isfunction(value) or inspect.ismethod(value):
                try:
                    parts.append(inspect.getsource(value))
                except (OSError, TypeError):
                    pass
        out[mnemonic] = "\n\n".join(inspect.cleandoc("\n" + p) if p.startswith(" ") else p
                                    for p in parts)
    return out


def _registered_theorems(version: str) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """Mnemonic -> (theorem name, widths) for every theorem the proof suite registers."""
    registered = _versioned("proofs.theorems", "registry", version)
    out: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for t in registered or ():
        out.setdefault(t.opcode, []).append((t.name, t.widths))
    return out


def _corpus(version: str):
    """(corpus store module, the version's corpus folder), or None without the package."""
    store = _optional("conformance.corpus.store")
    constants = _optional("conformance.constants")
    if store is None or constants is None:
        return None
    return store, constants.corpus_dir(version)


def _vector_counts(version: str) -> dict[str, int]:
    found = _corpus(version)
    if found is None:
        return {}
    store, folder = found
    return store.vectors_per_opcode(folder)


def instruction_reference(version: str | None = None) -> str:
    """The instruction reference of ``version`` (the newest by default)."""
    version = version or spec.latest()
    table = spec.load(version)
    _UNAVAILABLE.clear()
    proofs = _proof_evidence(version)
    vectors = _vector_counts(version)
    sources = _model_sources(version)
    registered = _registered_theorems(version)
    origin = "`spec/data/instructions.toml`" + "".join(
        f" with `spec/versions/{v}/diff.toml`" for v in spec.lineage(version)[1:])
    new = introduced(version)
    lines = ["# Instruction reference", "",
             f"Generated from {origin} (spec {table.version}): "
             f"{len(table.instructions)} instructions. Costs are compute units; dynamic cost "
             "rules are defined in [chapter 5](../spec/05-resources.md).", ""]
    if new:
        lines += [f"New in {version}: " + ", ".join(f"[`{m}`](#{anchor(m)})" for m in new) + ".", ""]
    for type_name in table.instruction_types:
        rows = [i for i in table.instructions if i.type == type_name]
        lines += [f"## {type_name.capitalize()}", "",
                  "| opcode | mnemonic | immediate | stack | base cost | cost rule |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for i in rows:
            imm = f"{i.immediate_size} B {i.immediate_kind}" if i.immediate_size else "—"
            sig = i.signature.replace("|", "\\|")
            lines.append(f"| `0x{i.opcode:02x}` | [`{i.mnemonic}`](#{anchor(i.mnemonic)}) | {imm} "
                         f"| `{sig}` | {i.cost} | {i.cost_rule or '—'} |")
        lines.append("")
    missing = [f"{why}." for why in _UNAVAILABLE.values()]
    proved_note = ("Proof statuses are those of the `rtwo-vm prove` report this site was built "
                   "with." if proofs else (f"No proof statuses: {_REFUSED[0]}. " if _REFUSED
                                           else "No `rtwo-vm prove` report was present when "
                                           "this site was built: ") + "the theorems are "
                   "listed with their widths, without a status.")
    lines += ["## Instructions", "", proved_note, ""]
    if missing:
        lines += ["No z3 models or theorems are shown: " + " ".join(missing), ""]
    for i in table.instructions:
        lines += _entry(i, version, new.get(i.mnemonic), proofs.get(i.mnemonic, []), vectors.get(i.mnemonic),
                        registered.get(i.mnemonic, []), sources.get(i.mnemonic))
    return "\n".join(lines) + "\n"


def _entry(i: spec.Instruction, version: str, item: str | None, results: list[dict], vector_count: int | None,
           registered: list[tuple[str, tuple[int, ...]]], model: str | None) -> list[str]:
    sig = i.signature.replace("|", "\\|")
    gate = f" (gate `{i.gate}`)" if i.gate else ""
    out = [f"### {i.mnemonic} {{#{anchor(i.mnemonic)}}}", "", i.meaning, "",
           "| property | value |", "| --- | --- |",
           f"| encoding | `0x{i.opcode:02x}`" + (f" + {i.immediate_size}-byte little-endian {i.immediate_kind.replace('_', ' ')}" if i.immediate_size else "") + " |",
           f"| stack | `{sig}` — {i.inputs} in, {i.outputs} out |",
           f"| compute | {i.cost} base" + (f" + rule `{i.cost_rule}`" if i.cost_rule else "") + " |",
           f"| determinism | {i.determinism}{gate} |",
           f"| control flow | {i.flow.replace('_', ' ')} |",
           f"| semantics and edge cases | [§{i.section}]({_chapter_link(i.section, version)}) |"]
    if item:
        out.append(f"| since | spec {version} ([item {item}](../changes/{version}.md#{item.lower()})) |")
    if vector_count is not None:
        out.append(f"| conformance vectors | {vector_count} |")
    out.append("")
    status = {(r.get("theorem"), r.get("width")): str(r.get("status")) + (
        f" ({', '.join(sorted(r['proved_by']))})" if r.get("proved_by") else "")
        for r in results}
    if registered:
        out += ["| theorem | width | status |", "| --- | --- | --- |"]
        for name, widths in registered:
            for width in widths:
                out.append(f"| `{name}` | {width} | {status.get((name, width), '—')} |")
        agreement = [r for r in results if str(r.get("theorem", "")).startswith("agreement")]
        for r in agreement:
            out.append(f"| `{r['theorem']}` (interpreter) | {r.get('width')} | {r.get('status')} |")
        out.append("")
    if model:
        out += ['??? note "z3 model (proofs/instructions)"', "", "    ```python",
                *("    " + line if line else "" for line in model.splitlines()), "    ```", ""]
    return out


def error_reference(version: str) -> str:
    table = spec.load(version)
    lines = ["# Outcome codes", "",
             "Generated from `spec/data/errors.toml`. The kind is also the execution status the "
             "code produces; the stage is the lifecycle stage during which it is raised.", "",
             "| code | kind | stage | defined in | meaning |", "| --- | --- | --- | --- | --- |"]
    for e in table.errors.values():
        lines.append(f"| `{e.code}` | {e.kind} | {e.stage} | [§{e.section}]({_chapter_link(e.section, version)}) | {e.meaning} |")
    return "\n".join(lines) + "\n"


def container_page(version: str) -> str:
    from reference_vm.container import HEADER_SIZE, MAGIC
    accepted = spec.load(version).container_versions
    majors = "/".join(sorted({str(v[0]) for v in accepted}))
    minors = "/".join(str(v[1]) for v in accepted)
    fields = [("magic", 4, MAGIC.decode()), ("major", 1, majors),
              ("minor", 1, minors), ("flags", 2, "0"), ("code size C", 4, "u32 LE"),
              ("data size D", 4, "u32 LE")]
    scale, x, boxes = 40, 0, []
    for name, size, value in fields:
        w = size * scale
        boxes.append(f'<rect x="{x}" y="20" width="{w}" height="50" fill="#e8eaf6" stroke="#3949ab"/>'
                     f'<text x="{x + w / 2}" y="42" text-anchor="middle" font-size="12">{name}</text>'
                     f'<text x="{x + w / 2}" y="60" text-anchor="middle" font-size="11" fill="#555">{value}</text>'
                     f'<text x="{x + 2}" y="14" font-size="10" fill="#555">{x // scale}</text>')
        x += w
    tail = (f'<rect x="{x}" y="20" width="160" height="50" fill="#fff3e0" stroke="#ef6c00"/>'
            f'<text x="{x + 80}" y="50" text-anchor="middle" font-size="12">code (C bytes)</text>'
            f'<text x="{x + 2}" y="14" font-size="10" fill="#555">{HEADER_SIZE}</text>'
            f'<rect x="{x + 160}" y="20" width="120" height="50" fill="#e8f5e9" stroke="#2e7d32"/>'
            f'<text x="{x + 220}" y="50" text-anchor="middle" font-size="12">data (D bytes)</text>'
            f'<text x="{x + 162}" y="14" font-size="10" fill="#555">16+C</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{x + 290}" height="80" '
           f'role="img" aria-label="container byte layout">{"".join(boxes)}{tail}</svg>')
    return "\n".join([
        "# Container layout", "",
        f"Every contract is a container: a {HEADER_SIZE}-byte header, the code section and the "
        "data section. All integers are little-endian. The checks and their order are normative "
        "in [chapter 3](../spec/03-container.md). A VM of spec "
        f"{version} runs containers of version{'s' if len(accepted) > 1 else ''} "
        f"{', '.join(f'{a}.{b}' for a, b in accepted)} (header bytes 4 and 5).", "", svg, "",
        "| offset | size | field |", "| --- | --- | --- |",
        *(f"| {sum(s for _, s, _ in fields[:k])} | {size} | {name} ({value}) |"
          for k, (name, size, value) in enumerate(fields)),
        f"| {HEADER_SIZE} | C | code section |", f"| {HEADER_SIZE} + C | D | data section |", ""])


def lifecycle_svg(version: str) -> str:
    """The stages of lifecycle.toml top to bottom in order (the two alternatives of one order
    side by side), with every allowed transition drawn."""
    data = spec.load(version).lifecycle
    stages = data["stage"]
    width, height, step, left, column = 150, 40, 60, 20, 260
    pos: dict[str, tuple[int, int]] = {}
    seen_in_order: dict[int, int] = {}
    for st in stages:
        col = seen_in_order.get(st["order"], 0)
        seen_in_order[st["order"]] = col + 1
        pos[st["name"]] = (left + col * column, 10 + (st["order"] - 1) * step)
    parts = ['<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#3949ab"/></marker></defs>']
    sx: float    # a curve's start and end: a box's edge or its middle
    sy: float
    ex: float
    ey: float
    for t in data["transition"]:
        x1, y1 = pos[t["from"]]
        for target in t["to"]:
            x2, y2 = pos[target]
            colour = "#c62828" if target == "rolled_back" else "#3949ab"
            if x1 == x2:
                parts.append(f'<line x1="{x1 + width / 2}" y1="{y1 + height}" x2="{x2 + width / 2}" '
                             f'y2="{y2}" stroke="{colour}" marker-end="url(#arrow)"/>')
                continue
            if x2 > x1:  # out to the right column: leave sideways, arrive from above
                sx, sy, ex, ey = x1 + width, y1 + height / 2, x2 + width / 2, y2
                curve = f"C{ex},{sy} {ex},{sy} {ex},{ey}"
            else:  # back to the left column: leave downwards, arrive from the side
                sx, sy, ex, ey = x1 + width / 2, y1 + height, x2 + width, y2 + height / 2
                curve = f"C{sx},{ey} {sx},{ey} {ex},{ey}"
            parts.append(f'<path d="M{sx},{sy} {curve}" fill="none" stroke="{colour}" '
                         f'stroke-opacity="0.55" marker-end="url(#arrow)"/>')
    for st in stages:
        x, y = pos[st["name"]]
        fill = {"committed": "#e8f5e9", "rolled_back": "#ffebee"}.get(st["name"], "#e8eaf6")
        parts.append(f'<rect x="{x}" y="{y}" width="{width}" height="{height}" rx="6" fill="{fill}" stroke="#3949ab"/>'
                     f'<text x="{x + width / 2}" y="{y + 25}" text-anchor="middle" font-size="13">'
                     f'{st["order"]}. {st["name"]}</text>')
    total_w = max(x for x, _ in pos.values()) + width + 20
    total_h = max(y for _, y in pos.values()) + height + 10
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{total_h}" '
            f'role="img" aria-label="execution lifecycle">{"".join(parts)}</svg>')


def lifecycle_page(version: str) -> str:
    data = spec.load(version).lifecycle
    rows = [f"| {st['order']} | `{st['name']}` | {st['meaning']} |" for st in data["stage"]]
    return "\n".join([
        "# Execution lifecycle", "",
        "Drawn from `spec/data/lifecycle.toml`: every execution passes these ten stages in "
        "order; stage 9 is `committed` or `rolled_back`. Red arrows are the ways to "
        "`rolled_back`. The normative text is [chapter 8](../spec/08-lifecycle.md).", "",
        lifecycle_svg(version), "", "| order | stage | meaning |", "| --- | --- | --- |", *rows, ""])


def coverage_page(version: str) -> str:
    """The corpus's opcode x outcome matrix as a grid: one row per opcode in table order, one
    column per outcome seen anywhere; a cell's shade grows with its vector count."""
    coverage_mod = _optional("conformance.corpus.coverage")
    corpus = _optional("conformance.corpus.store")
    head = ["# Conformance coverage", ""]
    if coverage_mod is None or corpus is None:
        return "\n".join(head + ["The conformance package is not installed.", ""])
    folder = _corpus(version)
    if folder is None or not folder[1].exists():
        return "\n".join(head + [f"No conformance corpus of spec {version} is committed.", ""])
    cov = coverage_mod.measure(corpus.load(folder[1]), version).to_json()
    matrix = cov["matrix"]
    table = spec.load(version)
    errors = list(table.errors)
    seen = {col for row in matrix.values() for col in row}
    statuses = [c for c in ("success", "reverted") if c in seen]
    codes = [c for c in errors if c in seen]
    bounds = sorted(c for c in seen if c not in statuses and c not in codes)
    columns = statuses + codes + bounds
    peak = max((n for row in matrix.values() for n in row.values()), default=1)

    def cell(n: int) -> str:
        if not n:
            return '<td class="cov0"></td>'
        lightness = 65 - int(50 * (n / peak) ** 0.35)
        ink = "#fff" if lightness < 45 else "#123"
        return (f'<td style="background:hsl(130,45%,{lightness}%);color:{ink}" '
                f'title="{n} vectors">{n}</td>')

    header = "".join(f'<th><span>{c}</span></th>' for c in columns)
    rows = []
    for ins in table.instructions:
        row = matrix.get(ins.mnemonic, {})
        rows.append(f'<tr><th><a href="instructions.html#{anchor(ins.mnemonic)}">{ins.mnemonic}</a></th>'
                    + "".join(cell(row.get(c, 0)) for c in columns) + "</tr>")
    # The grid scrolls inside its own frame, its opcode names and outcome headers sticky
    # (docs/stylesheets/extra.css: .cov-scroll); borders stay separate so that the sticky
    # cells keep theirs.
    style = ("<style>.cov{border-collapse:separate;border-spacing:0;font-size:10px}.cov td{width:18px;"
             "height:16px;text-align:center;border:1px solid #eee;color:#123}.cov th{font-weight:normal;"
             "text-align:right;padding-right:4px;white-space:nowrap}.cov thead th{height:170px;"
             "vertical-align:bottom}.cov thead th span{writing-mode:vertical-rl;transform:rotate(180deg)}"
             ".cov0{background:#fafafa}</style>")
    summary = (f"{cov['vectors']} vectors ({', '.join(f'{n} {s}' for s, n in cov['sources'].items())}); "
               f"opcodes {cov['opcodes']['covered']}/{cov['opcodes']['target']}, outcome codes "
               f"{cov['outcome_codes']['covered']}/{cov['outcome_codes']['target']}, boundaries "
               f"{cov['boundaries']['covered']}/{cov['boundaries']['target']}.")
    return "\n".join(head + [
        f"Computed from the committed corpus of spec {version} (`conformance/vectors/{version}/`) "
        "when the site is built: "
        "each row is an opcode, each column an outcome (a status, an outcome code, or a "
        "resource boundary at limit − 1, limit or limit + 1); a cell counts the vectors of that "
        "opcode with that outcome. `rtwo-vm vectors coverage` prints the same matrix.", "",
        summary, "", style,
        f'<div class="cov-scroll"><table class="cov"><thead><tr><th>opcode</th>{header}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div>', ""])
