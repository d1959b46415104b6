"""``rtwo-vm prove --strength``: how strong the proof suite is, measured by mutation testing.

- ``mutants``: mutants of the opcode models (``proofs/instructions/``) and of the reference
  handlers (``reference_vm/instructions/``), generated from their syntax trees with the
  operators of the audit (boundary shifts, wrong stack item, wrong byte order, dropped
  effect such as an undo or a release, stale return data), plus planted patches;
- ``isolate``: a copy of the tree in a temporary directory with one mutant written into it,
  and the fair unit run there in a fresh interpreter (``python -m proofs.strength.worker``);
- ``run``: the fair unit of a mutant (the proofs unit of the opcodes its function defines,
  as ``rtwo-vm prove --opcode M`` runs it), the verdicts and the score;
- ``equivalent.toml`` / ``unreachable.toml``: mutants that change no behaviour, or none a
  proofs unit can observe, each with a written reason; ``score.json``: the recorded run.

The ideas (one-node AST mutants keyed by a hash of the mutated line, reasons files) follow
conformance/strength/, which proofs may not import (dependencies point spec <- reference_vm
<- proofs, conformance); what is duplicated is said in mutants.py.
"""
