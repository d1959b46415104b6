"""Corpus commands work on the checkout the user is in, not on an installed copy of the
package, and never write into an installed package (issue 13, item 5)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from conformance.constants import project_packages, project_root, runs_from
from test_cli_hostile import refused, run_cli

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = project_packages(ROOT) or ()   # what pip install . copies (pyproject.toml)
MANIFEST = ROOT / "conformance" / "vectors" / "1.0" / "manifest.json"


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


def test_fill_in_a_checkout_uses_that_checkouts_definitions_not_the_installed_ones(tmp_path, monkeypatch, capfd):
    # A second checkout; for it, the running package (this checkout's) is an installed copy.
    other = tmp_path / "other"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PACKAGES:
        shutil.copytree(ROOT / name, other / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", other / "pyproject.toml")
    monkeypatch.chdir(other / "conformance")
    assert project_root() == other.resolve() and not runs_from(other)
    code, _, err = run_cli("vectors", "fill", "--check", "--second-oracle", "off")
    assert code == 0  # identical: same definitions
    err += capfd.readouterr().err  # the child process that ran the checkout's code writes the note
    assert "not the checkout" not in err  # a pip install . of the same code: no note (issue 23, 9)
    constants = other / "conformance" / "constants.py"
    constants.write_text(constants.read_text().replace('GENERATOR_VERSION = "', 'GENERATOR_VERSION = "9'))
    ours = _digest(MANIFEST)
    code, _, err = run_cli("vectors", "fill", "--check", "--second-oracle", "off")
    assert code == 1  # the edit in that checkout is seen
    err += capfd.readouterr().err
    assert "installed rtwo-vm is not the checkout" in err  # and named: the code differs
    assert run_cli("vectors", "fill", "--second-oracle", "off")[0] == 0            # and written into that checkout
    assert _digest(other / "conformance" / "vectors" / "1.0" / "manifest.json") != ours
    assert _digest(MANIFEST) == ours                     # not into the running package
    assert run_cli("vectors", "fill", "--check", "--second-oracle", "off", "--project", str(other))[0] == 0




def _installed_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A non-editable install (the packages alone, as pip copies them into site-packages)
    and a checkout of the same tree, both under tmp_path."""
    site, checkout = tmp_path / "site", tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "vectors")
    for name in PACKAGES:
        shutil.copytree(ROOT / name, site / name, ignore=ignore)
        shutil.copytree(ROOT / name, checkout / name, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    return site, checkout


def _same_code_seen_by_installed(site: Path, checkout: Path) -> str:
    import subprocess
    import sys
    code = ("import sys; from pathlib import Path; import conformance.constants as c; "
            "assert c.PACKAGE_DIR.parent == Path(sys.argv[1]).resolve(), c.PACKAGE_DIR; "
            "print(c.runs_from(Path(sys.argv[2])), c.same_code(Path(sys.argv[2])))")
    done = subprocess.run([sys.executable, "-c", code, str(site), str(checkout)], cwd=site.parent,
                          env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    return done.stdout.strip()


def test_an_installed_copy_of_the_same_code_is_the_checkouts_code_and_any_difference_is_seen(tmp_path):
    """Issue 23, item 9: the README's pip install . (not -e) then rtwo-vm check must not warn
    about itself; the installed packages run from another directory but hold the same code."""
    import os
    site, checkout = _installed_copy(tmp_path)
    assert _same_code_seen_by_installed(site, checkout) == "False True"
    (checkout / "conformance" / "vectors").mkdir()  # the corpus is not code: read from the project
    (checkout / "conformance" / "vectors" / "x.jsonl").write_text("{}\n")
    (checkout / "conformance" / "NOTES.md").write_text("a checkout-only file that pip does not copy\n")
    assert _same_code_seen_by_installed(site, checkout) == "False True"
    # Planted differences, each seen: an edited definition, a new module, a missing data file,
    # a module replaced by a FIFO (read without blocking, counted as different).
    edited = checkout / "conformance" / "corpus" / "definitions" / "stack.py"
    original = edited.read_bytes()
    edited.write_bytes(original + b"# edited\n")
    assert _same_code_seen_by_installed(site, checkout) == "False False"
    edited.write_bytes(original)
    (checkout / "rtwo_vm" / "extra.py").write_text("X = 1\n")
    assert _same_code_seen_by_installed(site, checkout) == "False False"
    (checkout / "rtwo_vm" / "extra.py").unlink()
    data = checkout / "proofs" / "budgets.toml"
    kept = data.read_bytes()
    data.unlink()
    assert _same_code_seen_by_installed(site, checkout) == "False False"
    data.write_bytes(kept)
    assert _same_code_seen_by_installed(site, checkout) == "False True"
    edited.unlink()
    os.mkfifo(edited)
    assert _same_code_seen_by_installed(site, checkout) == "False False"
