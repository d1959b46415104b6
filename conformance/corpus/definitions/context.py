"""Context (spec 6.12): TIME and RANDOM under open gates; the random stream's counter shared by
every frame and never rolled back."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, OPEN, OTHER, case, push_all, returning

SEED = bytes(range(32))


def cases():
    for name, time in (("zero", 0), ("typical", 1_700_000_000), ("max", MASK)):
        yield case(f"context/TIME/{name}", f"TIME with block time {hex(time)}.", "time\n" + returning(1),
                   block_time=time, policy=OPEN, opcodes=("TIME",), categories=("semantics",))
    yield case("context/TIME/same_in_callee", "TIME is the same in a callee.",
               push_all([OTHER, 100000, 0, 0]) + "call\npop\npush 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\ntime\n"
               + returning(2), contracts={OTHER: "time\n" + returning(1)}, block_time=12345,
               policy=OPEN, opcodes=("TIME",), categories=("semantics", "call"))
    for name, seed in (("zero_seed", bytes(32)), ("counting_seed", SEED), ("ones_seed", b"\xff" * 32)):
        yield case(f"context/RANDOM/three_words_{name}", "The first three words of the random stream.",
                   "random\nrandom\nrandom\n" + returning(3), random_seed=seed, policy=OPEN,
                   opcodes=("RANDOM",), categories=("semantics",))
    yield case("context/RANDOM/shared_with_failed_callee",
               "A callee that reads RANDOM and then reverts still consumes its word.",
               "random\n" + push_all([OTHER, 100000, 0, 0]) + "call\npop\nrandom\n" + returning(2),
               contracts={OTHER: "random\npop\npush 0\npush 0\nrevert\n"}, random_seed=SEED, policy=OPEN,
               opcodes=("RANDOM",), categories=("semantics", "call"))
