"""Where evidence lives: the data directory (``--data-dir``, ``$RTWO_VM_DATA``).

The proofs reports ``rtwo-vm prove`` writes and ``readiness`` reads, and the reports of
``rtwo-vm conformance run``, live in one data directory that does not depend on the working
directory (the files in it: rtwo_vm.runtime.tools.EvidenceFiles):

- ``--data-dir DIR`` when given, else
- ``$RTWO_VM_DATA`` when set, else
- the user's data directory: ``$XDG_DATA_HOME/rtwo-vm`` (``~/.local/share/rtwo-vm`` when
  XDG_DATA_HOME is unset; ``%LOCALAPPDATA%\\rtwo-vm`` on Windows).

The option and the variables are read here, in the command layer only; the runtime and the
execution core are handed the resolved, absolute directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from rtwo_vm.runtime.tools import EvidenceFiles

DATA_ENV = "RTWO_VM_DATA"


def default_data_dir() -> Path:
    """The data directory when no ``--data-dir`` is given (see the module's text)."""
    given = os.environ.get(DATA_ENV)
    if given:
        return Path(given).expanduser()
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "rtwo-vm"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "rtwo-vm"


def add_data_option(p, what: str) -> None:
    p.add_argument("--data-dir", dest="data_dir", metavar="DIR",
                   help=f"data directory {what} (default ${DATA_ENV}, else "
                        "$XDG_DATA_HOME/rtwo-vm or ~/.local/share/rtwo-vm; never the working "
                        "directory)")


def data_dir(args) -> Path:
    """The data directory of a command: --data-dir, $RTWO_VM_DATA or the user's, absolute."""
    given = getattr(args, "data_dir", None)
    return (Path(given).expanduser() if given else default_data_dir()).absolute()


def evidence(args) -> EvidenceFiles:
    return EvidenceFiles(data_dir(args))


def where_line(args) -> str:
    """The line a command that reads or writes evidence prints."""
    return f"evidence: {data_dir(args)} (--data-dir, ${DATA_ENV})"
