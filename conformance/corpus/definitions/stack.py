"""Stack (spec 6.2): immediates read little-endian and zero-extended, POP, and every DUPn and
SWAPn on distinct values so that a wrong position shows in the output."""

from __future__ import annotations

from conformance.corpus.definitions.common import case, push_all, returning

PUSH_SIZES = {"PUSH1": 1, "PUSH2": 2, "PUSH4": 4, "PUSH8": 8}


def _distinct(n: int) -> list[int]:
    # Values that differ in every byte, so a swapped or shifted item cannot look right.
    return [0x0101010101010101 * (i + 1) + (i << 56) for i in range(n)]


def cases():
    for mnemonic, size in PUSH_SIZES.items():
        top = 2 ** (8 * size) - 1
        for name, value in (("zero", 0), ("one", 1), ("max", top), ("high_byte", 0x80 << (8 * (size - 1))),
                            ("bytes", int.from_bytes(bytes(range(1, size + 1)), "little"))):
            yield case(f"stack/{mnemonic}/{name}",
                       f"{mnemonic} {hex(value)}: the immediate read little-endian, zero-extended.",
                       f"{mnemonic.lower()} {value}\n" + returning(1), opcodes=(mnemonic,),
                       categories=("semantics",))
    yield case("stack/POP/discards_top", "POP removes the top item only.",
               push_all([5, 6, 7]) + "pop\n" + returning(2), opcodes=("POP",),
               categories=("semantics",))
    yield case("stack/POP/to_empty", "POP of the only item, then STOP.",
               "push 9\npop\nstop\n", opcodes=("POP",), categories=("semantics",))
    for n in range(1, 17):
        values = _distinct(n + 1)
        yield case(f"stack/DUP{n}/distinct", f"DUP{n} copies the {n}th item from the top.",
                   push_all(values) + f"dup{n}\n" + returning(n + 2), opcodes=(f"DUP{n}",),
                   categories=("semantics",))
        yield case(f"stack/SWAP{n}/distinct",
                   f"SWAP{n} exchanges the top with the item {n} below it; others unchanged.",
                   push_all(_distinct(n + 2)) + f"swap{n}\n" + returning(n + 2),
                   opcodes=(f"SWAP{n}",), categories=("semantics",))
        yield case(f"stack/DUP{n}/exact_depth", f"DUP{n} with exactly {n} items.",
                   push_all(values[:n]) + f"dup{n}\n" + returning(n + 1), opcodes=(f"DUP{n}",),
                   categories=("semantics", "edge"))
        yield case(f"stack/SWAP{n}/exact_depth", f"SWAP{n} with exactly {n + 1} items.",
                   push_all(values[:n + 1]) + f"swap{n}\n" + returning(n + 1),
                   opcodes=(f"SWAP{n}",), categories=("semantics", "edge"))
