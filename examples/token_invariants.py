"""Invariants of examples/token.rasm over call sequences, for `rtwo-vm symbolic --invariant`:

    rtwo-vm symbolic examples/token.rasm --storage 0xa=0x3e8 --storage 0xb=0x64 \\
        --concrete-storage --invariant examples/token_invariants.py --depth 3

The ledger of examples/token-storage.json (0xa holds 1000, 0xb 100, every other balance 0):
whatever transfers anyone makes, the total supply stays 1100. ``s.total()`` sums the slots
pinned and every slot a call wrote; with --concrete-storage every other slot is zero, so it
is the sum of every balance.
"""

from proofs.symbolic.invariants import invariant


@invariant("total_supply_is_constant",
           note="the sum of all balances after any sequence of transfers is the initial one")
def total_supply(s):
    return [s.total() == s.initial.total()]
