"""Program-level verification over the opcode models: symbolic execution of one call.

``explore(setup)`` runs one call of a contract through ``proofs.execute.step`` — the same
transition models every opcode theorem is proved about — with symbolic call data, caller,
storage, block time and random seed, forking on every branch whose condition the solver
finds satisfiable, and returns the paths with their end as a canonical result with symbolic
fields. The modules:

- ``bounds``: the bounds of a run and their defaults (no z3: the CLI's parser reads them);
- ``world``: the run's setup (code, policy, limits, bounds), admission of code, the symbolic
  inputs and the entry frame's state;
- ``executor``: the path explorer (frames, forks, bounds); ``calls``: CALL into known code,
  explored symbolically, its end turned into the model's CallOracle; ``reads``: where a path
  reads the call data past the explored length;
- ``solve``: solver queries under deterministic resource budgets (per query and per run),
  the safety nets, and models made consistent with SHA-256 and the random stream (axiom
  instances added on demand);
- ``outcome``: a path's end as a canonical result (symbolic, concretised in a model, or
  described with ranges); ``witness``: a path's witness input run on the reference
  interpreter and compared field by field;
- ``properties``: the properties file API; ``userfile``: a properties file loaded and its
  claims built only in confined children, over placeholders of the call (``views``), and
  read back from their SMT-LIB text over the parent's own symbols (``claimtext``);
  ``verdicts``: proved / bounded / counterexample / unknown / vacuous / stopped;
  ``equivalence``: two contracts compared on every input;
- ``invariants``: the invariants file API (built once in a confined child); ``sequences``:
  every sequence of up to K calls explored, the invariants checked after every call;
  ``seqwitness``: a violation as a concrete sequence replayed on the reference.

The package's names are imported when first used, so that ``bounds`` is read without z3.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proofs.symbolic.executor import Exploration, explore
    from proofs.symbolic.world import Setup

__all__ = ["Exploration", "Setup", "explore"]


def __getattr__(name: str) -> Any:
    if name in ("Exploration", "explore"):
        from proofs.symbolic import executor
        return getattr(executor, name)
    if name == "Setup":
        from proofs.symbolic import world
        return world.Setup
    raise AttributeError(f"module 'proofs.symbolic' has no attribute {name!r}")
