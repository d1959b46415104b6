"""The Virtual Machine Registry (spec chapter 10.7): one VM per spec version and execution mode.

A VM runs one spec version (its ``runtime_compatibility``) on the engine of its execution mode
(engines.py). It becomes ``active`` only when its self-check passes. With no VM registered,
the first call registers one VM for every version and mode whose engine runs that version,
and activates each whose self-check passes, in one transaction (concurrent first calls make
one set). A contract is deployed under a version and each of its calls runs on an active VM
of that version: the one named, else the first active one of the mode asked for, else of the
first mode in the order of ``sandbox.toml`` enumerations.execution_mode.
"""

from __future__ import annotations

from typing import Callable

import spec
from rtwo_vm.runtime import engines
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.engines import self_check
from rtwo_vm.runtime.events import RecordWriter
from rtwo_vm.runtime.models import ModelError, RTWOVirtualMachine, row_of
from rtwo_vm.runtime.records import InvalidInput, _RecordService
from rtwo_vm.runtime.store import Store

REFERENCE_VM_NAME = "rtwo-reference"
NO_ACTIVE_VM = "activate one (rtwo-vm vm activate ID) or register one (rtwo-vm vm register)"


def engine_version() -> str:
    try:
        from importlib.metadata import version
        return version("rtwo-vm")
    except Exception:  # noqa: BLE001 - running from a source tree without metadata
        return "0+source"


def vm_name(mode: str, version: str) -> str:
    """The name of the VM registered by default for ``mode`` and ``version``:
    rtwo-reference-1.0, rtwo-compiled-1.1, ..."""
    return f"rtwo-{mode.split('_')[0]}-{version}"


def modes() -> tuple[str, ...]:
    """The execution modes in the order of sandbox.toml (the first is the default)."""
    return catalog().values("execution_mode")


def default_pairs() -> list[tuple[str, str]]:
    """(version, mode) of every VM registered by default: every version each mode's engine
    runs, oldest version first."""
    return [(version, mode) for version in spec.names() for mode in modes()
            if version in engines.versions(mode)]


