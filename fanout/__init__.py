"""Where independent work runs: this process, local worker processes, or a Ray cluster.

A neutral package: it imports nothing of the project (only the standard library, and Ray
when it is installed and asked for), so every layer may use it — the fuzzer and
``vectors strength`` (conformance), ``prove``, ``prove --strength`` and ``symbolic``
(proofs) — and all of them fan out the same way. Layers: ``ray_setup`` (joining or
starting a cluster), ``actors`` (long-lived stateful workers: the fuzzer), ``tasks``
(independent tasks with retries and progress: the proofs and the strength runs), ``resume``
(a run's finished tasks kept in a state file sealed with a local key).
"""
