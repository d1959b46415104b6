"""Policy-gated reads of the execution context (spec section 6.12).

Both instructions are gated: code holding them is refused when the policy is bound unless
time_access is allowed (TIME) or randomness is seeded (RANDOM), so these handlers never run
under a policy that forbids them.
"""

from __future__ import annotations

from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    def TIME(frame: Frame, imm: int) -> None:
        """-- time : Push the block time of the execution context."""
        frame.stack.append(frame.execution.context.block_time)

    def RANDOM(frame: Frame, imm: int) -> None:
        """-- value : Push the next word of the deterministic random stream seeded by the execution context."""
        frame.stack.append(frame.execution.next_random())

    return {"TIME": TIME, "RANDOM": RANDOM}
