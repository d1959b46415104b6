"""Machine words.

The spec fixes the word at 64 bits. The width is a parameter here only so that proofs and
exhaustive agreement checks can run the very same handlers at 8 bits; nothing else changes
with it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import spec


@dataclass(frozen=True, slots=True)
class Word:
    """Constants of a W-bit two's complement word."""

    bits: int

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def sign_bit(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def size(self) -> int:
        """Bytes per word in memory, call data and immediates."""
        return self.bits // 8

    def to_signed(self, value: int) -> int:
        return value - (1 << self.bits) if value & self.sign_bit else value

    def from_signed(self, value: int) -> int:
        return value & self.mask


@functools.cache
def word(bits: int | None = None) -> Word:
    """The word of the given width; by default the spec's (64 bits)."""
    if bits is None:
        bits = spec.load().limits["machine"]["word_bits"]
    if bits not in (8, 16, 32, 64):
        raise ValueError(f"unsupported word width {bits}; use 8, 16, 32 or 64")
    return Word(bits)
