"""Versions and locations of the conformance suite.

The spec version is never a constant here: every vector, corpus, session and report is for
one version of spec/versions.toml (chapter 11, 1.7), which flows through the calls. Each
version's corpus is ``conformance/vectors/<version>/`` (:func:`corpus_dir`).

They live here rather than in conformance/__init__.py so that they import the same way
whether ``conformance`` is loaded as a regular package or, as an editable install made
before the package existed does, as a namespace package.
"""

from __future__ import annotations

from pathlib import Path

from spec.files import read_bounded

# Bump GENERATOR_VERSION whenever a change of the generator changes any filled vector, so
# that every vector names the generator that produced it.
GENERATOR = "rtwo-vm vectors fill"
GENERATOR_VERSION = "1.0.0"
PROTOCOL = "rtwo-conformance/1"

PACKAGE_DIR = Path(__file__).resolve().parent
VECTORS_DIR = PACKAGE_DIR / "vectors"        # one folder per spec version: corpus_dir()
MANIFEST_NAME = "manifest.json"              # in each version's folder (chapter 11.3)
KNOWN_FAILURES_DIR = PACKAGE_DIR / "known_failures"
SMT_CACHE = PACKAGE_DIR / "smt_inputs.json"
SYMBOLIC_CACHE = PACKAGE_DIR / "symbolic_inputs.json"
EXAMPLES_DIR = PACKAGE_DIR.parent / "examples"


def corpus_dir(version: str, root: Path = VECTORS_DIR) -> Path:
    """The folder of spec version ``version``'s corpus under ``root`` (chapter 11.3)."""
    return root / version


def project_root(start: Path | None = None) -> Path | None:
    """The RTWO VM project checkout holding ``start`` (default: the working directory): the
    nearest directory upwards with a pyproject.toml naming rtwo-vm and conformance/corpus/definitions.
    None outside any checkout."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        pyproject = directory / "pyproject.toml"
        if (directory / "conformance" / "corpus" / "definitions").is_dir() and pyproject.is_file():
            try:   # a checkout's pyproject.toml is small: more than 1 MiB is not one
                text = read_bounded(pyproject, 1 << 20, "pyproject.toml").decode("utf-8", errors="replace")
            except (OSError, ValueError):
                continue
            if 'name = "rtwo-vm"' in text:
                return directory
    return None


def runs_from(project: Path) -> bool:
    """Whether this conformance package is the one in ``project`` (an editable install or a
    run from the checkout), rather than an installed copy."""
    return PACKAGE_DIR.parent == project.resolve()


# The corpus is read from the project itself (vectors fill --check and --dir default to the
# project's conformance/vectors), so a checkout whose corpus alone differs runs the same code.
_NOT_CODE = ("conformance/vectors",)
_CODE_FILE_LIMIT = 16 << 20


def project_packages(project: Path) -> tuple[str, ...] | None:
    """The top-level packages ``pip install`` copies from ``project`` (its pyproject.toml's
    ``[tool.setuptools.packages.find] include``); None when that cannot be read."""
    import tomllib

    from spec.files import FileRefused, read_bounded
    try:
        data = tomllib.loads(read_bounded(project / "pyproject.toml", 1 << 20, "pyproject.toml").decode())
        include = data["tool"]["setuptools"]["packages"]["find"]["include"]
    except (FileRefused, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        return None
    if not isinstance(include, list) or not all(isinstance(p, str) for p in include):
        return None
    names = {p.rstrip("*").rstrip(".") for p in include}
    return tuple(sorted(n for n in names if n.isidentifier()))


def _code_files(root: Path, package: str) -> set[str]:
    """Paths (relative to ``root``) of the files of ``package`` under ``root``, without
    byte-code caches and without the corpus."""
    import os
    found: set[str] = set()
    for directory, subdirs, files in os.walk(root / package):
        relative = Path(directory).relative_to(root).as_posix()
        subdirs[:] = [d for d in subdirs if d != "__pycache__" and f"{relative}/{d}" not in _NOT_CODE]
        found.update(f"{relative}/{f}" for f in files if not f.endswith((".pyc", ".pyo")))
    return found


def same_code(project: Path) -> bool:
    """Whether the running packages, although not the ones in ``project`` (a ``pip install .``
    rather than ``-e``), hold the same code as the checkout: the same Python modules, and
    every installed file byte for byte equal to the checkout's file of the same path. A file
    that cannot be read counts as a difference."""
    from spec.files import FileRefused, read_bounded
    project = project.resolve()
    installed = PACKAGE_DIR.parent
    packages = project_packages(project)
    if not packages:
        return False
    for package in packages:
        ours, theirs = _code_files(installed, package), _code_files(project, package)
        if {p for p in ours if p.endswith(".py")} != {p for p in theirs if p.endswith(".py")}:
            return False
        if not ours <= theirs:
            return False
        for relative in sorted(ours):
            try:
                if (read_bounded(installed / relative, _CODE_FILE_LIMIT, "package file")
                        != read_bounded(project / relative, _CODE_FILE_LIMIT, "package file")):
                    return False
            except FileRefused:
                return False
    return True
