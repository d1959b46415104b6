"""Fanned out and solved once (issue 38): wall-clock ratios of the heavy commands on one
worker, two local workers, and two Ray nodes of this machine; and a cached re-prove over the
first prove.

    python benchmarks/fanout_benchmark.py                 # every figure (minutes)
    python benchmarks/fanout_benchmark.py --smoke         # tiny inputs: that it runs, not figures
    python benchmarks/fanout_benchmark.py --skip-ray      # without Ray

Printed, each as seconds and as a ratio to the one-worker run:
- ``prove``: ``--opcode`` OPCODES (default: a handful) with ``--jobs 1``, ``--jobs 2``, and
  ``--ray ADDRESS`` on a cluster of two nodes (fanout/local_cluster.py: two ``ray start``
  raylets on 127.0.0.1, one CPU each), every run with ``--no-cache``;
- ``prove --strength``: ``--limit N`` mutants of one module the same three ways;
- ``vectors strength --curated-only``: the curated mutants against the corpus, the same
  three ways (``--workers 1``, ``--workers 2``, ``--ray``);
- the cached re-prove: the whole ``prove`` (``--jobs 2``) twice on an empty verdict cache (a
  temporary folder and key), the second ÷ the first (target <= 0.10: nothing changed, no
  query solved and no agreement check run again); ``--cached-only`` measures this alone.

- ``symbolic``: the token example with its three properties (``--max-calldata 16``), its
  witness and claim queries solved by the driver alone (``--jobs 1``), ahead in two worker
  processes (``--jobs 2``), and on the two Ray nodes; then benchmarks/products.rasm, six
  paths each with an integer claim about a product that takes its whole ``--rlimit``
  (4,000,000 units: unknown, the same in every run); ``--symbolic-only`` measures these alone.

Verdicts do not depend on any of this (deterministic budgets); the ratios do, on the
machine's load: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CACHED_TARGET = 0.10


class _Skip(Exception):
    """--cached-only: the comparisons are skipped."""


def timed(args: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1, 4):         # 4: bounded or unknown, a verdict too
        raise SystemExit(f"rtwo-vm {' '.join(args)}: exit {done.returncode}: "
                         f"{done.stderr.strip().splitlines()[-1:]}")
    return seconds


def row(name: str, base: float, seconds: float | None) -> str:
    if seconds is None:
        return f"  {name:<28} not measured"
    return f"  {name:<28} {seconds:8.1f} s   {seconds / base:5.2f}x of one worker"


def three_ways(title: str, one: list[str], two: list[str], on_ray: list[str] | None) -> None:
    base = timed(one)
    print(title)
    print(row("1 worker", base, base))
    print(row("2 workers", base, timed(two)))
    print(row("two Ray nodes", base, timed(on_ray) if on_ray else None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opcodes", default="ADD,SUB,MUL,AND,SSTORE,JUMPI")
    parser.add_argument("--mutants", type=int, default=4, help="prove --strength --limit")
    parser.add_argument("--strength-module", default="proofs/instructions/arithmetic.py")
    parser.add_argument("--smoke", action="store_true", help="tiny inputs (ADD at 64 bits, one mutant)")
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--cached-opcodes", default=None, metavar="OPCODES",
                        help="the cached re-prove of these opcodes only (default: the whole suite)")
    parser.add_argument("--cached-only", action="store_true",
                        help="only the cached re-prove (no worker or Ray comparisons)")
    parser.add_argument("--symbolic-only", action="store_true",
                        help="only the symbolic run, the three ways")
    args = parser.parse_args()
    opcodes = ["ADD"] if args.smoke else args.opcodes.split(",")
    report = os.path.join(tempfile.gettempdir(), f"rtwo-fanout-bench-{os.getpid()}.json")
    prove = ["prove", "--no-table", "--quiet", "--no-cache", "--report", report,
             *[a for m in opcodes for a in ("--opcode", m)]]
    if args.smoke:
        prove += ["--width", "64", "--no-agreement"]
    strength = ["prove", "--strength", "--limit", str(1 if args.smoke else args.mutants),
                "--strength-module", args.strength_module]
    vectors = ["vectors", "strength", "--curated-only", "--no-confirm", "--no-progress"]
    if args.smoke:
        vectors += ["--filter", "arithmetic/SUB/*"]
    with tempfile.TemporaryDirectory(prefix="rtwo-fanout-bench-") as tmp:
        cluster = None
        if not (args.skip_ray or args.cached_only):
            from fanout.local_cluster import LocalCluster
            cluster = LocalCluster(Path(tmp), pythonpath=str(ROOT)).__enter__()
            cluster.add_node()
        try:
            if args.cached_only:
                raise _Skip
            ray = ["--ray", cluster.address] if cluster else None
            symbolic = ["symbolic", "examples/token.rasm", "--max-calldata", "16", "--properties",
                        "examples/token_properties.py", "--counterexamples", f"{tmp}/cx"]
            three_ways("symbolic examples/token.rasm (3 properties)", [*symbolic, "--jobs", "1"],
                       [*symbolic, "--jobs", "2"], [*symbolic, *ray] if ray else None)
            products = ["symbolic", "benchmarks/products.rasm", "--max-calldata", "24", "--properties",
                        "benchmarks/products_properties.py", "--rlimit", "4000000"]
            three_ways("symbolic benchmarks/products.rasm (6 claims of 4M units)",
                       [*products, "--jobs", "1"], [*products, "--jobs", "2"],
                       [*products, *ray] if ray else None)
            if args.symbolic_only:
                raise _Skip
            three_ways("prove " + " ".join(opcodes), [*prove, "--jobs", "1"], [*prove, "--jobs", "2"],
                       [*prove, *ray] if ray else None)
            three_ways("prove --strength", [*strength, "--jobs", "1"], [*strength, "--jobs", "2"],
                       [*strength, *ray] if ray else None)
            three_ways("vectors strength --curated-only", [*vectors, "--workers", "1"],
                       [*vectors, "--workers", "2"], [*vectors, *ray] if ray else None)
        except _Skip:
            pass
        finally:
            if cluster:
                cluster.close()
        if args.symbolic_only:
            return 0
        # The whole suite (what "a second prove with nothing changed" is about), unless
        # --smoke or --cached-opcodes: start-up alone is about 2.5 s.
        whole = ["prove", "--no-table", "--quiet", "--report", report, "--jobs", "2"]
        if args.smoke:
            whole = [a for a in prove if a != "--no-cache"]
        elif args.cached_opcodes:
            whole += [a for m in args.cached_opcodes.split(",") for a in ("--opcode", m)]
        cached = whole + ["--cache", f"{tmp}/cache", "--cache-key", f"{tmp}/key"]
        first, second = timed(cached), timed(cached)
        ratio = second / first
        print(f"cached re-prove: first {first:.1f} s, again {second:.1f} s: {ratio:.3f} of the "
              f"first (target <= {CACHED_TARGET:.2f}): {'OK' if ratio <= CACHED_TARGET else 'ABOVE'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
