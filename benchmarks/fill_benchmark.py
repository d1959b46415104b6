"""Fill speed: ``rtwo-vm vectors fill`` over every source, cold caches each round.

    python benchmarks/fill_benchmark.py [--rounds 3] [--spec-version VERSION]

Fills every spec version's corpus (``--spec-version``: that version's only; 1.0 alone is the
figure comparable with the fills before versions). Prints, best of the rounds, the fill rate (vectors/s: cases gathered, run through the
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
import spec  # noqa: E402
from conformance.corpus.fill import cases as fill_cases, fill  # noqa: E402
from conformance.corpus.schema import corpus_problems  # noqa: E402
from reference_vm import assemble  # noqa: E402

TARGET = 2000


def one_round(versions: tuple[str, ...]) -> tuple[float, int]:
    vector._assembled.cache_clear()  # every round assembles from scratch, like a fresh process
    filled = fill(versions=versions)
    started = time.perf_counter()
    for corpus in filled.corpora.values():
        store.render(corpus.vectors, corpus.version, corpus.manifest_extra)
    return filled.seconds + time.perf_counter() - started, filled.count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spec-version", default=None, choices=spec.names(),
                        help="fill this version's corpus only (default: every version)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    versions = (args.spec_version,) if args.spec_version else spec.names()
    fill(versions=versions)  # imports, spec tables and the SMT cache loaded once, outside the measurement
    runs = [one_round(versions) for _ in range(args.rounds)]
    seconds, count = min(runs)
    rate = count / seconds
    print(f"fill      {count} vectors of spec {', '.join(versions)} in {seconds:.2f} s: {rate:,.0f} vectors/s "
          f"({rate / TARGET:.2f}x the target of {TARGET:,})")
    filled = fill(versions=versions, validate=False)
    started = time.perf_counter()
    for corpus in filled.corpora.values():
        assert not corpus_problems(corpus.vectors, corpus.version)
    schema = time.perf_counter() - started
    sources = sorted({(c.code, c.container_version) for c in fill_cases(("definition",)) if isinstance(c.code, str)
                      and any(c.valid_in(v) for v in versions)})
    started = time.perf_counter()
    for source, version in sources:
        assemble(source, version)
    assembly = time.perf_counter() - started
    print(f"breakdown schema checks {schema / seconds:.0%}, assembling {len(sources)} sources "
          f"{assembly / seconds:.0%}, the rest {max(0.0, 1 - (schema + assembly) / seconds):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