class VirtualMachineRegistry(_RecordService):
    """VMs: registered, made active by a passing self-check, retired."""

    MODEL, TABLE, KEY = RTWOVirtualMachine, "vms", "vm_id"
    NOUN = "VM"
    PAGE_KEY = ("t.created_at", "t.vm_id")
    JSON_FIELDS = ("runtime_compatibility",)

    def __init__(self, store: Store, clock: Callable[[], str], ids: Callable[[str], str],
                 writer: RecordWriter):
        super().__init__(store)
        self._clock, self._ids, self._writer = clock, ids, writer

    def _new(self, name: str, execution_mode: str, version: str | None,
             spec_version: str | None) -> RTWOVirtualMachine:
        spec_version = spec_version or spec.latest()
        if spec_version not in spec.names():
            raise InvalidInput(f"unknown spec version {spec_version!r} "
                               f"(versions: {', '.join(spec.names())})")
        try:
            return RTWOVirtualMachine(
                vm_id=self._ids("vm"), vm_name=name, vm_version=version or engine_version(),
                runtime_compatibility=(spec_version,), execution_mode=execution_mode,
                status="registered", created_at=self._clock())
        except ModelError as err:
            raise InvalidInput(str(err)) from None

    def register(self, name: str, execution_mode: str = "reference_interpreter",
                 version: str | None = None, spec_version: str | None = None
                 ) -> RTWOVirtualMachine:
        """A VM running ``spec_version`` (default: the newest) on ``execution_mode``'s engine;
        ``version`` is the engine's version (default: the installed package's)."""
        vm = self._new(name, execution_mode, version, spec_version)
        with self._writer.transaction() as tx:
            self.store.insert(tx, "vms", row_of(vm))
            self._writer.event(tx, f"vm:{vm.vm_id}", "vm.registered", vm.to_json(), vm.created_at)
        return vm

    def activate(self, vm_id: str) -> tuple[RTWOVirtualMachine, str]:
        """Run the self-check; on success the VM becomes active. Returns (vm, evidence)."""
        vm = self.get(vm_id)
        if vm.status == "retired":
            raise InvalidInput(f"VM {vm_id} is retired")
        ok, evidence = self_check(vm.execution_mode, vm.runtime_compatibility[0])
        if not ok:
            raise InvalidInput(f"VM {vm_id} failed its self-check: {evidence}")
        return self._set_status(vm, "active", evidence), evidence

    def retire(self, vm_id: str) -> RTWOVirtualMachine:
        vm = self.get(vm_id)
        return vm if vm.status == "retired" else self._set_status(vm, "retired", "retired")

    def _set_status(self, vm: RTWOVirtualMachine, status: str, evidence: str) -> RTWOVirtualMachine:
        at = self._clock()
        with self._writer.transaction() as tx:
            tx.execute("UPDATE vms SET status = ? WHERE vm_id = ?", (status, vm.vm_id))
            self._writer.event(tx, f"vm:{vm.vm_id}", "vm.status_changed",
                               {"vmId": vm.vm_id, "from": vm.status, "to": status,
                                "evidence": evidence}, at)
        return self.get(vm.vm_id)

    def _active(self) -> list[RTWOVirtualMachine]:
        """Every active VM in registration order (a damaged one is refused: it is used)."""
        rows = self.store.all("SELECT * FROM vms WHERE status = 'active' "
                              "ORDER BY created_at, vm_id")
        return [self._from(r) for r in rows]

    def newest_version(self) -> str:
        """The version a new deployment takes when none is given: the newest version a VM
        not retired runs; with no VM registered, the newest the default VMs would run."""
        rows = self.store.all("SELECT * FROM vms WHERE status != 'retired'")
        versions = {v for r in rows for v in self._from(r).runtime_compatibility}
        if not rows and self.count() == 0:
            versions = {version for version, _ in default_pairs()}
        known = [name for name in spec.names() if name in versions]
        return known[-1] if known else spec.latest()

    def for_execution(self, vm_id: str | None, version: str,
                      mode: str | None = None) -> RTWOVirtualMachine:
        """The VM a new context of a contract deployed under ``version`` runs on: the one
        named, which must be active and run that version (and ``mode``, if given); else the
        first active VM of the version in ``mode`` (default: the first mode that has one).
        With no VM registered at all, the default VMs are registered first."""
        if vm_id is not None:
            vm = self.get(vm_id)
            if vm.status != "active":
                raise InvalidInput(f"VM {vm_id} is {vm.status}, not active")
            if version not in vm.runtime_compatibility:
                raise InvalidInput(f"VM {vm_id} runs spec {', '.join(vm.runtime_compatibility)}, "
                                   f"the contract was deployed under {version}")
            if mode is not None and vm.execution_mode != mode:
                raise InvalidInput(f"VM {vm_id} runs in mode {vm.execution_mode}, not {mode}")
            return vm
        if mode is not None and mode not in modes():
            raise InvalidInput(f"unknown execution mode {mode!r} (modes: {', '.join(modes())})")
        if self.count() == 0:
            self._register_defaults()
        fitting = [vm for vm in self._active() if version in vm.runtime_compatibility
                   and (mode is None or vm.execution_mode == mode)]
        if not fitting:
            what = f"spec {version}" + (f" in mode {mode}" if mode else "")
            raise InvalidInput(f"no active VM runs {what}: {NO_ACTIVE_VM}")
        order = modes()
        return min(fitting, key=lambda vm: order.index(vm.execution_mode)
                   if vm.execution_mode in order else len(order))

    def _register_defaults(self) -> None:
        """Register a VM for every (version, mode) of :func:`default_pairs` and activate each
        whose self-check passes, in one transaction, unless another writer registered VMs
        first (checked under the write lock)."""
        planned = []
        for version, mode in default_pairs():
            ok, evidence = self_check(mode, version)
            planned.append((self._new(vm_name(mode, version), mode, None, version), ok, evidence))
        with self._writer.transaction() as tx:
            if tx.execute("SELECT count(*) FROM vms").fetchone()[0]:
                return
            for vm, ok, evidence in planned:
                self.store.insert(tx, "vms", row_of(vm))
                self._writer.event(tx, f"vm:{vm.vm_id}", "vm.registered", vm.to_json(),
                                   vm.created_at)
                if ok:
                    tx.execute("UPDATE vms SET status = 'active' WHERE vm_id = ?", (vm.vm_id,))
                    self._writer.event(tx, f"vm:{vm.vm_id}", "vm.status_changed",
                                       {"vmId": vm.vm_id, "from": "registered", "to": "active",
                                        "evidence": evidence}, self._clock())
