"""What a conformance run writes: ``counts`` (counts and triage order of the outcomes),
``triage`` (what to implement next), ``text`` (the printed summary), ``document``
(``report.json`` and the ``--json`` summary), ``junit``, ``html``, ``bundles`` (one replay
bundle per failing vector) and ``files`` (all of them into ``--out``, atomically).
"""
