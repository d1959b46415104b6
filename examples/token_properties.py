"""Properties of one call of examples/token.rasm (a transfer), for `rtwo-vm symbolic`:

    rtwo-vm symbolic examples/token.rasm --properties examples/token_properties.py

Call data: word 0 = recipient, word 1 = amount; storage[account] = balance.
"""

import z3

from proofs.symbolic.properties import contract_property


@contract_property("transfer_conserves_the_two_balances",
                   note="on success, sender + recipient is unchanged (as integers)")
def conserves(c):
    sender, to = c.caller, c.calldata.word(0)
    before = c.int(c.pre.storage[sender]) + c.int(c.pre.storage[to])
    after = c.int(c.post.storage[sender]) + c.int(c.post.storage[to])
    return [z3.Implies(c.success, before == after)]


@contract_property("transfer_leaves_every_other_slot_unchanged")
def others_unchanged(c):
    return [c.unchanged_except(c.caller, c.calldata.word(0))]


def balances_fit_in_a_word(c):
    """Pre-condition: the two balances add up to at most 2^64 - 1 (a ledger whose total
    supply fits in a word)."""
    return [c.int(c.pre.storage[c.caller]) + c.int(c.pre.storage[c.calldata.word(0)])
            <= 2**64 - 1]


@contract_property("transfer_conserves_when_balances_fit", assume=balances_fit_in_a_word,
                   note="the same claim, for ledgers whose two balances fit in a word")
def conserves_when_fitting(c):
    return conserves(c)
