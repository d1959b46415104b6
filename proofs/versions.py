"""The spec versions the proofs package has models of.

A version is a value (spec chapter 1.7): every model, theorem and agreement check is built for
the version it is given (``proofs.words.width(bits, version)``), never for a process-wide one.
``MODELLED`` lists the versions whose every instruction has a transition model here; a command
asked for another version refuses it in one line (``check``), naming these.

``SYMBOLIC`` lists the versions the symbolic executor (proofs/symbolic/, the ``symbolic`` and
``equivalence`` commands) runs whole programs of: from 1.1 with transient storage carried
across the frames of an execution and read-only frames (STATICCALL).
"""

from __future__ import annotations

import spec

MODELLED = ("1.0", "1.1")
SYMBOLIC = ("1.0", "1.1")


class UnmodelledVersion(ValueError):
    """A spec version the proofs package has no models of (one line, for the CLI)."""


def check(version: str, modelled: tuple[str, ...] = MODELLED) -> str:
    """``version`` when it has models; UnmodelledVersion (one line) otherwise."""
    if version in modelled:
        return version
    known = ", ".join(modelled)
    if version not in spec.names():
        raise UnmodelledVersion(f"unknown spec version {version!r} (the proofs have models of: {known})")
    if version in MODELLED:
        raise UnmodelledVersion(f"spec version {version} has models of its instructions but not "
                                f"yet of whole executions (the symbolic executor runs: {known})")
    raise UnmodelledVersion(f"spec version {version} has no SMT models yet (the proofs have models "
                            f"of: {known})")


def newest(modelled: tuple[str, ...] = MODELLED) -> str:
    """The newest version with models (the commands' default)."""
    return modelled[-1]


def resolve(version: str | None, modelled: tuple[str, ...] = MODELLED) -> str:
    """A command's ``--spec-version``: ``version`` checked, or the newest with models."""
    return newest(modelled) if version is None else check(version, modelled)


def add_option(parser, modelled: tuple[str, ...] = MODELLED) -> None:
    """``--spec-version V`` of a command over the models (default: the newest with models)."""
    parser.add_argument("--spec-version", dest="spec_version", default=None, metavar="VERSION",
                        help="the spec version whose models to use (default: the newest with "
                             f"models, {newest(modelled)}; versions with models: "
                             f"{', '.join(modelled)})")
