"""The documentation site: it builds strictly from the spec, and a real browser shows every
opcode on the instruction reference page."""

from __future__ import annotations

import functools
import json
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import spec
from rtwo_vm.site import pages as docgen

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


NEWEST = spec.latest()


def _pages_of(version: str) -> dict[str, str]:
    """Mnemonic -> the Markdown of its page, for every instruction of ``version``."""
    from rtwo_vm.site import instructions as docinstructions
    root = "" if version == NEWEST else f"v{version}/"
    pages = docinstructions.pages(version)
    return {i.mnemonic: pages[f"{root}reference/instructions/{i.mnemonic.lower()}.md"]
            for i in spec.load(version).instructions}


def test_generated_reference_has_a_page_per_opcode_linked_from_the_index():
    pages = docgen.pages()
    index = pages["reference/instructions.md"]
    table = spec.load(NEWEST)
    assert "\n### " not in index                       # no entries on the index any more
    for ins in table.instructions:
        row = next(line for line in index.splitlines() if line.startswith(f"| `0x{ins.opcode:02x}` |"))
        assert f"| [`{ins.mnemonic}`](instructions/{ins.mnemonic.lower()}.md) |" in row
        page = pages[f"reference/instructions/{ins.mnemonic.lower()}.md"]
        assert page.startswith(f"# {ins.mnemonic}\n") and ins.meaning in page
        assert f"| encoding | `0x{ins.opcode:02x}`" in page


def _proofs_of(version: str):
    """The proofs package's models of ``version``, or a skip naming why they cannot be had
    on this checkout (the package is migrated to versions on its own branch)."""
    try:
        from proofs import instructions
        return instructions.models(64, version=version)
    except Exception as err:   # noqa: BLE001 - any failure to load is the reason to show
        pytest.skip(f"proofs cannot model spec {version} here: {type(err).__name__}: {err}")


@pytest.mark.parametrize("version", spec.names())
def test_each_entry_shows_its_theorems_and_model(version):
    models = _proofs_of(version)
    for mnemonic, entry in _pages_of(version).items():
        assert "| `stack_effect` | 64 |" in entry and "| `halts_exactly` | 64 |" in entry
        assert ("z3 model" in entry and "```python" in entry) == (mnemonic in models)


def test_a_proofs_package_that_cannot_serve_a_version_is_named_on_the_page():
    try:
        from proofs import instructions
        instructions.models(64, version=NEWEST)
    except Exception as err:   # noqa: BLE001
        page = _pages_of(NEWEST)["ADD"]
        assert "No z3 models or theorems are shown: proofs." in page, err
        assert '??? note "z3 model' not in page
    else:
        pytest.skip("the proofs package serves every version here")


def test_coverage_grid_has_a_row_per_opcode():
    page = docgen.pages()["reference/coverage.md"]
    for ins in spec.load(NEWEST).instructions:
        assert f'href="instructions/{ins.mnemonic.lower()}.html">{ins.mnemonic}</a></th>' in page


def test_every_error_code_is_listed():
    page = docgen.pages()["reference/errors.md"]
    for code in spec.load(NEWEST).errors:
        assert f"`{code}`" in page


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    # Built from a directory of its own, with a data directory of its own: the docs read the
    # proofs report from the data directory, and the user's (an earlier `rtwo-vm check`) must
    # not matter.
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(ROOT / "mkdocs.yml"), "-d", str(out)],
                          cwd=tmp_path_factory.mktemp("docs-cwd"), capture_output=True,
                          text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1",
                               "RTWO_VM_DATA": str(tmp_path_factory.mktemp("data"))})
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_site_builds_strictly_with_every_chapter(site):
    for name in spec.chapters(NEWEST):
        assert (site / "spec" / name.replace(".md", ".html")).exists(), name
    # every older version's chapters and reference under v<version>/, in the navigation
    home = (site / "index.html").read_text(encoding="utf-8")
    for version in spec.names()[:-1]:
        for name in [*(f"spec/{n}" for n in spec.chapters(version)), "reference/instructions.md"]:
            page = f"v{version}/{name}".replace(".md", ".html")
            assert (site / page).exists(), page
            assert f'href="{page}"' in home, page
    for version in spec.names()[1:]:
        assert f'href="changes/{version}.html"' in home


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "Chromium is missing: scripts/install-chromium.sh installs it (CI runs it)"
    return found


def test_browser_shows_every_opcode_on_the_index_and_an_instruction_on_its_page(served, tmp_path):
    url = f"{served}/reference/instructions.html"
    dom = subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    linked = set(re.findall(r'<a href="instructions/([a-z0-9]+)\.html">', dom))
    missing = [i.mnemonic for i in spec.load(NEWEST).instructions if i.mnemonic.lower() not in linked]
    assert not missing, f"not linked: {missing}"
    assert "Instruction reference" in dom
    page = f"{served}/reference/instructions/add.html"
    add = subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile1'}",
                          "--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    assert re.search(r'<h1 id="add">ADD', add) and "pushes (<em>a</em> + <em>b</em>) mod 2^W" in add
    shot = tmp_path / "reference.png"
    subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}",
                    f"--screenshot={shot}", "--window-size=1280,900", page],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


