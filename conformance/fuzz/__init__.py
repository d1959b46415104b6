"""Differential fuzzing campaigns (``rtwo-vm fuzz``): fresh requests, run on the in-process
reference (the oracle) and on implementations through the chapter 11 adapter protocol,
compared on the whole canonical result, shrunk to vectors.

Modules, in the order a request meets them: ``program`` (the structured request), ``build``
(fresh and malformed requests), ``mutate`` and ``generate`` (requests as a function of seed,
index and pool), ``feedback`` (grid cells and branch arcs of reference_vm), ``pool``,
``session`` (long-lived adapter processes on conformance.run.process.AdapterProcess),
``classify`` (divergences and their class), ``shrink``, ``findings`` (vectors, buckets,
DIR/findings), ``worker``, ``backend`` (in-process, local processes or Ray actors behind one
map-like API), ``campaign`` (epochs, merging, the safety net of timeouts),
``state`` (DIR/state.json, checked whole before a resume), ``promote`` (findings into the
``fuzz`` source of the committed corpus, which conformance.corpus.fuzz_source reads).

Why our own generator rather than hypothesis or atheris: a campaign must be reproducible from
(seed, index) alone whatever the number of workers and machines, and resumable from a small
state file. hypothesis draws from its own engine and database (its examples depend on the
run's history and its shrinker owns the input), and atheris drives libFuzzer over a byte
string in one process with its own coverage instrumentation (no Ray fan-out, no determinism
across workers, no Python 3.11 wheels everywhere). What the VM needs — valid containers by
construction, stack-aware operands, jump targets that survive deletion, policy and limit
choices, and a shrinker that keeps a divergence *class* while editing rows, operands, storage,
contracts, policy and limits — is structure those engines do not know; so generation,
mutation and delta debugging are ours (small, seeded ``random.Random``), and the feedback is
the project's own coverage grid plus ``sys.settrace`` arcs of reference_vm. hypothesis stays
where it fits better: the property tests of the interpreter (tests/test_properties.py).
"""
