"""The corpus, from its sources to the committed files (spec chapter 11.2-11.4).

``vector`` (the definition type ``Case`` and filling one with the reference result), the
sources (``definitions/``, ``smt_source``, ``random_source``, ``fuzz_source``), ``fill``
(every source through the reference, validated), ``store`` (the group files, manifest and
digest under conformance/vectors), ``schema`` and ``fastschema`` (validation), ``coverage``,
``selection`` (filters and known-failure lists), ``fresh`` (a run's fresh sample, from a seed),
``committed`` and ``release`` (the versioned tarball of the committed corpus).
"""
