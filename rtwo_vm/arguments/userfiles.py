"""The options of the children that run a user's Python file (``prove --theorems``,
``symbolic --properties``): their wall-clock safety net and the memory they may add
(spec/confined.py)."""

from __future__ import annotations

import argparse
import math

MAX_SECONDS = 1e6
MAX_MEMORY_MIB = 1 << 20


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(f"must be above 0 and at most {MAX_SECONDS:g}, got {text!r}")
    return value


def mebibytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of MiB: {text!r}") from None
    if not 1 <= value <= MAX_MEMORY_MIB:
        raise argparse.ArgumentTypeError(f"must be 1..{MAX_MEMORY_MIB}, got {text!r}")
    return value


def add_options(p, option: str, defaults: str) -> None:
    p.add_argument("--file-seconds", dest="file_seconds", type=seconds, metavar="SECONDS",
                   help=f"wall-clock safety net of each child process that runs the {option} "
                        f"file ({defaults}); the child and every process it started are "
                        "killed at it")
    p.add_argument("--file-memory", dest="file_memory", type=mebibytes, metavar="MIB",
                   help="address space each such child may add to what it inherits "
                        "(default 4096 MiB)")


def file_limits(args) -> tuple[float | None, int | None]:
    """(seconds, bytes) of the options (None: the default)."""
    memory = getattr(args, "file_memory", None)
    return getattr(args, "file_seconds", None), None if memory is None else memory << 20
