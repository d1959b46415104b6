"""Conformance speed: filling the corpus, and validating it against the reference adapter
through the protocol.

    python benchmarks/conformance_benchmark.py [--rounds 3] [--workers 2]

Prints, best of the rounds:
  fill      vectors/s filling every vector with the reference interpreter (schema-checked,
            rendered to the stored form, not written)
  validate  vectors/s of the main pass of ``rtwo-vm conformance run`` over the whole corpus
            (process start and handshakes included, determinism passes excluded)
  full run  the whole default run: main pass plus one perturbed determinism pass
Targets: fill >= 1,000 vectors/s, validate >= 2,000 vectors/s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance import corpus  # noqa: E402
from conformance.fill import fill  # noqa: E402
from conformance.runner import Settings  # noqa: E402
from conformance.suite import Options, reference_command, run_suite  # noqa: E402

FILL_TARGET, VALIDATE_TARGET = 1000, 2000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    fill_rates = []
    for _ in range(args.rounds):
        filled = fill()
        started = time.perf_counter()
        corpus.render(filled.vectors, filled.manifest_extra)
        fill_rates.append(len(filled.vectors) / (filled.seconds + time.perf_counter() - started))
    vectors = corpus.load()
    settings = Settings(workers=args.workers)
    main_rates, full = [], []
    for _ in range(args.rounds):
        result = run_suite([reference_command()], vectors, [], Options(repeat=0, settings=settings))
        (run,) = result.runs
        assert result.ok, "the reference must pass its own corpus"
        main_rates.append(run.rate)
    for _ in range(max(1, args.rounds // 2)):
        result = run_suite([reference_command()], vectors, [], Options(repeat=1, settings=settings))
        full.append(result.seconds)
    best_fill, best_validate = max(fill_rates), max(main_rates)
    print(f"corpus: {len(vectors)} vectors; {args.workers} adapter processes; best of {args.rounds}")
    print(f"  fill      {best_fill:8,.0f} vectors/s   (target {FILL_TARGET:,})")
    print(f"  validate  {best_validate:8,.0f} vectors/s   (target {VALIDATE_TARGET:,}; main pass through the protocol)")
    print(f"  full run  {min(full):8.2f} s           (main pass + 1 determinism pass, {2 * len(vectors)} executions)")
    return 0 if best_fill >= FILL_TARGET and best_validate >= VALIDATE_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
