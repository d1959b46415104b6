"""Cryptographic hashing (spec section 6.9).

SHA-256 (FIPS 180-4), computed by Python's hashlib: it is in the standard library of every
mainstream language, so implementations need no third-party code, and it has no padding
variants to confuse (unlike Keccak-256 versus SHA3-256).
"""

from __future__ import annotations

import hashlib

from reference_vm.accounting import charge, grow_to, hash_cost
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    digest_size = rules.digest_size

    def SHA256(frame: Frame, imm: int) -> None:
        """dst src length -- : Write the 32-byte SHA-256 digest of memory[src, src+length) to memory[dst, dst+32).

        Cost rule hash: memory_expansion to cover the input range (if length > 0) and the
        digest range, then hash_cost(rules, length).
        """
        stack = frame.stack
        length = stack.pop()
        src = stack.pop()
        dst = stack.pop()
        grow_to(rules, frame, max(dst + digest_size, src + length if length else 0))
        charge(frame, hash_cost(rules, length))
        memory = frame.memory
        memory[dst:dst + digest_size] = hashlib.sha256(memory[src:src + length]).digest()

    return {"SHA256": SHA256}
