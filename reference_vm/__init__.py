"""The RTWO VM reference interpreter (every version of spec/versions.toml, chosen per request).

Phases, each its own module: container and decode (bytes to instructions), validate (code
rules), policy (binding a determinism policy), program (preparing segments), execute (running
frames), accounting (dynamic charges) and result (canonical outcomes). Instruction handlers
live in ``reference_vm.instructions``, one module per instruction type.
"""

from reference_vm.assembler import AssemblyError, assemble
from reference_vm.disassembler import disassemble
from reference_vm.execute import execute
from reference_vm.policy import Policy
from reference_vm.request import Context, Limits, Message
from reference_vm.result import CallRecord, Event, ExecutionResult, Usage
from reference_vm.state import Contract, StateChange, StateView, WorldState

__all__ = [
    "AssemblyError", "CallRecord", "Context", "Contract", "Event", "ExecutionResult", "Limits", "Message",
    "Policy", "StateChange", "StateView", "Usage", "WorldState", "assemble", "disassemble", "execute",
]
