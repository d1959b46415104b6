"""Invariants of examples/counter.rasm over call sequences, for `rtwo-vm symbolic --invariant`:

    rtwo-vm symbolic examples/counter.rasm --invariant examples/counter_invariants.py --depth 3

Storage slot 0 counts the successful calls. Its initial value is symbolic; each invariant
assumes it starts below 2^63, so that it cannot wrap within a few calls (without that
pre-condition a count of 2^64 - 1 wraps to 0 on the next call, and both fail).
"""

from proofs.symbolic.invariants import invariant


def starts_below_2_63(s):
    return [s.int(s.storage[0]) < 2**63]


@invariant("count_is_the_number_of_successful_calls", assume=starts_below_2_63,
           note="slot 0 = its initial value + the successful calls so far (as integers)")
def count(s):
    return [s.int(s.storage[0]) == s.int(s.initial.storage[0]) + s.successes]


@invariant("count_never_decreases", assume=starts_below_2_63,
           note="no call makes slot 0 smaller")
def never_decreases(s):
    return [s.int(s.before.storage[0]) <= s.int(s.storage[0])]
