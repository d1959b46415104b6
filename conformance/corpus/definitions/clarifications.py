"""Vectors for the clarifications of spec release 1.0.1 that touch behaviour (spec/CHANGELOG.md):
limits written as JSON numbers that are not plain integers (7.3.2, B3), and the isolation
level's forcing of external_call before the request checks (10.2, 7.3.2, B1)."""

from __future__ import annotations

from conformance.corpus.definitions.common import OTHER, case, push_all, returning

PURE = {"storage_access": "none"}


def cases():
    # B3: a limit is an integer when its value is one; booleans and fractions are not.
    for name, limits, description in (
            ("boolean_limit", {"compute": True}, "A compute limit of true: not a number."),
            ("boolean_false_limit", {"storage_units": False}, "A storage limit of false: not a number."),
            ("fractional_limit", {"memory_pages": 1.5}, "A memory limit of 1.5: not an integer."),
            ("exponent_limit_above_maximum", {"compute": 1e16},
             "A compute limit written 1e+16: an integer above the maximum.")):
        yield case(f"request/INVALID_LIMITS/{name}", description, "push 1\nstop\n", limits=limits,
                   categories=("rejected", "limits"), sections=("7.3.2",))
    yield case("request/limits/integral_fraction_is_an_integer",
               "A compute limit written 1000.0 is the integer 1000: the request runs.",
               "push 1\npush 2\nadd\n" + returning(1), limits={"compute": 1000.0}, opcodes=("ADD",),
               categories=("limits",), sections=("7.3.2",))
    yield case("request/limits/integral_fraction_exhausts_like_the_integer",
               "A compute limit written 2.0 is the integer 2: the third instruction does not fit.",
               "push 1\npush 2\nadd\nstop\n", limits={"compute": 2.0}, opcodes=("ADD",),
               categories=("limits",), sections=("7.3.2",))
    # B1: under pure, external_call is forced to forbidden before the request checks.
    yield case("policy/STOP/pure_unknown_external_call_runs",
               "Level pure with an unknown external_call value: the level replaces it, the request runs.",
               "push 7\n" + returning(1), policy={**PURE, "external_call": "sometimes"}, isolation_level="pure",
               opcodes=("STOP",), categories=("policy", "isolation"), sections=("10.2", "7.3.2"))
    yield case("policy/CALL/pure_unknown_external_call_forbids_calls",
               "Level pure with an unknown external_call value: calls are forbidden, not INVALID_REQUEST.",
               push_all([OTHER, 1000, 0, 0]) + "call\n" + returning(1), contracts={OTHER: "stop\n"},
               policy={**PURE, "external_call": "sometimes"}, isolation_level="pure",
               opcodes=("CALL",), categories=("policy", "isolation"), sections=("10.2", "7.3.2"))
    yield case("policy/STOP/view_unknown_external_call_is_invalid",
               "Level view keeps the policy's external_call, so an unknown value is INVALID_REQUEST.",
               "push 7\n" + returning(1), policy={"storage_access": "read_only", "external_call": "sometimes"},
               isolation_level="view", opcodes=("STOP",), categories=("policy", "isolation", "rejected"),
               sections=("10.2", "7.3.2"))
