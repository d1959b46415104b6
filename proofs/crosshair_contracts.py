"""CrossHair checks of interpreter handler contracts: a supplement, never a proof.

CrossHair models Python ints as unbounded integers and concretizes ``^``, ``|`` and variable
shifts, so it explores paths rather than proving them. Each function below is an
assert-style contract (leading asserts are preconditions, the last assert the spec's
promise) over a 64-bit handler; ``run`` checks them all in one CrossHair process with a fixed
budget and returns the counterexamples it prints. The handlers are the base version's
(CrossHair imports this module by name, so it takes no version): the contracted word
operations are the same in every version.
"""

from __future__ import annotations

import subprocess
import sys
import types

from reference_vm.instructions import table
from reference_vm.rules import rules

import spec

_RULES = rules(spec.versions()[0].version, 64)
_MASK, _MIN = _RULES.word.mask, _RULES.word.sign_bit
_HANDLERS = {i.mnemonic: table(_RULES)[i.opcode] for i in _RULES.spec.instructions}
BUDGET_SECONDS = 20
PER_CONDITION_SECONDS = 2


def _run(mnemonic: str, *operands: int) -> int:
    frame = types.SimpleNamespace(stack=list(operands))   # these handlers read only the stack
    _HANDLERS[mnemonic](frame, 0)  # type: ignore[arg-type]  # a stand-in for a Frame (its stack)
    return frame.stack[-1]


def _signed(v: int) -> int:
    return v - (1 << 64) if v & _MIN else v


def contract_divu(a: int, b: int) -> None:
    assert 0 <= a <= _MASK and 0 <= b <= _MASK
    assert _run("DIVU", a, b) == (a // b if b else _MASK)


def contract_remu(a: int, b: int) -> None:
    assert 0 <= a <= _MASK and 0 <= b <= _MASK
    assert _run("REMU", a, b) == (a % b if b else a)


def contract_divs_rems_identity(a: int, b: int) -> None:
    assert 0 <= a <= _MASK and 0 <= b <= _MASK
    q, r = _run("DIVS", a, b), _run("REMS", a, b)
    assert (q * b + r) & _MASK == a


def contract_rems_sign(a: int, b: int) -> None:
    assert 0 <= a <= _MASK and 0 < b <= _MASK
    r = _signed(_run("REMS", a, b))
    assert r == 0 or (r < 0) == (_signed(a) < 0)
    assert abs(r) < abs(_signed(b))


def contract_shl(a: int, s: int) -> None:
    assert 0 <= a <= _MASK and 0 <= s <= _MASK
    assert _run("SHL", a, s) == ((a << s) & _MASK if s < 64 else 0)


def contract_shrs(a: int, s: int) -> None:
    assert 0 <= a <= _MASK and 0 <= s <= _MASK
    expected = (_signed(a) >> min(s, 63)) & _MASK
    assert _run("SHRS", a, s) == expected


def contract_lts(a: int, b: int) -> None:
    assert 0 <= a <= _MASK and 0 <= b <= _MASK
    assert _run("LTS", a, b) == (1 if _signed(a) < _signed(b) else 0)


CONTRACTS = [name for name in dir() if name.startswith("contract_")]


def run() -> tuple[list[str], int]:
    """(findings, contracts checked). A CrossHair that cannot run is itself a finding."""
    command = [sys.executable, "-m", "crosshair", "check", "--analysis_kind=asserts",
               f"--per_condition_timeout={PER_CONDITION_SECONDS}", __name__]
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=BUDGET_SECONDS + 30)
    except subprocess.TimeoutExpired:
        return [f"crosshair exceeded its {BUDGET_SECONDS + 30}s budget"], len(CONTRACTS)
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    if done.returncode not in (0, 1):
        return [f"crosshair exited {done.returncode}: {' '.join(lines[-3:])}"], len(CONTRACTS)
    return [ln for ln in lines if "error" in ln.lower() or "false" in ln.lower()], len(
        CONTRACTS)
