"""Versions and locations of the conformance suite.

They live here rather than in conformance/__init__.py so that they import the same way
whether ``conformance`` is loaded as a regular package or, as an editable install made
before the package existed does, as a namespace package.
"""

from __future__ import annotations

from pathlib import Path

import spec

SPEC_VERSION = spec.SPEC_VERSION
# Bump GENERATOR_VERSION whenever a change of the generator changes any filled vector, so
# that every vector names the generator that produced it.
GENERATOR = "rtwo-vm vectors fill"
GENERATOR_VERSION = "1.0.0"
PROTOCOL = "rtwo-conformance/1"

PACKAGE_DIR = Path(__file__).resolve().parent
VECTORS_DIR = PACKAGE_DIR / "vectors"
KNOWN_FAILURES_DIR = PACKAGE_DIR / "known_failures"
SMT_CACHE = PACKAGE_DIR / "smt_inputs.json"


def project_root(start: Path | None = None) -> Path | None:
    """The RTWO VM project checkout holding ``start`` (default: the working directory): the
    nearest directory upwards with a pyproject.toml naming rtwo-vm and conformance/definitions.
    None outside any checkout."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        pyproject = directory / "pyproject.toml"
        if (directory / "conformance" / "definitions").is_dir() and pyproject.is_file():
            try:
                text = pyproject.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if 'name = "rtwo-vm"' in text:
                return directory
    return None


def runs_from(project: Path) -> bool:
    """Whether this conformance package is the one in ``project`` (an editable install or a
    run from the checkout), rather than an installed copy."""
    return PACKAGE_DIR.parent == project.resolve()
