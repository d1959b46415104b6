"""Properties of one call of examples/counter.rasm, for `rtwo-vm symbolic`:

    rtwo-vm symbolic examples/counter.rasm --properties examples/counter_properties.py
    rtwo-vm symbolic examples/counter.rasm --properties examples/counter_properties.py --compute 500

Storage slot 0 counts the calls. With --compute 500 a call that makes slot 0 non-zero for the
first time (400 units for a new slot) runs out of compute: those paths change nothing.
"""

import z3

from proofs.symbolic.properties import contract_property


@contract_property("counter_grows_by_one_or_changes_nothing",
                   note="success: slot 0 becomes slot 0 + 1 (a word: modulo 2^64) and no other "
                        "slot changes; any other outcome: no slot changes")
def grows_or_nothing(c):
    k = c.any_key()
    return [z3.Implies(c.success, c.post.storage[0] == c.pre.storage[0] + 1),
            z3.Implies(c.success, c.unchanged_except(0)),
            z3.Implies(z3.Not(c.success), c.post.storage[k] == c.pre.storage[k])]


@contract_property("counter_output_is_the_new_count")
def output(c):
    return [z3.Implies(c.success, z3.And(c.output.size == 8,
                                         c.output.word(0) == c.post.storage[0]))]


@contract_property("counter_grows_by_one_as_an_integer",
                   note="the count read as an unbounded integer: fails where the word wraps")
def grows_as_integer(c):
    return [z3.Implies(c.success, c.int(c.post.storage[0]) == c.int(c.pre.storage[0]) + 1)]
