"""Invariants of examples/vault.rasm over call sequences, for `rtwo-vm symbolic --invariant`:

    rtwo-vm symbolic examples/vault.rasm --storage 0xa=100 --concrete-storage \\
        --invariant examples/vault_invariants.py --depth 2

Account 0xa starts with a credit of 100 and nothing is paid out: the vault can never pay
out more than the credits it started with. Every single call keeps that (depth 1 proves
it); the planted bug breaks it in two calls (0xa withdraws twice), found with no hint of
the sequence.
"""

from proofs.symbolic.invariants import invariant


@invariant("paid_out_within_the_credits",
           note="the total paid out (slot 0) never exceeds the credits the vault started with")
def paid_out_within_the_credits(s):
    return [s.int(s.storage[0]) <= s.initial.total()]
