"""Two oracles at fill: every expected result of the corpus also computed by the proofs' SMT
models (proofs/oracle) and required to be equal, field by field (``corpus.check``); a
disagreement names both results and the first step where the executions part
(``compare.Disagreement``)."""
