"""The reference adapter, except that it hangs the first time it is asked a chosen request and
answers it correctly when asked again (by a fresh process): a hang that a retry clears.

    python tests/fuzz_fixtures/hang_once_adapter.py --request-id GLOB --marker-dir DIR

The first process to meet a matching request id creates DIR/<id> and hangs; a request whose
marker exists is answered as the reference answers it.
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
    def __init__(self, pattern: str, markers: Path):
        super().__init__()
        self.pattern, self.markers = pattern, markers
        self.name = "hang-once-reference"

    def execute(self, vector_id, vector_input, trace):
        if fnmatch.fnmatchcase(str(vector_id), self.pattern):
            marker = self.markers / re.sub(r"[^A-Za-z0-9]+", "_", str(vector_id))
            try:
                marker.open("x").close()
            except FileExistsError:
                pass
            else:
                time.sleep(3600)       # the hang (the runner kills the process)
        return super().execute(vector_id, vector_input, trace)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request-id", required=True)
    parser.add_argument("--marker-dir", required=True)
    args = parser.parse_args()
    return HangOnce(args.request_id, Path(args.marker_dir)).serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
