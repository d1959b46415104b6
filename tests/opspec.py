"""Shared spec constants and hand computations for the ``tests/test_ops_*.py`` files.

Everything here is derived from the spec data files of version 1.0 (``spec.load("1.0")``: the
instruction table, ``schedule.toml`` and the limits; ``for_version`` gives another version's)
with plain Python arithmetic, written independently of ``reference_vm``. The instruction tests build their expected costs, fees, page counts and word
values from these helpers, so a test compares the VM against the spec rather than against itself.

Import what a test file needs with ``from opspec import ...`` (``tests/`` is on ``sys.path``).
"""

from __future__ import annotations

import spec

VERSION = "1.0"       # the version whose instructions the test_ops_* files check (conftest.BASE_VERSION)
S = spec.load(VERSION)
SCHED = S.schedule

# ---- words ---------------------------------------------------------------------------------

W = 2 ** 64           # number of 64-bit words
M = W - 1             # all ones: the largest unsigned word, -1 as a signed word
MIN = 2 ** 63         # the most negative signed word, as its unsigned bit pattern
MAX = 2 ** 63 - 1     # the largest signed word

# ---- spec data: memory, copying, hashing, randomness ---------------------------------------

PAGE_SIZE = SCHED["memory"]["page_size"]
PAGE_COST = SCHED["memory"]["page_cost"]
COPY_WORD = SCHED["copy"]["word_size"]
COPY_COST = SCHED["copy"]["word_cost"]
BLOCK = SCHED["hash"]["block_size"]
BLOCK_COST = SCHED["hash"]["block_cost"]
DIGEST = SCHED["hash"]["digest_size"]
COUNTER_SIZE = SCHED["randomness"]["counter_size"]

# ---- spec data: storage --------------------------------------------------------------------

STO = SCHED["storage"]
READ_UNITS = STO["read_units"]
WRITE_UNITS = STO["write_units"]
NEW_UNITS = STO["new_slot_units"]
NEW_COST = STO["new_slot_cost"]

# ---- spec data: limits ---------------------------------------------------------------------

STACK_DEPTH = S.limits["machine"]["stack_depth"]
RSTACK = S.limits["machine"]["return_stack_depth"]
CALL_DEPTH = S.limits["machine"]["call_depth"]
MAX_CALL_DATA = S.limits["machine"]["call_data_size"]
DEFAULT_COMPUTE = S.limits["default"]["compute"]
DEFAULT_PAGES = S.limits["default"]["memory_pages"]


# ---- hand computations ---------------------------------------------------------------------

def cost(*mnemonics: str) -> int:
    """Summed base cost of the given instructions, from the instruction table."""
    return sum(S.by_mnemonic[m.upper()].cost for m in mnemonics)


def fee(compute: int, pages: int, units: int = 0) -> int:
    """Fee for the given compute, memory pages and (optionally) storage units."""
    f = SCHED["fee"]
    return (compute * f["compute_price"] + pages * f["memory_page_price"]
            + units * f["storage_unit_price"])


def pages_for(end: int) -> int:
    """Memory pages needed to cover bytes [0, end)."""
    return -(-end // PAGE_SIZE)


def copy_words(length: int) -> int:
    """Copy words charged for copying ``length`` bytes."""
    return -(-length // COPY_WORD)


def blocks(length: int) -> int:
    """Hash blocks charged for hashing ``length`` bytes."""
    return -(-length // BLOCK)


def u(x: int) -> int:
    """A signed Python integer as its 64-bit two's complement word."""
    return x % W


def s(x: int) -> int:
    """A 64-bit word read as a signed Python integer."""
    return x - W if x >= MIN else x


# conftest.returning_top appends: push 0 (PUSH1), swap1, mstore, push 0, push 8, return.
# RET_WARM: memory page 0 already exists (no page charge); RET_COLD: the mstore grows the first page.
RET_WARM = cost("PUSH1", "SWAP1", "MSTORE", "PUSH1", "PUSH1", "RETURN")
RET_COLD = RET_WARM + PAGE_COST
RET_COST = RET_COLD


def returning_stack(body: str, k: int) -> str:
    """Return the top k items, top first, as k little-endian words (k <= 31)."""
    lines = [body] + [f"push1 {8 * i}\nswap1\nmstore" for i in range(k)]
    lines.append(f"push1 0\npush1 {8 * k}\nreturn")
    return "\n".join(lines)


def ret_stack_cost(k: int) -> int:
    """Compute charged by the code ``returning_stack`` appends (first memory page included)."""
    return k * cost("PUSH1", "SWAP1", "MSTORE") + cost("PUSH1", "PUSH1", "RETURN") + PAGE_COST


# ---- reading results -----------------------------------------------------------------------

def words(out: bytes) -> list[int]:
    """Output bytes as little-endian 64-bit words."""
    return [int.from_bytes(out[i:i + 8], "little") for i in range(0, len(out), 8)]


def words_of(result) -> list[int]:
    """The output of a successful result as little-endian 64-bit words."""
    assert result.status == "success", (result.status, result.error)
    return words(result.output)


def usage(result):
    u = result.usage
    return (u.compute, u.memory_pages, u.storage_reads, u.storage_writes, u.storage_new_slots,
            u.storage_units)


def changes(result):
    return [(c.address, c.key, c.before, c.after) for c in result.state_changes]
