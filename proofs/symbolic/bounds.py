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


# What lifts each bound a verdict names (the text of a Cut's bound begins with its key): the
# option of `rtwo-vm symbolic` / `equivalence` that raises it, or the assumption to change.
LIFTS = (
    ("max-steps", "raise --max-steps (instructions executed in all)"),
    ("max-paths", "raise --max-paths (path ends, callees' included)"),
    ("max-work", "raise --max-work (z3 work units of the exploration)"),
    ("loop bound", "raise --loop-bound (forks at one pc in one frame)"),
    ("max-calldata", "raise --max-calldata (longest symbolic call data), or fix the call data "
                     "with --calldata"),
    ("max-states", "raise --max-states (states checked over the call sequences)"),
    ("simplify steps", f"a fixed bound ({SIMPLIFY_STEPS} rewriting steps of one term, "
                       "proofs/symbolic/bounds.py): pin inputs (--calldata, --storage, "
                       "--caller) to shorten the path's terms"),
    ("callee", "give the callee's code with --contract ADDR=FILE (or --state FILE); the run "
               "assumed it has none"),
)
# The safety nets and the per-query budget: never a bounded verdict, but named the same way.
DEADLINE_LIFT = "raise --deadline (wall-clock seconds of the run)"
MEMORY_LIFT = "raise --z3-memory (MB z3 may hold)"
RLIMIT_LIFT = "raise --rlimit (z3 work units per query) or --max-work"


def lift(bound: str) -> str:
    """The option or assumption that would lift ``bound`` (a Cut's text, an equivalence's
    ``A: ...`` included)."""
    text = bound.split(": ", 1)[1] if bound[:3] in ("A: ", "B: ") else bound
    if text.startswith("stopped:") or "deadline" in text:
        return MEMORY_LIFT if "memory" in text else DEADLINE_LIFT
    for key, how in LIFTS:
        if text.startswith(key):
            return how
    return "no option lifts it: " + text


def lifts(bounds: list[str]) -> list[str]:
    """The distinct lifts of ``bounds``, in their order."""
    return list(dict.fromkeys(lift(b) for b in bounds))
