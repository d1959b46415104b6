"""The second oracle's cost: the committed corpus run by the proofs' models, against the
reference interpreter on the same inputs.

    python benchmarks/second_oracle_benchmark.py [--spec-version VERSION] [--jobs N] [--quick]

For each version (default: every one): the single-call and scenario vectors of the committed
corpus (``--quick``: the quick cover ``rtwo-vm check`` runs), run once by the reference and once by
the models (conformance/oracles, ``--jobs`` workers; 1 by default, so the ratio compares one
core with one core). Prints the vectors, both times, their ratio, the disagreements (there
must be none) and the ten slowest vectors for the models. CPU seconds of this process and its
workers: run it on a quiet machine; the figures are ratios of one machine's speed.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import spec  # noqa: E402
from conformance.constants import VECTORS_DIR  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.corpus.vector import run_reference  # noqa: E402
from conformance.oracles import compare, corpus as oracles  # noqa: E402
from conformance.scenario import store as scenario_store  # noqa: E402
from conformance.scenario.carry import run_steps  # noqa: E402


def cpu() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec-version", choices=spec.names(), default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="only the quick cover rtwo-vm check runs")
    args = parser.parse_args()
    total_ref = total_model = 0.0
    for version in ([args.spec_version] if args.spec_version else spec.names()):
        folder = Path(VECTORS_DIR) / version
        single: list = store.load(folder)
        scenarios: list = scenario_store.load(scenario_store.folder(folder), version)
        if args.quick:
            single, scenarios = oracles.quick(single)[0], oracles.quick(scenarios)[0]
        started = cpu()
        for v in single:
            run_reference(v["input"], version)
        for v in scenarios:
            run_steps(v["input"])
        ref = cpu() - started
        slow = []
        started = cpu()
        if args.jobs == 1:
            found = []
            for kind, v in [("s", v) for v in single] + [("c", v) for v in scenarios]:
                one = time.perf_counter()
                found.append((compare.check_scenario if kind == "c" else compare.check_vector)(v, version))
                slow.append((time.perf_counter() - one, v["id"]))
            disagreements = [d for d in found if d is not None]
        else:
            disagreements = oracles.check({version: (single, scenarios)}, "all", args.jobs).disagreements
        model = cpu() - started
        total_ref, total_model = total_ref + ref, total_model + model
        count = len(single) + len(scenarios)
        print(f"spec {version}: {count} vectors ({len(scenarios)} scenarios): reference {ref:.1f} s, "
              f"models {model:.1f} s CPU: {model / max(ref, 1e-9):,.0f}x; "
              f"{len(disagreements)} disagreement(s)")
        for d in disagreements:
            print("\n".join("  " + line for line in d.lines()))
        for seconds, vid in sorted(slow, reverse=True)[:10]:
            print(f"  {seconds:7.2f} s  {vid}")
    print(f"all versions: reference {total_ref:.1f} s, models {total_model:.1f} s CPU "
          f"({total_model / max(total_ref, 1e-9):,.0f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
