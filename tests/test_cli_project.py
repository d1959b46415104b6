"""Corpus commands work on the checkout the user is in, not on an installed copy of the
package, and never write into an installed package (issue 13, item 5)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from conformance.constants import project_root, runs_from
from test_cli_hostile import refused, run_cli

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "conformance" / "vectors" / "manifest.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_project_is_found_from_any_directory_inside_it(tmp_path):
    assert project_root(ROOT / "docs" / "guides") == ROOT
    assert project_root(tmp_path) is None
    assert runs_from(ROOT)  # the tests run the checkout's own packages


def test_outside_a_checkout_fill_refuses_to_write_into_the_installed_package(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = _digest(MANIFEST)
    refused("vectors", "fill", fragment="pip install -e .")
    refused("vectors", "fill", "--project", str(tmp_path), fragment="not an RTWO VM checkout")
    assert _digest(MANIFEST) == before


def test_fill_in_a_checkout_uses_that_checkouts_definitions_not_the_installed_ones(tmp_path, monkeypatch):
    # A second checkout; for it, the running package (this checkout's) is an installed copy.
    other = tmp_path / "other"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("spec", "reference_vm", "rtwo_vm", "conformance", "proofs"):
        shutil.copytree(ROOT / name, other / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", other / "pyproject.toml")
    monkeypatch.chdir(other / "conformance")
    assert project_root() == other.resolve() and not runs_from(other)
    assert run_cli("vectors", "fill", "--check")[0] == 0  # identical: same definitions
    constants = other / "conformance" / "constants.py"
    constants.write_text(constants.read_text().replace('GENERATOR_VERSION = "', 'GENERATOR_VERSION = "9'))
    ours = _digest(MANIFEST)
    assert run_cli("vectors", "fill", "--check")[0] == 1  # the edit in that checkout is seen
    assert run_cli("vectors", "fill")[0] == 0            # and written into that checkout
    assert _digest(other / "conformance" / "vectors" / "manifest.json") != ours
    assert _digest(MANIFEST) == ours                     # not into the running package
    assert run_cli("vectors", "fill", "--check", "--project", str(other))[0] == 0
