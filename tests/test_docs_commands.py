"""Every command shown in a doc is tested (issue 39, item 8): each `rtwo-vm ...` command in a
code block of README.md or of docs/**/*.md is parsed by the real command-line parser (without
running it), so that a command a doc shows and the CLI no longer accepts fails here; and the
README fits a screen or two, with the set-up commands getting-started shows too.

The commands of the command-line tour's "Using it" section also run as written
(tests/test_cli_readme.py)."""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import textwrap
from pathlib import Path

import pytest

from rtwo_vm import cli
from rtwo_vm.arguments.inputs import CliError

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)]
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})([^\n]*)\n(.*?)^\1\2[ \t]*$", re.M | re.S)
NOT_SHELL = {"json", "jsonl", "python", "toml", "diff", "mermaid", "yaml", "html", "js", "javascript"}
OPERATORS = {"&&", "||", ";", "|", "&", ">", ">>", "<", "(", ")", ";;", "|&", "&>"}
PLACEHOLDER = re.compile(r"<([A-Za-z][\w .-]*)>")     # <file>, <vector>: a name to fill in
README_LINES = 60           # a screen or two


def commands(markdown: str) -> list[str]:
    """Every `rtwo-vm` (or `.venv/bin/rtwo-vm`) command in the shell code blocks of ``markdown``:
    the program and its arguments up to the next shell operator, placeholders kept as words."""
    out = []
    for match in FENCE.finditer(markdown):
        if match.group(3).strip().lower() in NOT_SHELL:
            continue
        block = textwrap.dedent(match.group(4)).replace("\\\n", " ")
        for line in block.splitlines():
            line = PLACEHOLDER.sub(lambda m: m.group(1).replace(" ", "_").upper(), line.strip().removeprefix("$ "))
            line = re.sub(r"(?<=\s)\d(?=>)", "", line)      # 2>file, 2>&1: a redirection, no argument
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            try:
                tokens = list(lexer)
            except ValueError:      # not shell (an unbalanced quote in output text)
                continue
            out += _commands_of(tokens)
    return out


def _commands_of(tokens: list[str]) -> list[str]:
    found, current, at_start = [], None, True
    for token in tokens:
        if token in OPERATORS:
            if current is not None:
                found.append(shlex.join(current))
            current, at_start = None, token != ">" and token != ">>" and token != "<"
            continue
        if current == ["rtwo-vm"] and token.endswith(":"):
            current, at_start = None, False     # "rtwo-vm conformance: ..." is what a command printed
        elif current is not None:
            current.append(token)
        elif at_start and (token == "rtwo-vm" or token.endswith("/rtwo-vm")):
            current = ["rtwo-vm"]
        elif at_start and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", token):
            at_start = False        # another program: its arguments are not a command of ours
    if current is not None:
        found.append(shlex.join(current))
    return found


@functools.cache
def _parser():
    return cli.build_parser()


def parse_error(command: str) -> str | None:
    """Why the rtwo-vm parser refuses ``command`` (None when it accepts it; nothing runs)."""
    argv = shlex.split(command)[1:]
    try:
        _parser().parse_args(argv)
    except CliError as err:
        return str(err)
    except SystemExit as exit:      # --help, --version: printed and accepted
        return None if exit.code in (0, None) else f"exit {exit.code}"
    return None


def _shown() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), c) for path in DOCS
            for c in commands(path.read_text(encoding="utf-8"))]


