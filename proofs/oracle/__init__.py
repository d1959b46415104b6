"""The second oracle: a conformance vector's input run by the proofs' opcode models.

A vector's expected result is the reference interpreter's. Before it is written, the same
input is run by the SMT models of proofs/ (the step semantics the theorems and ``rtwo-vm
symbolic`` use, with every input a concrete value: ``run.model_run``), and the two results
must be equal in every field, usage and fee included; ``steps`` finds the first step where
the two executions part when they do not. The request checks of spec 7.3.2 are read from the
spec by ``request`` (not by the reference's own checks).
"""

from proofs.oracle.request import NotAnInput
from proofs.oracle.run import Run, Undecided, model_run

__all__ = ["NotAnInput", "Run", "Undecided", "model_run"]
