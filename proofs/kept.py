"""Agreement checks kept in the verdict cache (proofs/cache.py ``through_row``).

An agreement check (the model against the interpreter on fixed concrete inputs: z3's branch
inputs, derandomized hypothesis examples, every 8-bit operand, seeded codes) gives a row that
is a function of the code and data it runs, its options and the tools that make its inputs:
``row_parts`` names them all, and a row that agreed is taken from the cache on the same parts.
"""

from __future__ import annotations

import functools
import time

from proofs import solvers, verdicts


def row_parts(kind: str, key, bits) -> list:
    """Everything an agreement check's row is a function of (its key in the verdict cache):
    the check, its opcode and width, the version, the hypothesis examples (of the hypothesis
    check), the budgets (the branch inputs are models of budgeted queries), z3's and
    hypothesis's versions (they make the inputs), and the code and data of spec, reference_vm,
    compiled_vm and proofs."""
    import hypothesis
    import z3

    options = verdicts.current
    samples = options.samples if kind == "hypothesis" else None    # only it draws examples
    return ["agreement", kind, str(key), str(bits), options.version, samples,
            _budgets_digest(options.budgets), z3.get_full_version(), hypothesis.__version__,
            code_fingerprint()]


def agreement_row(kind, key, bits, start, check) -> dict:
    """An agreement check's row: taken from the verdict cache when it agreed before on the
    same code, data, tools and options (row_parts), else checked. Never cached: the
    CrossHair supplement (wall clock), a run with planted models or handlers, or one that
    exports the branch queries (the files are wanted)."""
    cache, options = solvers.verdict_cache, verdicts.current
    if (cache is None or kind == "crosshair" or options.model_overrides
            or options.handler_overrides or options.export_dir):
        return check(kind, key, bits, start)
    row = cache.through_row(row_parts(kind, key, bits), lambda: check(kind, key, bits, start))
    return {"findings": [], **row, "seconds": round(time.perf_counter() - start, 2)}


@functools.cache
def code_fingerprint() -> str:
    """sha256 over the code and data the agreement checks run (spec, reference_vm,
    compiled_vm, proofs), once per process: part of an agreement row's cache key."""
    import compiled_vm
    import proofs
    import reference_vm
    import spec
    from fanout.resume import code_digest
    return code_digest(spec, reference_vm, compiled_vm, proofs)


@functools.cache
def _budgets_digest(path: str | None) -> str:
    """sha256 of the budgets file (solvers.load read it first, bounded: a larger one never
    gets here), once per process."""
    import hashlib

    from spec.files import read_bounded
    return hashlib.sha256(read_bounded(path, 1 << 20, "budgets file") if path else b"").hexdigest()
