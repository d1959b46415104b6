"""The spec versions the proofs package has models of.

A version is a value (spec chapter 1.7): every model, theorem and agreement check is built for
the version it is given (``proofs.words.width(bits, version)``), never for a process-wide one.
``MODELLED`` lists the versions whose every instruction has a transition model here; a command
asked for another version refuses it in one line (``check``), naming these.
"""

from __future__ import annotations

import spec

MODELLED = ("1.0",)


class UnmodelledVersion(ValueError):
    """A spec version the proofs package has no models of (one line, for the CLI)."""


def check(version: str) -> str:
    """``version`` when it has models; UnmodelledVersion (one line) otherwise."""
    if version in MODELLED:
        return version
    known = ", ".join(MODELLED)
    if version not in spec.names():
        raise UnmodelledVersion(f"unknown spec version {version!r} (the proofs have models of: {known})")
    raise UnmodelledVersion(f"spec version {version} has no SMT models yet (the proofs have models "
                            f"of: {known})")


def newest() -> str:
    """The newest version with models (the commands' default)."""
    return MODELLED[-1]


def resolve(version: str | None) -> str:
    """A command's ``--spec-version``: ``version`` checked, or the newest with models."""
    return newest() if version is None else check(version)


def add_option(parser) -> None:
    """``--spec-version V`` of a command over the models (default: the newest with models)."""
    parser.add_argument("--spec-version", dest="spec_version", default=None, metavar="VERSION",
                        help="the spec version whose models to use (default: the newest with "
                             f"models, {newest()}; versions with models: {', '.join(MODELLED)})")
