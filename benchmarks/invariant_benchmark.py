"""Cost of `rtwo-vm symbolic --invariant` as the depth K grows: seconds, call explorations,
paths and states checked per K = 1, 2, 3, each as a ratio to K = 1.

    python benchmarks/invariant_benchmark.py                 # counter, vault, token; K = 1..3
    python benchmarks/invariant_benchmark.py --max-depth 2   # briefer (token K = 3 is ~1 min)
    python benchmarks/invariant_benchmark.py --only counter

The workloads are the README's: the counter's two invariants (symbolic storage), the vault's
(its two-call bug: from K = 2 on the run ends at the violation) and the token's total supply
over the ledger of examples/token-storage.json (concrete storage). The verdicts do not depend
on the timing (solver budgets are work units); the seconds do, on this machine's load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
WORKLOADS = {
    "counter": ({}, False),
    "vault": ({0xA: 100}, True),
    "token": ({0xA: 1000, 0xB: 100}, True),
}


def measure(name: str, depth: int) -> dict:
    from proofs import versions
    from proofs.symbolic import invariants, sequences
    from proofs.symbolic.world import Setup
    from rtwo_vm.arguments.inputs import read_code

    pins, concrete = WORKLOADS[name]
    version = versions.resolve(None, versions.SYMBOLIC)
    setup = Setup(entry=0x100, codes={0x100: read_code(str(EX / f"{name}.rasm"), version)},
                  version=version, storage={0x100: pins} if pins else {},
                  concrete_storage=concrete)
    invs = invariants.load(EX / f"{name}_invariants.py", 0x100, [0x100])
    start = time.perf_counter()
    result = sequences.check(setup, invs, depth)
    seconds = time.perf_counter() - start
    assert result.solver is not None
    return {"seconds": seconds, "explorations": result.explorations,
            "paths": sum(result.paths), "states": sum(result.states),
            "queries": result.solver.stats.queries,
            "verdict": sequences.worst(result.verdicts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-depth", type=int, default=3, choices=(1, 2, 3))
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    args = ap.parse_args()
    print(f"{'workload':<8} {'K':>2} {'verdict':<9} {'seconds':>8} {'x K=1':>7} {'calls':>6} "
          f"{'x K=1':>6} {'paths':>6} {'x K=1':>6} {'states':>6} {'queries':>7}")
    for name in args.only or ("counter", "vault", "token"):
        base = None
        for k in range(1, args.max_depth + 1):
            m = measure(name, k)
            base = base or m
            print(f"{name:<8} {k:>2} {m['verdict']:<9} {m['seconds']:>8.2f} "
                  f"{m['seconds'] / base['seconds']:>7.1f} {m['explorations']:>6} "
                  f"{m['explorations'] / base['explorations']:>6.1f} {m['paths']:>6} "
                  f"{m['paths'] / base['paths']:>6.1f} {m['states']:>6} {m['queries']:>7}",
                  flush=True)
    print("How the cost grows with K: the calls explored at depth K are (successful ends per "
          "call)^(K-1) per contract, so paths and states grow geometrically with the branching "
          "of the contract's successful paths (1 for the counter once its slot is non-zero, 2 "
          "for the token: a new recipient slot or not); the seconds grow faster than the paths, "
          "because every query of a call at depth K carries the path condition of the K - 1 "
          "calls before it and an invariant over a sum counts every slot the sequence wrote "
          "(the token's sum over 2K + 2 keys, with every pair's aliasing a case).")


if __name__ == "__main__":
    main()
