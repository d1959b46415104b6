"""The reference adapter with one bug planted in the reference's own source: what a VM of 1.1
gets wrong when it is written from the 1.1 text carelessly.

    python tests/conformance_fixtures/planted_vm.py --bug BUG

The bug is planted as tests/planting.py does (the real function's source with one piece of
text replaced, compiled in its module), before the adapter serves anything:

  mulhs-sign          MULHS reads a as unsigned (the high word of a negative a's product is wrong)
  clz-in-1-0          every container is decoded with the execution version's instruction set, so
                      a 1.0 container under 1.1 accepts CLZ (0x69) and the other new opcodes
  read-only-sstore    SSTORE in a read-only frame (below a STATICCALL) writes instead of faulting
  transient-leak      transient storage is one map for the whole process: what an execution wrote
                      is there when the next one starts
  repricing-in-1-0    SHA256 costs 1.1's price per block in sessions of 1.0 too
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planting import plant  # noqa: E402

BUGS = ("mulhs-sign", "clz-in-1-0", "read-only-sstore", "transient-leak", "repricing-in-1-0")


class _Setter:
    """What planting.plant needs of pytest's monkeypatch: setattr (never undone: the process ends)."""

    @staticmethod
    def setattr(owner, name, value) -> None:
        setattr(owner, name, value)


def install(bug: str) -> None:
    from reference_vm import rules, state
    from reference_vm.instructions import arithmetic, storage
    if bug == "mulhs-sign":
        plant(_Setter, arithmetic, "handlers", "stack[-1] = ((signed(stack[-1]) * b) >> bits) & mask",
              "stack[-1] = ((stack[-1] * b) >> bits) & mask")
    elif bug == "clz-in-1-0":
        plant(_Setter, rules.Rules, "instruction_set", "if container_version == self.spec.number:", "if True:")
    elif bug == "read-only-sstore":
        plant(_Setter, storage, "handlers", 'raise Fault("READ_ONLY_WRITE")', "pass")
    elif bug == "transient-leak":
        state._LEAKED = {}        # type: ignore[attr-defined]  # the planted process-wide map
        plant(_Setter, state.Journal, "__init__", "self._transient: dict[tuple[int, int], int] = {}",
              "self._transient = _LEAKED")
    elif bug == "repricing-in-1-0":
        plant(_Setter, rules.Rules, "__init__", 'self.hash_block_cost = schedule["hash"]["block_cost"]',
              'self.hash_block_cost = spec.load(spec.latest()).schedule["hash"]["block_cost"]')


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", choices=BUGS, required=True)
    args = parser.parse_args()
    install(args.bug)
    from conformance.adapter import Adapter, main as serve
    adapter = Adapter()
    adapter.name = f"planted-{args.bug}"
    return serve([], adapter)


if __name__ == "__main__":
    sys.exit(main())
