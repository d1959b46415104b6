"""SHA-256 over memory (spec 6.9, cost rule 5.6.5).

The hash is an uninterpreted function symbol ``sha256`` of (memory array, memory size,
src, length): the digest of the bytes memory[src, src+length) of a memory whose bytes past
its size are zero. Stated axioms: (1) it is a function (congruence, built into SMT);
(2) instance by instance, sha256(...) = FIPS 180-4 SHA-256 of those bytes, read little-endian
as a 256-bit value (byte k of the digest is bits 8k..8k+7). Axiom 2 is what concrete replay
evaluates (``digest_of``); no theorem needs more than axiom 1.
"""

from __future__ import annotations

import hashlib

import z3

from proofs.accounting import charge, grow_to, hash_cost, running, then, umax
from proofs.instructions.memory import write_bytes
from proofs.words import Width, byte_of

CONCRETE_LIMIT = 1 << 16   # longest concrete input replay hashes byte by byte


def sha256_symbol(w: Width) -> z3.FuncDeclRef:
    c = z3.BitVecSort(w.counter_bits)
    return z3.Function(f"sha256_w{w.bits}", z3.ArraySort(c, z3.BitVecSort(8)), c, c, c,
                       z3.BitVecSort(8 * w.num.digest_size))


def as_int(term) -> int | None:
    value = z3.simplify(term)
    return value.as_long() if z3.is_bv_value(value) else None


def stored_bytes(array) -> dict[int, int] | None:
    """{index: byte} of a constant array built as Store(...Store(K(0), i, v)...), else None."""
    found: dict[int, int] = {}
    while z3.is_store(array):
        index, byte = as_int(array.arg(1)), as_int(array.arg(2))
        if index is None or byte is None:
            return None
        found.setdefault(index, byte)  # the outermost store of an index is its value
        array = array.arg(0)
    if not (z3.is_K(array) and as_int(array.arg(0)) == 0):
        return None
    return found


def concrete_content(w: Width, memory, src: int, n: int) -> bytes | None:
    # Branches are built whether or not they are taken: a huge length belongs to a branch
    # that halts on the memory limit first, and keeps the function symbol.
    if n > CONCRETE_LIMIT:
        return None
    if memory.hash_key is not None:
        stored, size = stored_bytes(memory.hash_key[0]), as_int(memory.hash_key[1])
        if stored is not None and size is not None:
            return bytes(stored.get(i, 0) if i < size else 0 for i in range(src, src + n))
    values = [as_int(memory.read(w.cval(src + j))) for j in range(n)]
    known = [v for v in values if v is not None]
    return bytes(known) if len(known) == n else None


def digest_of(w: Width, memory, src, length):
    """Axiom 2 applied when every argument is concrete; the function symbol otherwise."""
    s, n = as_int(src), as_int(length)
    content = concrete_content(w, memory, s, n) if s is not None and n is not None else None
    if content is not None:
        digest = hashlib.sha256(content).digest()
        return z3.BitVecVal(int.from_bytes(digest, "little"), 8 * w.num.digest_size)
    if memory.hash_key is None:
        raise NotImplementedError("symbolic SHA256 of a memory already written this step")
    array, size = memory.hash_key
    return sha256_symbol(w)(array, size, src, length)


def models(w: Width) -> dict:
    digest_size = w.num.digest_size

    def SHA256(s, imm):
        (length, src, dst), s = s.pop(3)
        ln, sr, ds = w.widen(length), w.widen(src), w.widen(dst)
        # The digest range is always touched; the input range only when length > 0.
        end = z3.If(ln == 0, ds + digest_size, umax(ds + digest_size, sr + ln))

        def write(t):
            digest = digest_of(w, t.memory, sr, ln)  # the input is read before the write
            return [running(t.replace(memory=write_bytes(
                t.memory, ds, digest_size, lambda k: byte_of(digest, k))))]
        return then(then(grow_to(s, end), lambda t: charge(t, hash_cost(w, ln), "hash cost")),
                    write)

    return {"SHA256": SHA256}
