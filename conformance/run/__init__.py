"""Running adapters against the corpus (spec chapter 11.5-11.8): ``keeper`` and ``process`` (one
adapter process, bounded), ``runner`` (a pool of them, pipelined), ``requests``, ``blind``,
``compare``, ``tracediff`` and ``traces``, ``determinism``, ``safety_net``, ``outcomes`` (the
judgement of a vector), ``suite`` (``rtwo-vm conformance run``), ``selftest``, ``inputs`` (the
files a run reads back) and ``replay``.
"""
