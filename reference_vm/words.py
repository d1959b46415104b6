"""Machine words.

The spec fixes the word at 64 bits (`limits.toml` machine.word_bits). The width is a parameter
here only so that proofs and exhaustive agreement checks can run the very same handlers at 8
bits; nothing else changes with it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass



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
def word(bits: int) -> Word:
    """The word of the given width (the spec's is a version's `limits.toml` machine.word_bits:
    rules.rules takes it from there)."""
    if bits not in (8, 16, 32, 64):
        raise ValueError(f"unsupported word width {bits}; use 8, 16, 32 or 64")
    return Word(bits)
