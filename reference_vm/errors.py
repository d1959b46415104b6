"""The ways an execution can end other than success or revert.

Each class is one kind of the spec's outcome taxonomy (spec/data/errors.toml, chapter 7).
The code carried is always a spec code; constructing an error with a code that is not in the
spec, or with a code of another kind, is itself an invariant failure.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Mapping

import spec


@functools.cache
def code_kinds() -> Mapping[str, str]:
    """Outcome code -> its kind, over every version: a code keeps its kind in every version
    that has it (checked here), so an error's kind does not depend on the version raising it;
    which codes a version may raise is its handlers' business, checked by its vectors."""
    kinds: dict[str, str] = {}
    for row in spec.versions():
        for code, err in spec.load(row.version).errors.items():
            if kinds.setdefault(code, err.kind) != err.kind:
                raise ValueError(f"{code} changes its kind between spec versions")
    return MappingProxyType(kinds)


class Halt(Exception):
    """STOP, RETURN or REVERT: a halt the program asked for. Not an error."""

    def __init__(self, reverted: bool, output: bytes):
        super().__init__("reverted" if reverted else "success")
        self.reverted = reverted
        self.output = output


class VMError(Exception):
    """Base of all spec-coded outcomes; ``kind`` names the errors.toml kind."""

    kind = ""

    def __init__(self, code: str, detail: str = ""):
        if code_kinds().get(code) != self.kind:
            raise InternalInvariantError(f"{type(self).__name__} raised with code {code!r}")
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail


class InvalidCode(VMError):
    """Container or code validation failed; nothing ran."""

    kind = "invalid"


class RequestRejected(VMError):
    """The execution request was malformed; nothing ran."""

    kind = "rejected"


class PolicyViolation(VMError):
    """The bound policy forbids an instruction the code holds; ``refused`` is that instruction
    (reference_vm.policy.Refusal: offset, mnemonic, error) when binding raised it."""

    kind = "violation"

    def __init__(self, code: str, detail: str = "", refused: object = None):
        super().__init__(code, detail)
        self.refused = refused


class Fault(VMError):
    """A spec-defined halt of an impossible operation (stack, return stack, TRAP, call depth)."""

    kind = "fault"


class Exhausted(VMError):
    """A sandbox limit would have been passed."""

    kind = "exhausted"


class InternalInvariantError(Exception):
    """An invariant of this implementation failed. Always a bug, reported as INTERNAL_ERROR."""

    code = "INTERNAL_ERROR"
