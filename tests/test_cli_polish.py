"""The rough edges a newcomer hits (issue 13, items 7 and 8): grouped help with text for
every option, case-insensitive mnemonics, usage errors for unknown names, the left-out
vectors named, the examples packaged, and the project's hygiene files."""

from __future__ import annotations

import argparse
import glob
import tomllib
from pathlib import Path

import pytest

from conformance.corpus.fill import MAX_GENERATED_BYTES, fill
from test_cli_hostile import COUNTER, refused, run_cli

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _parsers():
    from rtwo_vm.cli import build_parser

    def walk(parser, path):
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from walk(child, (*path, name))
    return list(walk(build_parser(), ()))


def test_the_top_level_help_groups_every_command():
    code, out, _ = run_cli("--help")
    assert code == 0
    heads = [line for line in out.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert {"Contracts:", "Verification:"} <= set(heads) and any(h.startswith("Runtime services") for h in heads)
    commands = [path[0] for path, _ in _parsers() if len(path) == 1]
    listed = [line.split()[0] for line in out.split("options:")[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ") and not line.strip().startswith("-")]
    assert sorted(listed) == sorted(commands)  # each command once, in some group


def test_run_groups_its_options():
    code, out, _ = run_cli("run", "--help")
    assert code == 0
    sections = {block.split(":\n", 1)[0]: block for block in out.split("\n\n")}
    assert "--compute" in sections["sandbox limits"] and "--forbid" in sections["context and policy"]
    assert "--calldata" in sections["the call"] and "--canonical" in sections["output"]


def test_every_option_has_help_and_no_help_has_rest_backquotes():
    missing, quoted = [], []
    for path, parser in _parsers():
        for text in (parser.description or "", parser.epilog or ""):
            if "`" in text:
                quoted.append((path, text[:60]))
        for action in parser._actions:
            if action.option_strings and not action.help:
                missing.append((path, action.option_strings))
            if action.help and "`" in action.help:
                quoted.append((path, action.help[:60]))
    assert not missing and not quoted, (missing, quoted)


def test_mnemonics_are_case_insensitive_everywhere(tmp_path):
    lower, upper = run_cli("run", COUNTER, "--forbid", "add"), run_cli("run", COUNTER, "--forbid", "ADD")
    assert lower == upper and lower[0] == 1 and '"INSTRUCTION_FORBIDDEN"' in lower[1]
    assert run_cli("run", COUNTER, "--forbid", "Arithmetic") == lower
    assert run_cli("spec", "show", "add") == run_cli("spec", "show", "ADD")
    db = str(tmp_path / "p.db")
    assert run_cli("policy", "create", "--forbid", "sstore", "--db", db)[1] == \
        run_cli("policy", "create", "--forbid", "SSTORE", "--db", db)[1]
    assert run_cli("instructions", "show", "sload")[0] == 0
    # prove accepts the lower-case mnemonic: it is the width that is refused here
    refused("prove", "--opcode", "add", "--width", "7", fragment="--width")


@pytest.mark.parametrize("args", [
    ("run", COUNTER, "--forbid", "FOO"), ("run", COUNTER, "--allow", "ADD", "--allow", "bogus"),
    ("policy", "create", "--forbid", "FOO", "--db", "{db}"),
])
def test_unknown_operation_names_are_usage_errors(args, tmp_path):
    args = [a.format(db=tmp_path / "x.db") for a in args]
    refused(*args, fragment="not a mnemonic or instruction type")
    assert not (tmp_path / "x.db").exists()


def test_spec_show_without_a_name_is_a_usage_error():
    refused("spec", "show", fragment="needs a mnemonic")


def test_fill_names_each_generated_vector_it_leaves_out_and_why():
    filled = fill(("smt", "random"), versions=("1.0",), validate=False).corpora["1.0"]
    note = next(n for n in filled.notes if "left out" in n)
    count = int(note.split()[0])
    named = note.split("): ", 1)[1].split(", smt/") if "smt/" in note else []
    assert count >= 1 and len(note.split(" bytes)")) - 1 == count
    assert f"{MAX_GENERATED_BYTES // 1024} KiB" in note and named
    kept = {v["id"] for v in filled.vectors}
    for entry in note.split("): ", 1)[1].split(", "):
        vector_id, size = entry.rsplit(" (", 1)
        assert vector_id not in kept and int(size.split()[0].replace(",", "")) > MAX_GENERATED_BYTES


def test_the_examples_are_installed_with_the_package():
    data = PYPROJECT["tool"]["setuptools"]["data-files"]
    from rtwo_vm.examples import bundled_directory
    assert bundled_directory().name == "examples"
    # Where each file lands under <prefix>, relative to the installed examples directory.
    installed = {f"{Path(target).relative_to('share/rtwo-vm').as_posix()}/{Path(p).name}"
                 for target, patterns in data.items() for g in patterns
                 for p in glob.glob(str(ROOT / g))}
    scenario = tomllib.loads((ROOT / "examples" / "scenarios.toml").read_text())
    needed = {c["code"] for s in scenario["scenario"] for c in s["contracts"].values()}
    resolved = {Path("examples", code).as_posix() for code in needed}
    resolved = {"/".join(_normalise(r.split("/"))) for r in resolved}
    assert resolved | {"examples/scenarios.toml"} <= installed, resolved - installed


def _normalise(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            out.pop()
        elif part not in ("", "."):
            out.append(part)
    return out


def test_license_typing_marker_changelog_and_checkers_are_in_place():
    assert PYPROJECT["project"]["license"]["text"] == "Apache-2.0"
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    for package in ("rtwo_vm", "reference_vm"):
        assert (ROOT / package / "py.typed").exists()
        assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"][package]
    assert (ROOT / "CHANGELOG.md").read_text().startswith("# Changelog")
    extras = " ".join(PYPROJECT["project"]["optional-dependencies"]["test"])
    assert "ruff" in extras and "mypy" in extras
    ci = (ROOT / ".ci" / "run").read_text()
    assert "ruff check ." in ci and "mypy" in ci
    assert PYPROJECT["tool"]["ruff"]["lint"]["select"] and PYPROJECT["tool"]["mypy"]["files"]
