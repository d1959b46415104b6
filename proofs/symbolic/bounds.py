"""The bounds of a symbolic run and their defaults, written once (the CLI's options and
``world.Setup`` both read them). No z3 here: ``rtwo-vm``'s parser imports this module.

Deterministic bounds (the same verdict on every run of a command, whatever the load):

- ``max_calldata``: the longest call data explored. Longer call data is an input the run
  does not explore; a verdict is ``proved`` only when no explored path reads the call data
  at or past the bound (CALLDATALOAD or CALLDATACOPY reaching byte ``max_calldata``, any
  CALLDATASIZE) and no property reads it there — otherwise the verdict names the bound.
- ``loop_bound``: forks at one pc in one frame before a path is cut.
- ``max_paths``: path ends explored in all, the ends of callee frames included.
- ``max_steps``: instructions executed in all, over every path and frame.
- ``max_work``: z3 work units (its ``rlimit`` count: simplification and solving) of each
  exploration, and again of the witnesses and verdicts after it; ``rlimit`` per query stays
  the budgets file's ``[config.symbolic]``.
- ``SIMPLIFY_STEPS``: rewriting steps of one simplification of a term (z3's ``max_steps``):
  a path whose terms need more is cut, named.

Safety nets (not deterministic, never a verdict: a run they stop says ``stopped``):

- ``deadline``: wall-clock seconds of the whole run.
- ``z3_memory``: megabytes z3 may hold while the run explores and solves (z3's
  ``memory_max_size``).
"""

from __future__ import annotations

DEFAULT_MAX_CALLDATA = 64
DEFAULT_LOOP_BOUND = 3
DEFAULT_MAX_PATHS = 256
DEFAULT_MAX_STEPS = 20_000
DEFAULT_MAX_WORK = 100_000_000
DEFAULT_DEADLINE = 300.0
DEFAULT_Z3_MEMORY = 2048
SIMPLIFY_STEPS = 2_000_000

# Invariants over call sequences (sequences.py): the longest sequence explored, and the
# states (successful ends of a call of some sequence) checked before the run stops, named.
DEFAULT_DEPTH = 2
MAX_DEPTH = 16
DEFAULT_MAX_STATES = 256
