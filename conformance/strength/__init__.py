"""``rtwo-vm vectors strength``: how strong a corpus is, measured by mutation testing.

- ``mutants``: operator, constant, comparison, boolean and statement mutants of reference_vm
  modules, generated from their syntax trees, and the curated realistic bugs of
  ``curated.toml`` (patches with a one-line description each);
- ``equivalent.toml``: mutants that change no behaviour for any caller, each with a written
  reason; ``unreachable.toml``: mutants that change behaviour only for a Python caller, never
  for a protocol request, each with a written reason (both keyed by ids that name the mutated
  source text; a stale entry stops the run);
- ``isolate``: loading reference_vm with one mutant applied, in a fresh process or a forked
  child, never touching the checkout;
- ``run``: the prescreen (the corpus in-process, fail-fast), the confirmation of survivors
  through the adapter protocol and the search for the shortest vector that kills a survivor;
- ``backend``: the parallel map (local processes; Ray through the fuzzer's backend);
- ``report``: killed, survived, equivalent and unreachable per module, as text and JSON.
"""
