"""Conformance speed: filling the corpus, and validating it against the reference adapter
through the protocol.

    python benchmarks/conformance_benchmark.py [--rounds 3] [--workers 2] [--spec-version 1.0]

One spec version's corpus (default 1.0, the figure comparable with the runs before versions;
a run of several versions is one such suite per version). Prints, best of the rounds:
  fill      vectors/s filling every vector with the reference interpreter (schema-checked,
            rendered to the stored form, not written)
  validate  vectors/s of the main pass of ``rtwo-vm conformance run`` over the whole corpus
            (process start and handshakes included, determinism passes excluded), and the CPU
            time it took per vector in the runner and the adapters together, with the rate that
            CPU time allows on the machine's cores (what a busy machine hides)
  full run  the whole default run: main pass plus one perturbed determinism pass, the
            trace sample and a fresh sample of 100 vectors
Targets: fill >= 1,000 vectors/s, validate >= 5,000 vectors/s. These are the speed checks
of the conformance suite (the tests assert none).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import spec  # noqa: E402
from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.corpus.fill import fill  # noqa: E402
from conformance.run.process import Settings  # noqa: E402
from conformance.adapter import tune_gc  # noqa: E402
from conformance.corpus.fresh import sample  # noqa: E402
from conformance.run.suite import Options, reference_command, run_suite  # noqa: E402

FILL_TARGET, VALIDATE_TARGET = 1000, 5000


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--spec-version", default="1.0", choices=spec.names())
    args = parser.parse_args()
    version = args.spec_version

    fill_rates = []
    for _ in range(args.rounds):
        filled = fill(versions=(version,))
        started = time.perf_counter()
        corpus = filled.corpora[version]
        store.render(corpus.vectors, version, corpus.manifest_extra)
        fill_rates.append(len(corpus.vectors) / (filled.seconds + time.perf_counter() - started))
    vectors = store.load(corpus_dir(version))
    tune_gc()                      # as rtwo-vm conformance run does
    settings = Settings(version, workers=args.workers)
    main_rates, cpu = [], []
    for _ in range(args.rounds):
        before = cpu_seconds()
        result = run_suite([reference_command()], vectors, [], Options(repeat=0, settings=settings,
                                                                       trace_sample=False))
        cpu.append((cpu_seconds() - before) / len(vectors))
        (run,) = result.runs
        assert result.ok, "the reference must pass its own corpus"
        main_rates.append(run.rate)
    full = []
    for _ in range(max(1, args.rounds // 2)):
        fresh = sample(7, 100, vectors, False, version)
        result = run_suite([reference_command()], vectors + fresh, [], Options(repeat=1, settings=settings))
        assert result.ok
        full.append(result.seconds)
    best_fill, best_validate = max(fill_rates), max(main_rates)
    cores = min(os.cpu_count() or 1, args.workers + 1)
    print(f"corpus: {len(vectors)} vectors of spec {version}; {args.workers} adapter processes; best of {args.rounds}")
    print(f"  fill      {best_fill:8,.0f} vectors/s   (target {FILL_TARGET:,})")
    print(f"  validate  {best_validate:8,.0f} vectors/s   (target {VALIDATE_TARGET:,}; main pass through the protocol)")
    print(f"            {1e6 * min(cpu):8,.0f} us CPU per vector (runner and adapters); "
          f"{cores / min(cpu):,.0f} vectors/s on {cores} idle cores")
    print(f"  full run  {min(full):8.2f} s           (main pass + 1 determinism pass + trace sample, "
          f"{2 * (len(vectors) + 100)} executions)")
    return 0 if best_fill >= FILL_TARGET and best_validate >= VALIDATE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
