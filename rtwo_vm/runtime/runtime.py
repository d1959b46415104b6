"""The runtime: one object composing the eleven services over one database.

    rt = Runtime("rtwo-vm.db")
    rt.deploy(code, 0x100)
    recorded = rt.call(CallRequest(to=0x100, caller=0x1))
    rt.contexts.history(recorded.context.context_id)

Ids and timestamps are made here, in the service layer, never in the execution: ``clock``
returns an aware datetime (default: the system clock in UTC) and ``ids`` makes an id from a
prefix (default: random); tests inject both to be deterministic.
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from reference_vm.errors import VMError
import spec
from spec import versioning
from reference_vm.rules import rules as rules_of
from reference_vm.validate import validate
from rtwo_vm.runtime import stored
from rtwo_vm.runtime.damaged import entry_of
from rtwo_vm.runtime.events import EventBus, RecordWriter
from rtwo_vm.runtime.execution import CallRequest, ExecutionLifecycleService, RecordedExecution
from rtwo_vm.runtime.publisher import VMEventPublisher
from rtwo_vm.runtime.readiness import VMReadinessService
from rtwo_vm.runtime.recording import ExecutionRecorder
from rtwo_vm.runtime.records import (
    ExecutionContextManager, ExecutionResultService, InvalidInput, Page, ResourceAccountingService,
    SandboxManager, SandboxViolationService, UnknownRecord, count_at_most, keyset,
)
from rtwo_vm.runtime.registry import (
    DeterminismPolicyService, RuntimeInstructionRegistry, VirtualMachineRegistry,
)
from rtwo_vm.runtime.paging import page_key
from rtwo_vm.runtime.sinks.approval import SinkKey
from rtwo_vm.runtime.store import DamagedRecord, Store, word_text

WORD_MASK = (1 << 64) - 1
FIRST_AUTO_ADDRESS = 0x100


def random_ids(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def counting_ids(start: int = 1) -> Callable[[str], str]:
    """Deterministic ids (prefix_000001, ...) for tests and reproducible demos."""
    counter = itertools.count(start)
    return lambda prefix: f"{prefix}_{next(counter):06d}"


def utc_text(clock: Callable[[], datetime] | None) -> Callable[[], str]:
    source = clock or (lambda: datetime.now(timezone.utc))

    def now() -> str:
        moment = source()
        if moment.tzinfo is None:
            raise ValueError("the clock must return a timezone-aware datetime")
        return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")
    return now


@dataclass(frozen=True)
class DeployedContract:
    address: str
    code_hash: str
    code_size: int
    storage_slots: int
    deployed_at: str
    state_root: str
    spec_version: str

    def to_json(self) -> dict[str, Any]:
        return {"address": self.address, "codeHash": self.code_hash, "codeSize": self.code_size,
                "storageSlots": self.storage_slots, "deployedAt": self.deployed_at,
                "stateRoot": self.state_root, "specVersion": self.spec_version}


class Runtime:
    """The eleven services over one database (``:memory:`` or a file path)."""

    def __init__(self, path: str | Path = ":memory:", *,
                 clock: Callable[[], datetime] | None = None,
                 ids: Callable[[str], str] | None = None, create: bool = True,
                 deliver_on_open: bool = False, examples_dir: Path | None = None,
                 sink_key: Path | None = None, data_dir: Path | None = None):
        self.store = Store(path, create=create)
        self.clock = utc_text(clock)
        self.ids = ids or random_ids
        self.bus = EventBus()
        self.writer = RecordWriter(self.store, self.bus)
        self.vms = VirtualMachineRegistry(self.store, self.clock, self.ids, self.writer)
        self.contexts = ExecutionContextManager(self.store)
        self.sandboxes = SandboxManager(self.store)
        self.accounting = ResourceAccountingService(self.store)
        self.policies = DeterminismPolicyService(self.store, self.clock, self.writer)
        self.instructions = RuntimeInstructionRegistry()
        self.results = ExecutionResultService(self.store)
        self.violations = SandboxViolationService(self.store, self.clock, self.writer)
        self.lifecycle = ExecutionLifecycleService(
            store=self.store, writer=self.writer, clock=self.clock, ids=self.ids, vms=self.vms,
            policies=self.policies,
            recorder=ExecutionRecorder(self.store, self.writer, self.ids))
        # The key that confirms sinks lives outside every database (sinks/approval.py):
        # ``sink_key`` names its file (default: $RTWO_VM_SINK_KEY_FILE, else the user's config).
        self.events = VMEventPublisher(self.store, self.bus, self.writer, self.clock,
                                       SinkKey(sink_key))
        # ``data_dir``: where the evidence readiness reads lives (rtwo_vm/arguments/evidence.py
        # resolves it for the CLI and the server); None: no evidence file is read, and the
        # proof check says so (never a file under the working directory).
        self.readiness = VMReadinessService(self, self.clock, examples_dir, scratch=scratch_runtime,
                                            data_dir=data_dir)
        if deliver_on_open:
            # A restarted runtime resumes delivering what a previous process left undelivered.
            self.events.deliver()

    SERVICES = ("vms", "contexts", "sandboxes", "accounting", "policies", "instructions",
                "lifecycle", "results", "violations", "readiness", "events")

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    # -- contracts --------------------------------------------------------------------------

    def deploy(self, code: bytes, address: int | None = None,
               storage: Mapping[int, int] | None = None, *, validate_code: bool = True,
               spec_version: str | None = None) -> DeployedContract:
        """Deploy ``code`` (a container) at ``address`` (default: the lowest free address
        from 0x100) with initial ``storage``, under spec version ``spec_version`` (default: the
        newest a registered VM runs, vms.py): its calls run under that version. Refuses code
        invalid under the version unless ``validate_code`` is off (so that the validated stage
        can be exercised), and an address already in use."""
        if not isinstance(code, (bytes, bytearray)) or not code:
            raise InvalidInput("code must be non-empty bytes")
        code = bytes(code)
        version = spec_version or self.vms.newest_version()
        if version not in spec.names():
            raise InvalidInput(f"unknown spec version {version!r} "
                               f"(versions: {', '.join(spec.names())})")
        if validate_code:
            try:
                validate(code, rules_of(version))
            except VMError as err:
                raise InvalidInput(f"code is not a valid container: {err.code}") from None
        slots = {}
        for key, value in dict(storage or {}).items():
            if not all(type(v) is int and 0 <= v <= WORD_MASK for v in (key, value)):
                raise InvalidInput("storage keys and values must be 64-bit words")
            if value:
                slots[key] = value
        if address is not None and not (type(address) is int and 0 <= address <= WORD_MASK):
            raise InvalidInput("address must be a 64-bit word")
        at = self.clock()
        code_hash = hashlib.sha256(code).hexdigest()
        with self.writer.transaction() as tx:
            if address is None:
                used = {stored.word(r[0], "contracts", r[0], "address")
                        for r in tx.execute("SELECT address FROM contracts")}
                address = next(a for a in range(FIRST_AUTO_ADDRESS, WORD_MASK + 1)
                               if a not in used)
            addr = word_text(address)
            if tx.execute("SELECT 1 FROM contracts WHERE address = ?", (addr,)).fetchone():
                raise InvalidInput(f"address {addr} already holds a contract")
            tx.execute("INSERT INTO contracts (address, code, code_hash, deployed_at, spec_version) "
                       "VALUES (?, ?, ?, ?, ?)", (addr, code, code_hash, at, version))
            tx.executemany("INSERT INTO storage VALUES (?, ?, ?)",
                           [(addr, word_text(k), word_text(v)) for k, v in sorted(slots.items())])
            storage_json = {word_text(k): word_text(v) for k, v in sorted(slots.items())}
            change = {"deploy": addr, "code_hash": code_hash, "storage": storage_json}
            if version != versioning.base_version():   # 10.6 of 1.1: the version is in the root
                change["spec_version"] = version
            root = self.store.advance_state_root(tx, change)
            deployed = DeployedContract(addr, code_hash, len(code), len(slots), at, root, version)
            self.writer.event(tx, f"contract:{addr}", "contract.deployed", deployed.to_json(), at)
        return deployed

    def contract(self, address: int) -> dict[str, Any]:
        """A deployed contract with its storage; a row that does not decode is its damaged
        entry (a storage slot that does not, under ``damaged`` beside the others)."""
        addr = word_text(address)
        row = self.store.one("SELECT * FROM contracts WHERE address = ?", (addr,))
        if row is None:
            raise UnknownRecord(f"no contract at {addr}")
        try:
            stored.check_row("contracts", row)
            stored.hex_digest(row["code_hash"], "contracts", addr, "code_hash")
            stored.one_of(row["spec_version"], spec.names(), "contracts", addr, "spec_version")
        except DamagedRecord as err:
            return entry_of("contracts", row, err).to_json()
        storage: dict[str, str] = {}
        damaged = []
        for r in self.store.all("SELECT * FROM storage WHERE address = ? "
                                "ORDER BY length(key), key", (addr,)):
            try:
                key = stored.row_key("storage", stored.check_row("storage", r))
                stored.word(r["key"], "storage", key, "key")
                stored.word(r["value"], "storage", key, "value")
            except DamagedRecord as err:
                damaged.append(entry_of("storage", r, err).to_json())
                continue
            storage[r["key"]] = r["value"]
        doc = {"address": addr, "codeHash": row["code_hash"], "codeSize": len(row["code"]),
               "deployedAt": row["deployed_at"], "specVersion": row["spec_version"],
               "storage": storage}
        if damaged:
            doc["damaged"] = damaged[:20]
        return doc

    def contracts_page(self, *, limit: int, after: tuple | None = None,
                       count_bound: int | None = None) -> Page:
        """A page of deployed contracts in deployment order (deployed_at, address), each
        without its storage (its slot count instead: ``contract`` shows one whole); the total
        counted up to ``count_bound`` (records.count_at_most)."""
        after_sql, after_args = keyset(("deployed_at", "address"), after)
        total, exact = count_at_most(self.store, "contracts", (), count_bound)
        rows = self.store.all(
            "SELECT address, length(code) AS code_size, code_hash, deployed_at, spec_version, "
            "(SELECT count(*) "
            "FROM storage s WHERE s.address = contracts.address) AS storage_slots FROM contracts"
            + (f" WHERE {after_sql}" if after_sql else "")
            + " ORDER BY deployed_at, address LIMIT ?", (*after_args, limit + 1))
        items = []
        for r in rows[:limit]:
            addr = r["address"]
            try:
                stored.check_row("contracts", r)
                stored.word(addr, "contracts", addr, "address")
                stored.hex_digest(r["code_hash"], "contracts", addr, "code_hash")
                stored.one_of(r["spec_version"], spec.names(), "contracts", addr, "spec_version")
            except DamagedRecord as err:
                items.append(entry_of("contracts", r, err).to_json())
                continue
            items.append({"address": addr, "codeHash": r["code_hash"], "codeSize": r["code_size"],
                          "deployedAt": r["deployed_at"], "specVersion": r["spec_version"],
                          "storageSlots": r["storage_slots"]})
        last = rows[limit - 1] if len(rows) > limit else None
        return Page(items, None if last is None else page_key((last["deployed_at"],
                                                               last["address"])), total, exact)

    def contracts(self) -> list[dict[str, Any]]:
        """Every deployed contract (a damaged one as its damaged entry)."""
        out = []
        for r in self.store.all("SELECT * FROM contracts ORDER BY deployed_at, address"):
            try:
                address = stored.word(r["address"], "contracts", stored.row_key("contracts", r),
                                      "address")
            except DamagedRecord as err:
                out.append(entry_of("contracts", r, err).to_json())
                continue
            out.append(self.contract(address))
        return out

    def upgrade_check(self, address: int, to_version: str | None = None, **options: Any):
        """Whether the contract at ``address`` would give the same result under ``to_version``
        as under the version it is deployed under (read-only; rtwo_vm/runtime/upgrade.py)."""
        from rtwo_vm.runtime import upgrade
        return upgrade.check(self, address, to_version, **options)

    # -- executions -------------------------------------------------------------------------

    def context_record(self, context_id: str) -> dict[str, Any]:
        """A context with its stage history and every record of it, as JSON (``rtwo-vm
        contexts show`` and ``GET /api/v1/contexts/{id}``); UnknownRecord for an unknown id.
        A part that does not decode, or is missing, is shown as its damaged entry
        (rtwo_vm/runtime/damaged.py), the other parts as they are."""
        context = self.contexts.get_entry(context_id)
        return {"context": context.to_json(),
                "history": [e.to_json() for e in self.contexts.history_entries(context_id)],
                "sandbox": self.sandboxes.context_entry(context_id).to_json(),
                "accounting": self.accounting.context_entry(context_id).to_json(),
                "result": self.results.context_entry(context_id).to_json(),
                "violations": [v.to_json() for v in self.violations.for_context(context_id)],
                "children": self.contexts.children_ids(context_id)}

    def call(self, request: CallRequest | None = None, **fields: Any) -> RecordedExecution:
        """Run an invocation through all ten stages and record it (see CallRequest)."""
        if request is None:
            request = CallRequest(**fields)
        elif fields:
            raise TypeError("pass a CallRequest or keyword fields, not both")
        return self.lifecycle.run(request)

    @property
    def state_root(self) -> str:
        return self.store.state_root()


def scratch_runtime() -> Runtime:
    """An empty in-memory runtime on the system clock (the readiness check runs each example
    scenario in one)."""
    return Runtime(":memory:", clock=None)
