"""RTWO VM conformance: the vector corpus, its generator and the runner (spec chapter 11).

- ``definitions``, ``smt_source``, ``random_source``: where vectors come from;
  ``fill`` runs them through the reference interpreter and ``corpus`` stores them under
  ``conformance/vectors`` with a manifest and digest.
- ``protocol``, ``adapter``, ``selftest``: the JSON-lines adapter protocol, the reference
  interpreter's own adapter (``python -m conformance.adapter``) and the adapter self-test.
- ``runner``, ``compare``, ``tracediff``, ``determinism``, ``report``: validating one or more
  implementations against the corpus.
"""

from __future__ import annotations

from conformance.constants import (
    GENERATOR, GENERATOR_VERSION, KNOWN_FAILURES_DIR, PACKAGE_DIR, PROTOCOL, SMT_CACHE, SPEC_VERSION,
    VECTORS_DIR,
)

__all__ = ["GENERATOR", "GENERATOR_VERSION", "KNOWN_FAILURES_DIR", "PACKAGE_DIR", "PROTOCOL", "SMT_CACHE",
           "SPEC_VERSION", "VECTORS_DIR"]
