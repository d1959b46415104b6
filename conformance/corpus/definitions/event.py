"""Events (spec 6.10, 5.6.6): topics in signature order, data from memory, zero-length data at
any offset, emission order across frames, and events discarded with failed frames."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, OTHER, THIRD, case, push_all

SETUP = "push 0\npush 0x0807060504030201\nmstore\n"


def _log(n: int, offset: int = 0, length: int = 8, first_topic: int = 0xA1) -> str:
    return push_all([offset, length, *range(first_topic, first_topic + n)]) + f"log{n}\n"


def _call(address: int) -> str:
    return push_all([address, 100000, 0, 0]) + "call\npop\n"


def cases():
    for n in range(5):
        m = f"LOG{n}"
        yield case(f"event/{m}/basic", f"{m} with {n} topics and 8 bytes of data.",
                   SETUP + _log(n) + "stop\n", opcodes=(m,), categories=("semantics",))
        yield case(f"event/{m}/empty_data_huge_offset", f"{m} with length 0 at offset 2^64-1: nothing touched.",
                   _log(n, offset=MASK, length=0) + "msize\npop\nstop\n", opcodes=(m,), categories=("semantics", "edge"))
        yield case(f"event/{m}/data_grows_memory", f"{m} over 100 bytes starting past memory.",
                   _log(n, offset=4090, length=100) + "stop\n", opcodes=(m,), categories=("semantics", "cost"))
        yield case(f"event/{m}/huge_length", f"{m} with a length no memory limit allows.",
                   _log(n, offset=0, length=MASK) + "stop\n", opcodes=(m,), categories=("limits",))
        yield case(f"event/{m}/max_topics", f"{m} with topics 2^64-1.",
                   SETUP + push_all([0, 3] + [MASK] * n) + f"log{n}\nstop\n", opcodes=(m,),
                   categories=("semantics", "edge"))
    yield case("event/LOG2/order_in_frame", "Events keep emission order.",
               SETUP + _log(2, first_topic=1) + _log(0) + _log(1, first_topic=9) + "stop\n",
               opcodes=("LOG2", "LOG0", "LOG1"), categories=("semantics",))
    yield case("event/LOG1/across_frames", "Callee events are inserted where the CALL completes.",
               SETUP + _log(1, first_topic=1) + _call(OTHER) + _log(1, first_topic=3) + "stop\n",
               contracts={OTHER: _log(1, first_topic=2, length=0) + "stop\n"},
               opcodes=("LOG1", "CALL"), categories=("semantics", "call"))
    yield case("event/LOG1/reverted_callee_discarded", "A reverted callee's events are discarded.",
               SETUP + _call(OTHER) + _log(1, first_topic=3) + "stop\n",
               contracts={OTHER: _log(1, first_topic=2, length=0) + "push 0\npush 0\nrevert\n"},
               opcodes=("LOG1", "CALL"), categories=("semantics", "call"))
    yield case("event/LOG1/nested_discarded_with_parent",
               "A successful grandchild's events are discarded when its parent reverts.",
               _call(OTHER) + _log(1, first_topic=3, length=0) + "stop\n",
               contracts={OTHER: _call(THIRD) + "push 0\npush 0\nrevert\n",
                          THIRD: _log(1, first_topic=2, length=0) + "stop\n"},
               opcodes=("LOG1", "CALL"), categories=("semantics", "call"))
    for name, end in (("revert", "push 0\npush 0\nrevert\n"), ("trap", "trap\n")):
        yield case(f"event/LOG0/entry_{name}", f"Entry frame {name}s: no events in the result.",
                   SETUP + _log(0) + end, opcodes=("LOG0",), categories=("semantics",))