@pytest.fixture
def in_a_copy(tmp_path, monkeypatch, capsys):
    """Parsing from a directory holding a copy of examples/ (an option's type may read a file)."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return capsys


def test_the_extractor_finds_commands_where_a_reader_sees_them():
    doc = ("Text `rtwo-vm run not-in-a-block.rasm`.\n\n```sh\n"
           "rtwo-vm run examples/max.rasm --calldata 0x01   # a comment\n"
           "pip install . && .venv/bin/rtwo-vm check; echo rtwo-vm run x\n"
           "rtwo-vm conformance replay build/<file>.json \\\n    --impl \"./my-vm --adapter\" | head\n"
           "RTWO_VM_DB=x.db rtwo-vm results list 2>/dev/null > out.txt\n"
           "rtwo-vm conformance: 3157 vectors of corpus 0123\n```\n\n"
           "```json\n{\"rtwo-vm run\": 1}\n```\n\n"
           "!!! note\n    ```sh\n    rtwo-vm spec show add\n    ```\n")
    assert commands(doc) == ["rtwo-vm run examples/max.rasm --calldata 0x01", "rtwo-vm check",
                             "rtwo-vm conformance replay build/FILE.json --impl './my-vm --adapter'",
                             "rtwo-vm results list", "rtwo-vm spec show add"]


def test_a_command_that_no_longer_parses_fails(in_a_copy):
    planted = "```sh\nrtwo-vm run examples/counter.rasm --no-such-option 3\nrtwo-vm frobnicate\n```\n"
    found = commands(planted)
    assert len(found) == 2
    assert "unrecognized arguments: --no-such-option 3" in parse_error(found[0])
    assert "invalid choice: 'frobnicate'" in parse_error(found[1])
    assert parse_error("rtwo-vm run examples/counter.rasm --compute 10") is None
    assert parse_error("rtwo-vm conformance run --help") is None       # help is printed, not run


def test_every_command_shown_in_a_doc_parses(in_a_copy):
    shown = _shown()
    # the guides and the tour show well over a hundred; each page with commands is seen
    assert len(shown) > 150, len(shown)
    pages = {page for page, _ in shown}
    for page in ("README.md", "docs/usage.md", "docs/getting-started.md", "docs/guides/implementing.md",
                 "docs/guides/proving.md", "docs/guides/fuzzing.md", "docs/guides/serving.md"):
        assert page in pages, page
    refused = [(page, command, why) for page, command in shown if (why := parse_error(command))]
    assert not refused, "\n".join(f"{p}: {c}\n    {w}" for p, c, w in refused)


# -- the README: a screen or two ---------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _sh_blocks(markdown: str) -> list[str]:
    return [m.group(4) for m in FENCE.finditer(markdown) if m.group(3).strip() == "sh"]


def test_the_readme_fits_a_screen_or_two_and_links_the_guides_getting_started_first():
    assert len(README.splitlines()) <= README_LINES, len(README.splitlines())
    assert README.startswith("# RTWO VM\n\nRTWO VM is ")
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    assert links[0] == "docs/getting-started.md"
    for target in links:
        assert (ROOT / target).is_file(), target
    for guide in sorted((ROOT / "docs" / "guides").glob("*.md")):
        assert f"docs/guides/{guide.name}" in links, guide.name
    # the two set-up commands, and nothing else to type
    assert [b.strip() for b in _sh_blocks(README)] == [
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/rtwo-vm check",
        "scripts/install-chromium.sh && scripts/install-nats.sh && python3 -m venv .venv && .venv/bin/pip "
        "install --quiet '.[test,docs,nats,distributed,native,serve]' \\\n    && .venv/bin/ruff check . && "
        ".venv/bin/mypy && .venv/bin/python -m pytest"]


def test_the_figures_are_on_the_benchmarks_page_in_the_navigation():
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for figure in ("ns/iteration", "vectors/s", "events/s", "python benchmarks/proofs_benchmark.py",
                   "python benchmarks/fuzz_benchmark.py", "python benchmarks/state_benchmark.py"):
        assert figure in page and figure not in README, figure
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "  - Benchmarks: benchmarks.md\n" in nav and "  - Using the command line: usage.md\n" in nav


def test_getting_started_shows_the_readme_test_command():
    ours = next(b for b in _sh_blocks(README) if "pytest" in b)
    theirs = next(b for b in _sh_blocks((ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8"))
                  if "pytest" in b)
    assert theirs == ours
