"""Documentation pages rendered from the spec data (used by the MkDocs hook and its tests).

Every figure on these pages comes from spec/data, from the proofs report and from the
conformance corpus when those exist; nothing is typed in twice.
"""

from __future__ import annotations

import re

import spec
from rtwo_vm.site import instructions as docinstructions
from rtwo_vm.site.evidence import corpus as _corpus, optional as _optional
from rtwo_vm.site.instructions import anchor
from rtwo_vm.site.versions import banner, changes_path, chapter_target, version_root

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
    checks, rtwo_vm/site/clauses.py), their checks pages, the spec coverage page, the
    instruction index and one page per instruction (rtwo_vm/site/instructions.py) and the
    outcome codes of every version, the other reference pages of the newest,
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
        out.update(docinstructions.pages(version))
        out[f"{root}reference/errors.md"] = banner(error_reference(version), version, "reference/errors.md")
        if spec.version(version).base is not None:
            out[changes_path(version)] = docchanges.changes_page(version)
    out["reference/container.md"] = container_page(newest)
    out["reference/lifecycle.md"] = lifecycle_page(newest)
    out["reference/coverage.md"] = coverage_page(newest)
    return out


def _chapter_link(section: str, version: str) -> str:
    return f"../{chapter_target(section, version)}"


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
        rows.append(f'<tr><th><a href="instructions/{anchor(ins.mnemonic)}.html">{ins.mnemonic}</a></th>'
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
