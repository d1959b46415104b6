"""The reference adapter, except that it hangs the first time it is asked a chosen request and
answers it correctly when asked again (by a fresh process): a hang that a retry clears.

    python tests/fuzz_fixtures/hang_once_adapter.py --request-id GLOB --marker-dir DIR
                                                    [--always] [--wrong-fee GLOB]

The first process to meet a matching request id creates DIR/<id> and hangs; a request whose
marker exists is answered as the reference answers it. With --always it hangs on every
matching request. --wrong-fee answers matching requests with the fee off by one (a divergence).
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.adapter import Adapter  # noqa: E402


class HangOnce(Adapter):
    def __init__(self, pattern: str, markers: Path, always: bool = False, wrong_fee: str | None = None):
        super().__init__()
        self.pattern, self.markers, self.always, self.wrong_fee = pattern, markers, always, wrong_fee
        self.name = "hang-once-reference"

    def execute(self, vector_id, vector_input, trace):
        if fnmatch.fnmatchcase(str(vector_id), self.pattern):
            marker = self.markers / re.sub(r"[^A-Za-z0-9]+", "_", str(vector_id))
            try:
                marker.open("x").close()
            except FileExistsError:
                if self.always:
                    time.sleep(3600)
            else:
                time.sleep(3600)       # the hang (the runner kills the process)
        reply = super().execute(vector_id, vector_input, trace)
        if self.wrong_fee is not None and fnmatch.fnmatchcase(str(vector_id), self.wrong_fee):
            reply["result"]["fee"] += 1
        return reply


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request-id", required=True)
    parser.add_argument("--marker-dir", required=True)
    parser.add_argument("--always", action="store_true")
    parser.add_argument("--wrong-fee", default=None)
    args = parser.parse_args()
    adapter = HangOnce(args.request_id, Path(args.marker_dir), args.always, args.wrong_fee)
    return adapter.serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
