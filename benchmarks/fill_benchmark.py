"""Fill speed: ``rtwo-vm vectors fill`` over every source, cold caches each round.

    python benchmarks/fill_benchmark.py [--rounds 3]

Prints, best of the rounds, the fill rate (vectors/s: cases gathered, run through the
reference, schema-checked and rendered to the stored form, not written) and its ratio to the
target of 2,000 vectors/s, then where one fill spends its time: schema checks (the compiled
validator over the filled corpus), assembling the definitions' sources, and the rest (running
the reference, building inputs, hashing). Run it on a quiet machine; the figures are ratios
of one machine's speed, not thresholds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.corpus import store, vector  # noqa: E402
from conformance.corpus.fill import fill  # noqa: E402
from conformance.corpus.schema import corpus_problems  # noqa: E402
from reference_vm import assemble  # noqa: E402

TARGET = 2000


def one_round() -> tuple[float, int]:
    vector._assembled.cache_clear()  # every round assembles from scratch, like a fresh process
    filled = fill()
    started = time.perf_counter()
    store.render(filled.vectors, filled.manifest_extra)
    return filled.seconds + time.perf_counter() - started, len(filled.vectors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    fill()  # imports, spec tables and the SMT cache loaded once, outside the measurement
    runs = [one_round() for _ in range(args.rounds)]
    seconds, count = min(runs)
    rate = count / seconds
    print(f"fill      {count} vectors in {seconds:.2f} s: {rate:,.0f} vectors/s "
          f"({rate / TARGET:.2f}x the target of {TARGET:,})")
    filled = fill(validate=False)
    started = time.perf_counter()
    assert not corpus_problems(filled.vectors)
    schema = time.perf_counter() - started
    sources = sorted({c.code for c in __import__("conformance.corpus.fill", fromlist=["cases"]).cases(("definition",))
                      if isinstance(c.code, str)})
    started = time.perf_counter()
    for source in sources:
        assemble(source)
    assembly = time.perf_counter() - started
    print(f"breakdown schema checks {schema / seconds:.0%}, assembling {len(sources)} sources "
          f"{assembly / seconds:.0%}, the rest {max(0.0, 1 - (schema + assembly) / seconds):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
