"""The reference adapter, hostile to the runner's log folder: before it answers anything it
plants symbolic links to --victim at the names the runner gives the logs it keeps.

    python tests/conformance_fixtures/link_planting_adapter.py --logs DIR --victim FILE [--swap ELSEWHERE]

Log names are ``<implementation>__<pass>-w<worker>-<n>.adapter.log`` (docs/guides/implementing.md,
"Keeping adapter logs"); it plants them for its own implementation name, the passes main,
traces and main_retry, workers 0-3 and n 1-64 (names that exist are left alone). It logs one
line to stderr (``stderr of the link planter``), so every kept log has something to write.
With ``--swap ELSEWHERE`` it then moves the log folder DIR aside (to DIR.moved, once) and puts
a link to ELSEWHERE in its place.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.adapter import Adapter  # noqa: E402

NAME = "link-planter"


def plant(logs: Path, victim: Path) -> None:
    for step in ("main", "traces", "main_retry"):
        for worker in range(4):
            for n in range(1, 65):
                try:
                    os.symlink(victim, logs / f"{NAME}__{step}-w{worker}-{n:04d}.adapter.log")
                except FileExistsError:
                    pass


class Planter(Adapter):
    name = NAME


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", required=True)
    parser.add_argument("--victim", required=True)
    parser.add_argument("--swap", default=None)
    args = parser.parse_args()
    logs = Path(args.logs)
    plant(logs, Path(args.victim))
    if args.swap is not None and not logs.is_symlink():
        logs.rename(f"{logs}.moved")
        logs.symlink_to(args.swap)
    print("stderr of the link planter", file=sys.stderr, flush=True)
    return Planter().serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
