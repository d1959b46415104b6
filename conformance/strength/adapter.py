"""The reference adapter with one mutant applied: ``python -m conformance.strength.adapter FILE``
where FILE holds the mutant as JSON (conformance.strength.mutants.Mutant.to_json). The
strength run confirms survivors of the prescreen through it, with the conformance runner."""

from __future__ import annotations

import json
import sys

from conformance.strength import isolate
from conformance.strength.mutants import Mutant


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m conformance.strength.adapter MUTANT.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        mutant = Mutant.from_json(json.load(f))
    isolate.install(mutant)
    from conformance.adapter import main as serve  # imported after install: binds the mutant
    return serve([])


if __name__ == "__main__":
    sys.exit(main())
