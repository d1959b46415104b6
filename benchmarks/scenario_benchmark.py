"""Scenario validation rate through the adapter protocol (issue 35, spec chapter 11.9.4), against
single-call validation, on the reference adapter.

    python benchmarks/scenario_benchmark.py [--rounds 3] [--copies 20] [--workers 2] [--spec-version 1.1]

Both sides go through the same process machinery (conformance.run.runner.Pool: adapter processes
started and handshaken, pipelined requests, every answer judged as it arrives):
  scenarios     the version's scenario corpus, ``--copies`` times over (each copy its own ids),
                sent as scenario requests and judged by 11.9.3: steps/s and scenarios/s
  single calls  as many single-call vectors of the corpus as the scenarios have steps, sent as
                execute requests and judged by 11.2.7: vectors/s
Printed, best of the rounds: each rate and the ratio steps/s over vectors/s (1.0: a step of a
scenario costs what a single call does; below 1: carrying state, the larger messages and the
post-state cost that much more per call).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.run.outcomes import evaluate  # noqa: E402
from conformance.run.process import Settings  # noqa: E402
from conformance.run.requests import Prepared  # noqa: E402
from conformance.run.runner import Pool  # noqa: E402
from conformance.run.scenario_judge import judge  # noqa: E402
from conformance.run.scenarios import scenario_jobs  # noqa: E402
from conformance.run.suite import reference_command  # noqa: E402
from conformance.scenario import store as scenario_store  # noqa: E402


def _timed(argv, settings, jobs, judge_one) -> tuple[float, int]:
    failed = [0]

    def on_reply(reply) -> None:
        failed[0] += judge_one(reply).status != "pass"
    started = time.perf_counter()
    Pool(argv, settings).run(jobs, on_reply, keep=False)
    return time.perf_counter() - started, failed[0]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--spec-version", default="1.1")
    args = parser.parse_args()
    version = args.spec_version
    base = scenario_store.load(scenario_store.folder(corpus_dir(version)), version)
    scenarios = [dict(s, id=f"{s['id']}#{k}") for k in range(args.copies) for s in base]
    steps = sum(len(s["input"]["steps"]) for s in scenarios)
    corpus = store.load(corpus_dir(version))
    singles = [dict(v, id=f"{v['id']}#{k}") for k in range(steps // len(corpus) + 1) for v in corpus][:steps]
    by_id = {v["id"]: v for v in singles}
    by_scenario = {s["id"]: s for s in scenarios}
    settings = Settings(version, workers=args.workers, timeout=60.0)
    argv = shlex.split(reference_command())
    prepared = Prepared(singles, settings)
    best_s = best_v = float("inf")
    for _ in range(args.rounds):
        seconds, failed = _timed(argv, settings, scenario_jobs(scenarios, 1, "bench"),
                                 lambda r: judge(by_scenario[r.vector_id], r))
        assert failed == 0, f"{failed} scenarios failed on the reference"
        best_s = min(best_s, seconds)
        seconds, failed = _timed(argv, settings, prepared.jobs(singles, 1, "bench"),
                                 lambda r: evaluate(by_id[r.vector_id], r))
        assert failed == 0, f"{failed} vectors failed on the reference"
        best_v = min(best_v, seconds)
    step_rate, vector_rate = steps / best_s, len(singles) / best_v
    print(f"spec {version}, reference adapter, {args.workers} workers, best of {args.rounds} rounds")
    print(f"scenarios     {len(scenarios)} scenarios ({len(base)} x {args.copies}), {steps} steps: "
          f"{best_s:.2f} s, {step_rate:,.0f} steps/s, {len(scenarios) / best_s:,.0f} scenarios/s")
    print(f"single calls  {len(singles)} vectors: {best_v:.2f} s, {vector_rate:,.0f} vectors/s")
    print(f"ratio         steps/s over vectors/s: {step_rate / vector_rate:.2f} "
          f"(a scenario step costs {vector_rate / step_rate:.2f} single calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
