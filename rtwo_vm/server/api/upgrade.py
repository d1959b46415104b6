"""The upgrade check over HTTP: ``POST /api/v1/contracts/{address}/upgrade-check``, the
answer of ``rtwo-vm upgrade-check`` (rtwo_vm/runtime/upgrade.py): would the contract give the
same result under another spec version (default: the newest) as under the one it is deployed
under? ``proved-equal``, ``differs`` with the input and the reference's result under each
version, or ``unknown`` with the reasons.

It reads only, but it is an action (it needs the bearer token, access.py): one check may run
the symbolic executor for as long as its budgets allow. The body's budgets are bounded by the
executor's defaults (a request can ask for less work, never more), and one check runs at a
time per server process (z3 is not thread-safe): a check that cannot start within its
deadline is refused SERVER_BUSY. The answer depends on the contract, the versions, the
compared fields, the limits and the budgets only, never on the load.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from fastapi import APIRouter, Depends, Path
from pydantic import BaseModel, Field, StrictFloat, StrictInt

from proofs.symbolic import bounds
from reference_vm import Limits
from rtwo_vm.runtime import Runtime
from rtwo_vm.runtime.upgrade import FIELDS, Budget
from rtwo_vm.server.api.bodies import Name, SandboxLimits, Strict, _word
from rtwo_vm.server.api.codes import ApiError, refusals
from rtwo_vm.server.runtimes import runtime

router = APIRouter()
RT = Annotated[Runtime, Depends(runtime)]
Field_ = Literal["status", "error", "error_pc", "output", "storage", "state_changes", "events",
                 "calls", "usage", "fee"]


class UpgradeCheckBody(Strict):
    """The version to check against, the fields compared, the limits of the calls checked
    and the budgets (each at most the symbolic executor's default)."""

    to: Optional[Name] = Field(None, description="the spec version to check against "
                                                 "(default: the newest)")
    compare: Optional[Annotated[list[Field_], Field(min_length=1, max_length=len(FIELDS) + 1)]] = \
        Field(None, description="fields compared (default: all of " + ", ".join(FIELDS) + ")")
    limits: SandboxLimits = Field(default_factory=lambda: SandboxLimits.model_validate({}))
    maxCalldata: StrictInt = Field(bounds.DEFAULT_MAX_CALLDATA, ge=0,
                                   le=bounds.DEFAULT_MAX_CALLDATA,
                                   description="the longest call data explored")
    loopBound: StrictInt = Field(bounds.DEFAULT_LOOP_BOUND, ge=1, le=bounds.DEFAULT_LOOP_BOUND)
    maxPaths: StrictInt = Field(bounds.DEFAULT_MAX_PATHS, ge=1, le=bounds.DEFAULT_MAX_PATHS)
    maxSteps: StrictInt = Field(bounds.DEFAULT_MAX_STEPS, ge=1, le=bounds.DEFAULT_MAX_STEPS)
    maxWork: StrictInt = Field(bounds.DEFAULT_MAX_WORK, ge=1, le=bounds.DEFAULT_MAX_WORK,
                               description="z3 work units of each phase")
    deadlineSeconds: StrictFloat | StrictInt = Field(
        bounds.DEFAULT_DEADLINE, gt=0, le=bounds.DEFAULT_DEADLINE,
        description="wall-clock safety net: a check it stops is unknown, never an answer")


class UpgradeCheck(BaseModel):
    """The answer (rtwo_vm.runtime.upgrade.UpgradeCheck.to_json)."""

    address: str
    fromVersion: str
    toVersion: str
    answer: str = Field(description="proved-equal, differs or unknown")
    verdict: str = Field(description="the equivalence verdict: equivalent, different, "
                                     "bounded, unknown, stopped or disagreement")
    compared: list[str]
    budget: dict[str, Any]
    limits: dict[str, int]
    contracts: list[str] = Field(description="the deployed contracts the check ran")
    contractsLeftOut: int = Field(ge=0)
    paths: list[int]
    queries: int = Field(ge=0)
    reasons: list[str] = Field(description="what the check left out, or why it is unknown")
    differing: list[str]
    witness: Optional[dict[str, Any]] = Field(description="an input on which the versions "
                                                          "differ")
    results: Optional[dict[str, dict[str, Any]]] = Field(
        description="version -> the reference interpreter's result on the input")


@router.post("/contracts/{address}/upgrade-check", response_model=UpgradeCheck,
             responses=refusals("INVALID_REQUEST", "INVALID_LIMITS", "UNKNOWN_RECORD",
                                "SERVER_BUSY"), tags=["contracts"])
def upgrade_check(rt: RT, address: Annotated[str, Path(max_length=24,
                                                       description="hex or decimal")],
                  body: UpgradeCheckBody):
    """Whether the contract gives the same result under ``to`` as under the version it is
    deployed under, on every input within the budgets; reads only."""
    try:
        word = _word(address)
    except ValueError as err:
        raise ApiError("INVALID_REQUEST", f"address: {err}") from None
    given = body.limits.model_dump(exclude_none=True)
    budget = Budget(max_calldata=body.maxCalldata, loop_bound=body.loopBound,
                    max_paths=body.maxPaths, max_steps=body.maxSteps, max_work=body.maxWork,
                    deadline=float(body.deadlineSeconds))
    return rt.upgrade_check(word, body.to, compare=body.compare, budget=budget,
                            limits=Limits(**{d: given[d] for d in Limits.DIMENSIONS
                                             if d in given})).to_json()
