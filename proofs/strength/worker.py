"""One mutant's fair unit in a fresh interpreter, run inside the mutated copy of the tree:
``python -m proofs.strength.worker`` reads a task (JSON on stdin: the tree it must import
from, the opcodes of the unit, whether the whole-suite agreement checks belong to it) and
writes the unit's verdict rows (JSON on stdout). Solver calls run under the deterministic
budgets of proofs/budgets.toml, as in ``rtwo-vm prove``."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> int:
    doc = json.loads(sys.stdin.read())
    import proofs
    import reference_vm
    tree = Path(doc["tree"]).resolve()
    for package in (proofs, reference_vm):   # the copy, never the checkout
        if package.__file__ is None or tree not in Path(package.__file__).resolve().parents:
            print(json.dumps({"error": f"{package.__name__} imported from outside the copy"}))
            return 0
    from proofs.runner import Options, run_suite
    rows = run_suite(Options(version=doc["version"], opcodes=tuple(doc["opcodes"]),
                             jobs=doc.get("jobs", 1)))
    print(json.dumps({"rows": [{k: r.get(k) for k in ("theorem", "opcode", "width", "status")}
                               for r in rows]}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
