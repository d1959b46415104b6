"""RTWO VM conformance: the vector corpus, its generator and the runner (spec chapter 11).

In the order of the flow (conformance/README.md has the map): ``corpus`` (the sources, ``fill``
through the reference interpreter, the stored corpus of each spec version under ``conformance/vectors/<version>``), then
``protocol`` and ``adapter`` (the JSON-lines adapter protocol and the reference interpreter's
own adapter, ``python -m conformance.adapter``), ``run`` (adapter processes, the suite, the
self-test, replay), ``report`` (what a run writes), and the campaigns ``fuzz`` and ``strength``.
"""

from __future__ import annotations

from conformance.constants import (
    GENERATOR, GENERATOR_VERSION, KNOWN_FAILURES_DIR, PACKAGE_DIR, PROTOCOL, SMT_CACHE, VECTORS_DIR,
    corpus_dir,
)

__all__ = ["GENERATOR", "GENERATOR_VERSION", "KNOWN_FAILURES_DIR", "PACKAGE_DIR", "PROTOCOL", "SMT_CACHE",
           "VECTORS_DIR", "corpus_dir"]
