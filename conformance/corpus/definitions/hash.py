"""Hash (spec 6.9, 5.6.5): SHA-256 over memory at block boundaries, empty input, overlapping
input and digest ranges, and ranges no memory limit allows."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, PAGE, case, push_all, returning

DIGEST_WORDS = 4


def _digest_of(length: int, dst: int = 1000, src: int = 0) -> str:
    # Fill memory[0, 72) with known bytes, hash a prefix, return the four digest words.
    fill = "".join(f"push {8 * i}\npush {0x0101010101010101 * (i + 1)}\nmstore\n" for i in range(9))
    read = "".join(f"push {dst + 8 * i}\nmload\n" for i in range(DIGEST_WORDS))
    return fill + push_all([dst, src, length]) + "sha256\n" + read + returning(DIGEST_WORDS)


def cases():
    for length in (0, 1, 55, 56, 63, 64, 65, 72):
        yield case(f"hash/SHA256/length_{length}", f"SHA-256 of {length} bytes of memory.",
                   _digest_of(length), opcodes=("SHA256",), categories=("semantics", "cost"))
    yield case("hash/SHA256/overlapping", "The digest overwrites its own input: input read first.",
               _digest_of(32, dst=0, src=0), opcodes=("SHA256",), categories=("semantics", "edge"))
    yield case("hash/SHA256/empty_input_far_src", "Length 0 with a huge src: only the digest range grows memory.",
               push_all([0, MASK, 0]) + "sha256\npush 0\nmload\nmsize\n" + returning(2),
               opcodes=("SHA256",), categories=("semantics", "edge"))
    yield case("hash/SHA256/digest_crosses_page", "The digest range crosses a page boundary.",
               push_all([PAGE - 16, 0, 8]) + "sha256\nmsize\n" + returning(1), opcodes=("SHA256",),
               categories=("semantics", "edge"))
    for name, (dst, src, length) in {"huge_dst": (MASK, 0, 0), "huge_src": (0, MASK, 1),
                                     "huge_length": (0, 0, MASK)}.items():
        yield case(f"hash/SHA256/{name}", f"SHA256 dst={hex(dst)} src={hex(src)} length={hex(length)}.",
                   push_all([dst, src, length]) + "sha256\nstop\n", opcodes=("SHA256",), categories=("limits",))
