"""SMT semantics of RTWO VM (per spec version): a z3 model of every opcode, theorems about it, and
its agreement with the reference interpreter.

The model is written from the spec data and prose only; it shares nothing with
``reference_vm`` but ``spec``. ``proofs/`` mirrors ``reference_vm/`` module for module:
words, machine (symbolic state), accounting (cost rules), instructions/<type> (transitions),
execute (the per-instruction steps of chapter 5.2.3), validate, policy, lifecycle. On top:
theorems/laws (what is proved), agreement/replay (model versus interpreter), smtlib (export
and second solver), runner/report (the ``rtwo-vm prove`` suite) and branches (concrete inputs
hitting every branch of the model, for conformance vectors).
"""
