"""A compiled engine for the RTWO VM beside the reference interpreter.

``compiled_vm.execute`` has the signature of ``reference_vm.execute`` and returns the same
result for every request. It interprets first, through the reference's per-segment fast path,
and compiles into generated Python source the segments and loops that have run ``THRESHOLD``
times (engine.py). The reference never imports this package.
"""

from compiled_vm.engine import DEFAULT, THRESHOLD, Engine, execute

__all__ = ["DEFAULT", "THRESHOLD", "Engine", "execute"]