def test_each_instruction_has_a_page_per_version_found_by_search(site):
    """Issue 39, item 7: a page per instruction in every version that has it (none for an
    instruction the version lacks), each in the site search's index."""
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    located = {doc["location"].split("#")[0] for doc in index["docs"]}
    for version in spec.names():
        root = "" if version == NEWEST else f"v{version}/"
        mine = {i.mnemonic.lower() for i in spec.load(version).instructions}
        for mnemonic in mine:
            assert (site / f"{root}reference/instructions/{mnemonic}.html").is_file(), (version, mnemonic)
        built = {p.stem for p in (site / f"{root}reference/instructions").glob("*.html")}
        assert built == mine, (version, built ^ mine)
    assert "mulhu" not in {p.stem for p in (site / "v1.0/reference/instructions").glob("*.html")}
    # ADD (arithmetic), SSTORE (storage) and MULHU (new in 1.1) each found by its name
    for mnemonic in ("ADD", "SSTORE", "MULHU"):
        page = f"reference/instructions/{mnemonic.lower()}.html"
        assert page in located, page
        titles = [d["title"] for d in index["docs"] if d["location"] == page]
        assert titles == [mnemonic], titles
    assert "v1.0/reference/instructions/add.html" in located


# -- rendering offline and from disk (issue 13, item 6) ----------------------------------------

def _pages(site: Path) -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in site.rglob("*.html")}


def test_no_page_needs_a_cdn_and_the_lifecycle_is_an_svg(site):
    for path, html in _pages(site).items():
        assert 'class="mermaid"' not in html, path
        assert not re.search(r'<script[^>]+src="https?://', html), path
        assert not re.search(r'<link[^>]+href="https?://', html), path  # fonts, styles
    chapter = (site / "spec" / "08-lifecycle.html").read_text(encoding="utf-8")
    assert 'aria-label="execution lifecycle"' in chapter and "stateDiagram" not in chapter


def test_the_site_works_opened_from_disk(site):
    """Every relative link of every page names a file that exists (no directory URLs)."""
    broken = []
    for path, html in _pages(site).items():
        for href in re.findall(r'href="([^"#?]+)(?:[#?][^"]*)?"', html):
            if re.match(r"[a-z]+:", href) or href.startswith("/"):
                continue
            target = (path.parent / href).resolve()
            if not target.is_file():
                broken.append((str(path.relative_to(site)), href))
    assert not broken, broken[:10]


def test_the_home_page_links_the_guides(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    for guide in ("implementing", "vectors", "proving", "services"):
        assert f'href="guides/{guide}.html"' in home, guide


def test_code_names_stay_whole_and_the_coverage_grid_scrolls(site):
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    assert re.search(r"\.md-typeset code \{[^}]*word-break: normal", css)
    # The grid scrolls within its frame (both ways, its height bounded so that the horizontal
    # scrollbar is in sight), with sticky opcode names and outcome headers (issue 23, item 8).
    frame = re.search(r"\.md-typeset \.cov-scroll \{([^}]*)\}", css)
    assert frame and "overflow: auto" in frame.group(1) and re.search(r"max-height: \d+vh", frame.group(1))
    for cells, edge in (("thead th", "top: 0"), ("tbody th", "left: 0")):
        rule = re.search(r"\.cov-scroll \.cov " + cells + r" \{([^}]*)\}", css)
        assert rule and "position: sticky" in rule.group(1) and edge in rule.group(1), cells
        assert "background" in rule.group(1)      # sticky cells hide what scrolls beneath them
    grid = (site / "reference" / "coverage.html").read_text(encoding="utf-8")
    assert '<div class="cov-scroll"><table class="cov">' in grid
    assert "border-collapse:separate" in grid     # collapsed borders vanish from sticky cells
    assert "stylesheets/extra.css" in grid


def _header_rows(markdown: str) -> list[str]:
    """The header line of every Markdown table (the line above a | --- | delimiter row)."""
    lines = markdown.splitlines()
    return [lines[n - 1] for n in range(1, len(lines))
            if re.fullmatch(r"\|( *:?-{3,}:? *\|)+", lines[n].strip())]


def test_every_generated_table_has_a_real_header():
    """No headerless table (an empty grey header row): issue 23, item 8."""
    pages = docgen.pages()
    assert any("| property | value |" in row for row in _header_rows(pages["reference/instructions/add.md"]))
    for name, page in pages.items():
        for row in _header_rows(page):
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            assert all(cells), (name, row)
    assert _header_rows("| | |\n| --- | --- |\n| a | b |") == ["| | |"]    # the check sees one


def test_a_proofs_report_of_another_version_gives_no_status(tmp_path, monkeypatch):
    monkeypatch.setenv("RTWO_VM_DATA", str(tmp_path / "data"))   # where `rtwo-vm prove` writes it
    (tmp_path / "data").mkdir()
    report = tmp_path / "data" / "proofs-report.json"
    report.write_text(json.dumps(
        {"spec_version": "1.0", "format": 1, "scope": {"complete": True},
         "results": [{"theorem": "cost", "opcode": "MULHU", "width": 64, "status": "proved"}]}))
    page = _pages_of(NEWEST)["MULHU"]
    assert f"No proof statuses: {report} is of spec 1.0, not {NEWEST}." in page
    assert "| proved |" not in page


def test_the_navigation_names_the_newest_version(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    assert re.search(rf">\s*Specification {re.escape(NEWEST)}\s*<", home)
    assert re.search(r">\s*What changed in 1\.1\s*<", home) and re.search(r">\s*Spec 1\.0\s*<", home)
