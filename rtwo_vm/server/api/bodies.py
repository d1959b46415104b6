"""The request bodies of the actions, with the spec's bounds as their schema.

Words are 64-bit (limits.toml word_bits), as hex ("0x100") or decimal text or a JSON
integer; code and call data are hex, at most the machine's sizes (limits.toml [machine]);
a sandbox limit lies in limits.toml [minimum, maximum] (else INVALID_LIMITS); isolation
levels and storage access are sandbox.toml's (rtwo_vm.runtime.catalog), policy values
policy.toml's. An unknown field is refused. Nothing is checked twice: what the runtime
checks itself (an unknown contract, a policy id, a VM id) it refuses or records as the
command line's ``rtwo-vm call`` does.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt

import spec
from rtwo_vm.arguments.inputs import CliError, parse_hex, parse_word
from rtwo_vm.runtime.catalog import catalog, runtime_spec
from rtwo_vm.server.api.codes import bounds

_LIMITS = runtime_spec().limits
WORD_BITS = _LIMITS["machine"]["word_bits"]
WORD_MAX = (1 << WORD_BITS) - 1
HEADER = 16  # container header bytes (chapter 3.1)
MAX_CODE_HEX = 2 + 2 * (HEADER + _LIMITS["machine"]["code_size"] + _LIMITS["machine"]["data_size"])
MAX_CALL_DATA_HEX = 2 + 2 * _LIMITS["machine"]["call_data_size"]
HEX = "^(0x)?([0-9a-fA-F]{2})*$"
WORD_TEXT = "^(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})$"
TEXT = bounds().max_text_chars


def _word(value: Union[int, str]) -> int:
    if isinstance(value, int):
        return value
    try:
        return parse_word(value, "word")
    except CliError as err:
        raise ValueError(str(err)) from None


def _hex(value: str) -> bytes:
    try:
        return parse_hex(value, "hex")
    except CliError as err:
        raise ValueError(str(err)) from None


def _one_of(values: tuple[str, ...]):
    def check(value: Optional[str]) -> Optional[str]:
        if value is not None and value not in values:
            raise ValueError(f"must be one of {', '.join(values)}")
        return value
    return check


Word = Annotated[Union[Annotated[int, Field(strict=True, ge=0, le=WORD_MAX)],
                       Annotated[str, Field(pattern=WORD_TEXT)]],
                 AfterValidator(_word),
                 Field(description=f"a {WORD_BITS}-bit word: hex (0x...), decimal text or an integer")]
Name = Annotated[str, Field(min_length=1, max_length=TEXT, pattern="^[\\x21-\\x7e]+$")]


def _enum(values: tuple[str, ...], description: str) -> Any:
    return Annotated[Optional[str], AfterValidator(_one_of(values)),
                     Field(None, description=description, json_schema_extra={"enum": list(values)})]


_cat = catalog()
Isolation: Any = _enum(tuple(_cat.isolation), "isolation level (default: the default of sandbox.toml)")
Access: Any = _enum(tuple(_cat.storage_access_order), "storage access (default: the isolation level's widest)")
_fields = runtime_spec().policy["fields"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SandboxLimits(Strict):
    """Sandbox limits per dimension (limits.toml [minimum]..[maximum]; default [default])."""

    compute: Optional[StrictInt] = Field(None, ge=_LIMITS["minimum"]["compute"],
                                         le=_LIMITS["maximum"]["compute"])
    memory_pages: Optional[StrictInt] = Field(None, ge=_LIMITS["minimum"]["memory_pages"],
                                              le=_LIMITS["maximum"]["memory_pages"])
    storage_units: Optional[StrictInt] = Field(None, ge=_LIMITS["minimum"]["storage_units"],
                                               le=_LIMITS["maximum"]["storage_units"])


class DeployBody(Strict):
    """``rtwo-vm deploy``: a container as hex, an address (default: the lowest free from
    0x100) and initial storage."""

    code: Annotated[str, Field(max_length=MAX_CODE_HEX, pattern=HEX,
                               description="the container, as hex")]
    address: Optional[Word] = None
    storage: dict[Annotated[str, Field(pattern=WORD_TEXT)], Word] = Field(
        default_factory=dict, description='initial storage {"KEY": "VALUE"} (words)')
    specVersion: Optional[Name] = Field(
        None, description="the spec version the contract is deployed under and its calls run "
                          f"under ({', '.join(spec.names())}; default: the newest a VM runs)")

    def code_bytes(self) -> bytes:
        return _hex(self.code)

    def storage_words(self) -> dict[int, int]:
        return {_word(k): int(v) for k, v in self.storage.items()}


class CallBody(Strict):
    """``rtwo-vm call``: the invocation, its sandbox and policy."""

    to: Word
    caller: Word = 0
    callData: Annotated[str, Field(max_length=MAX_CALL_DATA_HEX, pattern=HEX,
                                   description="call data as hex")] = ""
    time: Word = Field(0, description="block time (the policy's time_access must allow it)")
    seed: Annotated[str, Field(pattern="^(0x)?[0-9a-fA-F]{64}$",
                               description="32-byte randomness seed as hex")] = "0" * 64
    policy: Optional[Name] = Field(None, description="determinism policy id (default: the spec default)")
    isolation: Isolation = None
    storageAccess: Access = None
    limits: SandboxLimits = Field(default_factory=lambda: SandboxLimits.model_validate({}))
    txRef: Optional[Name] = Field(None, description="transaction reference (default: request hash)")
    vm: Optional[Name] = Field(None, description="VM id (default: an active VM of the "
                                                 "contract's spec version)")
    executionMode: Optional[Name] = Field(
        None, description="run on an active VM of this execution mode "
                          f"({', '.join(catalog().values('execution_mode'))}; default: the "
                          "first that has one)")
    deliver: StrictBool = Field(False, description="then run one delivery pass to the sinks")


_OPERATIONS = len(runtime_spec().instructions) + len(runtime_spec().instruction_types)
Operations = Annotated[list[Annotated[str, Field(min_length=1, max_length=32)]],
                       Field(max_length=_OPERATIONS)]


class PolicyBody(Strict):
    """``rtwo-vm policy create``: unset fields take policy.toml's defaults; operations are
    mnemonics or instruction types, any case."""

    timeAccess: _enum(tuple(_fields["time_access"]["values"]), "time access policy") = None  # type: ignore[valid-type]
    randomness: _enum(tuple(_fields["randomness"]["values"]), "randomness policy") = None  # type: ignore[valid-type]
    externalCall: _enum(tuple(_fields["external_call"]["values"]), "external call policy") = None  # type: ignore[valid-type]
    allowedOperations: Optional[Operations] = Field(None, description="allow only these (null: all)")
    forbiddenOperations: Operations = Field(default_factory=list)


class RequeueBody(Strict):
    """``rtwo-vm events requeue``: one dead event by number, or all of them; for one sink or all."""

    eventId: Optional[StrictInt] = Field(None, ge=0, le=(1 << 63) - 1)
    all: StrictBool = False
    sink: Optional[Annotated[str, Field(min_length=1, max_length=TEXT)]] = None


class DeliverBody(Strict):
    """``rtwo-vm events deliver``: one delivery pass to every registered sink."""
