"""Definitions written for spec version 1.1 (Case.since "1.1", 1.1 containers): what 1.1 adds
(spec/CHANGELOG.md's 1.1 items) with its edge cases and boundaries, as the 1.0 modules of the
parent package do for 1.0. Every 1.0 definition is also filled for 1.1 (with its 1.0
containers); these are the 1.1 corpus's own.

- ``instructions``: MULHU, MULHS (N1), CLZ, CTZ, POPCNT (N2) on every pair or value of the named
  operands and the edges chapter 6.3 and 6.5 state;
- ``staticcall``: read-only frames (F1): every write in a read-only frame, frames below one,
  what stays allowed, the order of the checks, calls that cannot run, the depth limit;
- ``transient``: transient storage (T1): reads, writes, visibility across frames, undo, the
  transient_write rule and the machine.transient_slots boundary;
- ``versions``: containers of both versions (C1), undefined opcodes of 1.1 containers, and
  policies naming 1.1's names.
"""

from __future__ import annotations

MODULES = ("instructions", "staticcall", "transient", "versions")
