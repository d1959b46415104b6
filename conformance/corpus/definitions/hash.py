"""Hash (spec 6.9, 5.6.5): SHA-256 over memory at block boundaries, empty input, overlapping
input and digest ranges, and ranges no memory limit allows.

Each states what its author expects: the digest of the bytes hashed (FIPS 180-4, by hashlib),
and for the lengths at and around the block size the compute of each version, whose hash
block cost differs (1.1's item P1), so the expectation is one per version; the ranges no limit
allows MEMORY_LIMIT_EXCEEDED."""

from __future__ import annotations

import hashlib

import spec
from conformance.corpus.definitions.common import (
    EXCEEDED, MASK, PAGE, VERSIONS, Expect, base_costs, case, push_all, returning, words,
)

DIGEST_WORDS = 4
# The 72 bytes _digest_of writes before hashing: word i is 0x0101010101010101 * (i + 1).
FILLED = words(*(0x0101010101010101 * (i + 1) for i in range(9)))
NO_LIMIT_ALLOWS = Expect(outcome=EXCEEDED["memory_pages"], usage={"memory_pages": 0})


def _hashed(length: int, code: str, version: str, src: int = 0) -> Expect:
    """_digest_of(length) under ``version``: it returns the digest of the bytes hashed (read
    back as words and returned, the same 32 bytes); memory is one page (every range lies in
    it), charged once; SHA256 charges hash_cost(length) (5.6.5); the rest their base costs."""
    schedule = spec.load(version).schedule
    block = schedule["hash"]
    compute = (base_costs(code, version) + schedule["memory"]["page_cost"]
               + -(-length // block["block_size"]) * block["block_cost"])
    fee = schedule["fee"]
    return Expect(outcome="success", output=hashlib.sha256(FILLED[src:src + length]).digest(),
                  usage={"compute": compute, "memory_pages": 1,
                         "fee": compute * fee["compute_price"] + fee["memory_page_price"]})


def _digest_of(length: int, dst: int = 1000, src: int = 0) -> str:
    # Fill memory[0, 72) with known bytes, hash a prefix, return the four digest words.
    fill = "".join(f"push {8 * i}\npush {0x0101010101010101 * (i + 1)}\nmstore\n" for i in range(9))
    read = "".join(f"push {dst + 8 * i}\nmload\n" for i in range(DIGEST_WORDS))
    return fill + push_all([dst, src, length]) + "sha256\n" + read + returning(DIGEST_WORDS)


def cases():
    for length in (0, 1, 55, 56, 63, 64, 65, 72):
        code = _digest_of(length)
        yield case(f"hash/SHA256/length_{length}", f"SHA-256 of {length} bytes of memory.",
                   code, opcodes=("SHA256",), categories=("semantics", "cost"),
                   expect={v: _hashed(length, code, v) for v in VERSIONS})
    yield case("hash/SHA256/overlapping", "The digest overwrites its own input: input read first.",
               _digest_of(32, dst=0, src=0), opcodes=("SHA256",), categories=("semantics", "edge"),
               expect=Expect(outcome="success", output=hashlib.sha256(FILLED[:32]).digest()))
    yield case("hash/SHA256/empty_input_far_src", "Length 0 with a huge src: only the digest range grows memory.",
               push_all([0, MASK, 0]) + "sha256\npush 0\nmload\nmsize\n" + returning(2),
               opcodes=("SHA256",), categories=("semantics", "edge"),
               expect=Expect(outcome="success", output=words(int.from_bytes(hashlib.sha256(b"").digest()[:8], "little"),
                                                             PAGE)))
    yield case("hash/SHA256/digest_crosses_page", "The digest range crosses a page boundary.",
               push_all([PAGE - 16, 0, 8]) + "sha256\nmsize\n" + returning(1), opcodes=("SHA256",),
               categories=("semantics", "edge"), expect=Expect(outcome="success", output=words(2 * PAGE)))
    for name, (dst, src, length) in {"huge_dst": (MASK, 0, 0), "huge_src": (0, MASK, 1),
                                     "huge_length": (0, 0, MASK)}.items():
        yield case(f"hash/SHA256/{name}", f"SHA256 dst={hex(dst)} src={hex(src)} length={hex(length)}.",
                   push_all([dst, src, length]) + "sha256\nstop\n", opcodes=("SHA256",), categories=("limits",),
                   expect=NO_LIMIT_ALLOWS)
