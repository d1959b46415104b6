"""The reference's program cache and the compiled engine's profile cache are bounded in bytes.

Each entry is charged an estimate computed from what it holds; the tests check the estimate
against tracemalloc (an independent measure of what preparing a program really allocates), then
that a thousand distinct 64 KiB containers, and 64 KiB codes of the worst shape (every byte an
instruction and a segment), stay under the default bounds, by the caches' own counts and by
tracemalloc."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

import spec
from compiled_vm import Engine
from compiled_vm.cache import MAX_BYTES, ProfileCache
from conftest import BASE_VERSION
from reference_vm import Contract, Message, WorldState
from reference_vm.container import build as build_any
from reference_vm.program import PROGRAM_CACHE_BYTES, ProgramCache, prepare, program_bytes
from reference_vm.rules import rules
from reference_vm.validate import validate

V = BASE_VERSION
RULES = rules(V)
OPS = spec.load(V).by_mnemonic
CODE_SIZE = spec.raw("limits", V)["machine"]["code_size"]
DATA_SIZE = spec.raw("limits", V)["machine"]["data_size"]
MIB = 1 << 20


def build(code: bytes, data: bytes = b"") -> bytes:
    return build_any(code, data, RULES.spec.number)


def op(mnemonic: str) -> bytes:
    return bytes([OPS[mnemonic].opcode])


def shapes(n: int) -> dict[str, bytes]:
    """Containers of ``n`` code bytes in the shapes that cost most and least per byte."""
    return {
        "every byte a segment": build(op("STOP") * n),
        "one long segment": build(op("NOP") * (n - 1) + op("STOP")),
        "PUSH8 runs": build((op("PUSH8") + b"\xff" * 8) * (n // 9) + op("STOP") * (n % 9 or 1)),
        "data": build(op("STOP"), b"\x07" * n),
    }


def traced_bytes(blob: bytes) -> int:
    """What preparing ``blob`` leaves allocated while the program is alive, plus the blob."""
    gc.collect()
    tracemalloc.start()
    program = prepare(validate(blob, RULES), RULES)
    gc.collect()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del program
    return size + len(blob)


@pytest.mark.parametrize("shape", list(shapes(16)))
def test_the_estimate_bounds_what_a_program_really_holds(shape):
    prepare(validate(build(op("STOP")), RULES), RULES)       # warm: tables built once per process
    blob = shapes(4096)[shape]
    measured = traced_bytes(blob)
    estimate = program_bytes(prepare(validate(blob, RULES), RULES), len(blob))
    assert measured <= estimate <= 1.5 * measured + 4096, (shape, measured, estimate)


def test_a_thousand_distinct_64_kib_containers_stay_under_the_default_bound():
    cache = ProgramCache()
    assert cache.max_bytes == PROGRAM_CACHE_BYTES == 64 * MIB
    w = RULES
    blobs = (build(op("STOP"), i.to_bytes(4, "little") * (DATA_SIZE // 4)) for i in range(1000))
    gc.collect()
    tracemalloc.start()
    for blob in blobs:
        cache(blob, w)
        assert cache.cache_info().bytes <= PROGRAM_CACHE_BYTES
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    info = cache.cache_info()
    # 1,000 entries of 128 KiB each would be 128 MiB: the oldest left.
    assert info.misses == 1000 and 0 < info.currsize < 1000
    assert held <= PROGRAM_CACHE_BYTES, held
    cache.cache_clear()


def test_64_kib_codes_of_the_worst_shape_stay_under_the_default_bound():
    cache = ProgramCache()
    w = RULES
    for i in range(3):          # each about 28 MB: the third pushes the first out
        cache(build(op("NOP") * i + op("STOP") * (CODE_SIZE - i)), w)
        assert cache.cache_info().bytes <= PROGRAM_CACHE_BYTES
    assert cache.cache_info().currsize == 2
    blob = build(op("STOP") * CODE_SIZE)
    cache(blob, w)                  # evicted, so prepared again: a miss
    assert cache.cache_info().misses == 4


def test_a_hit_is_the_same_program_and_the_lru_entry_leaves_first():
    w = RULES
    small = [build(op("PUSH1") + bytes([i]) + op("STOP")) for i in range(3)]
    sizes = [program_bytes(prepare(validate(b, w), w), len(b)) for b in small]
    cache = ProgramCache(max_bytes=sizes[0] + sizes[1] + sizes[2] - 1)
    first = cache(small[0], w)
    cache(small[1], w)
    assert cache(bytes(small[0]), w) is first       # equal bytes, another object: a hit
    cache(small[2], w)                              # over the bound: small[1], least recent, leaves
    info = cache.cache_info()
    assert (info.hits, info.misses, info.currsize) == (1, 3, 2)
    assert cache(small[0], w) is first and cache.cache_info().misses == 3
    cache(small[1], w)
    assert cache.cache_info().misses == 4


def test_the_compiled_engines_profiles_stay_under_their_bound():
    engine = Engine(threshold=1, cold_segments=0)
    assert engine.cache.max_bytes == MAX_BYTES == 64 * MIB
    engine.cache = ProfileCache(max_bytes=4 * MIB)
    for i in range(6):           # distinct codes of 8 KiB: each profile about 2.2 MB
        code = build(op("PUSH1") + bytes([i]) + op("POP") + op("NOP") * (CODE_SIZE // 8) + op("STOP"))
        result = engine.execute(WorldState({1: Contract(code)}), Message(1, 1), version=V)
        assert result.status == "success", result
        cache = engine.cache
        assert cache.bytes <= cache.max_bytes
        assert cache.bytes == sum(cache.entry_bytes(c, v) for t in cache.tables.values() for c, v in t.items())
    assert 0 < len(engine.cache.profiles()) < 6


def test_64_kib_codes_of_the_worst_shape_stay_under_the_compiled_engines_default_bound():
    engine = Engine(threshold=1, cold_segments=0)      # a profile from the first execution on
    for i in range(3):          # each profile about 30 MB: the third empties the table first
        code = build(op("NOP") * i + op("STOP") * (CODE_SIZE - i))
        assert engine.execute(WorldState({1: Contract(code)}), Message(1, 1), version=V).status == "success"
        assert engine.cache.bytes <= MAX_BYTES
        assert engine.cache.bytes > 25 * MIB        # the profile just made is charged
    assert len(engine.cache.profiles()) == 1       # two fit (59 MB), the third emptied the table
