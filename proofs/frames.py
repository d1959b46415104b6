"""Agreement across frames: CALL replayed with every callee program of replay.CALLEES under
the policies of replay.POLICIES, from caller states chosen where frames interact.

Each case is one CALL from a concrete caller state (replay.py's inputs format), compared by
agreement.compare: the interpreter runs the callee for real (binding it under the policy,
journaling and undoing its writes, releasing its memory), the model runs the same program
through its opcode models (concrete.call_oracle). What a frame leaves behind is what is
compared: the caller's storage (re-entrant writes kept on success, undone on failure), the
callee's own slot, the meters (the callee's usage charged, its pages released, the peak
kept), return data (the callee's output, or empty: never the stale bytes the caller held),
events and the flag.

The caller states: stale return data and non-zero memory in the caller (its call-data range
included), a caller distinct from the address, an existing slot at the key a re-entry
writes; and, per kind, the edges where frames meet the limits: the depth rule at the call
and one frame below it (a re-entry refused), a compute operand too small for the callee, a
memory limit one page short of the callee's pages, a storage limit one unit short of its
write.
"""

from __future__ import annotations

import functools

from proofs.replay import POLICIES, REENTRANT, REENTRY_KEY, callees

CALLEE_ADDRESS = 0x200
STORAGE_UNITS = 10
BASE: dict = {
    "mnemonic": "CALL", "width": 64, "address": 0x100, "caller": 0xCA11E2,
    "memory_pages": 1, "memory": "a1b2c3d4e5f60718293a4b5c6d7e8f90", "pages_live": 1,
    "pages_peak": 2, "memory_limit": 8, "return_data": "deadbeefdeadbeef0102",
    "compute_used": 40, "compute_limit": 200_000, "storage_units": STORAGE_UNITS,
    "storage_limit": 100_000, "storage": {REENTRY_KEY: 9}, "random_counter": 3, "depth": 1,
    "height": 6,
}
# Callee kinds whose outcome a policy can change (they hold a gated or listed instruction).
POLICY_SENSITIVE = ("store", "memory", "reenter", "reenter_revert", "time", "random", "read")


def call_case(version: str, kind: str, policy: str = "open", compute: int | None = None,
          offset: int = 4, length: int = 8, mnemonic: str = "CALL", **changes) -> dict:
    if compute is None:  # the looping callee runs out of a small operand, the others finish
        compute = 120 if kind == "spin" else 1_000_000
    x = dict(BASE, mnemonic=mnemonic, version=version, callee=kind, policy=policy,
             stack=[CALLEE_ADDRESS, compute, offset, length], label=f"{kind} under {policy}")
    x.update(changes)
    return x


def frame_inputs(version: str, mnemonic: str = "CALL") -> list[dict]:
    """The cases of ``mnemonic`` (CALL, or 1.1's STATICCALL) under spec ``version``, in a
    fixed order (each labelled). From 1.1, CALL's cases add each callee kind called from a
    read-only frame (its callee is read-only too, spec 2.4)."""
    from proofs.words import width
    w = width(64, version)
    call_depth = w.num.call_depth
    _call = functools.partial(call_case, version, mnemonic=mnemonic)
    kinds = callees(version)
    cases = [_call(kind) for kind in kinds]
    cases += [_call(kind, policy) for kind in POLICY_SENSITIVE for policy in POLICIES
              if policy != "open"]
    for kind in sorted(kinds):
        if kinds[kind] is None:
            continue
        edge = f"{kind}: "
        cases += [
            _call(kind, depth=call_depth, label=edge + "the call refused by the depth rule"),
            _call(kind, depth=call_depth - 1, label=edge + "the callee at the deepest frame"),
            _call(kind, compute=6, label=edge + "a compute operand of 6"),
            _call(kind, memory_limit=2, label=edge + "memory limit one page above the caller's"),
            _call(kind, storage_limit=STORAGE_UNITS + 1,
                  label=edge + "storage limit one unit above the units used"),
            _call(kind, length=0, offset=1 << 40, return_data="",
                  label=edge + "empty call data far out, no return data before"),
        ]
    cases += [_call(kind, storage={}, label=f"{kind}: the re-entry's slot empty before")
              for kind in sorted(REENTRANT)]
    # A compute operand past the caller's limit, by a margin an uncapped callee would spend
    # quickly (not 2^40: such a callee would loop for hours before it stopped).
    cases.append(_call("spin", compute=2_000, compute_limit=600,
                       label="spin: a compute operand past the caller's limit"))
    if mnemonic == "CALL" and "STATICCALL" in w.spec.by_mnemonic:
        cases += [_call(kind, depth=2, read_only=True, label=f"{kind}: from a read-only frame")
                  for kind in kinds]
    return cases


def check(version: str, handler=None, model=None,
          mnemonic: str = "CALL") -> tuple[int, list[dict]]:
    """(cases run, disagreements) of every case of ``mnemonic``."""
    from proofs.agreement import compare

    found = []
    cases = frame_inputs(version, mnemonic)
    for x in cases:
        label = x.pop("label")
        diffs = compare(x, handler, model)
        if diffs:
            found.append({"case": label, "inputs": x, "differences": diffs})
    return len(cases), found
