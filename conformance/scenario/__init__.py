"""Scenario vectors (spec chapter 11.9): a pre-state and a sequence of top-level calls on it,
the expected result of every step and the state the sequence leaves.

- ``carry``: how state goes from one step to the next (11.9.2), and running a scenario input on
  an engine step by step;
- ``case``: the definition type (ScenarioCase, Step) and its input for a version;
- ``fill``: filling a definition or a bare scenario input with the reference's results, the
  author's expectations checked;
- ``store``: the stored scenario corpus, ``conformance/vectors/<version>/scenarios/``;
- ``schema``: validating scenario vectors and scenario requests;
- ``definitions``: the corpus's scenario definitions.
"""
