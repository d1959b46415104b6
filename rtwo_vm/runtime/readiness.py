"""VM Readiness Service: readiness derived from checks run on demand, with their evidence.

Nothing here is stored or assumed: each call runs every check again and the overall
readiness follows from their statuses by the rule of sandbox.toml enumerations.readiness
(``not_ready`` if any check failed, ``partial`` if none failed but some could not run,
``ready`` otherwise). Tools that are not installed give ``not_available``, never a guess.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

import spec
from spec import files
from rtwo_vm.runtime import tools
from rtwo_vm.runtime.catalog import catalog, problems, runtime_spec, runtime_version
from rtwo_vm.runtime.execution import CallRequest, RecordedExecution
from rtwo_vm.runtime.publisher import VMEventPublisher
from rtwo_vm.runtime.records import ExecutionContextManager
from rtwo_vm.runtime.registry import DeterminismPolicyService, self_check
from rtwo_vm.runtime.vms import VirtualMachineRegistry, default_pairs
from rtwo_vm.runtime.store import Store


class Services(Protocol):
    """The runtime as the checks use it. rtwo_vm.runtime.runtime.Runtime is one; it composes
    this service, so this module never imports it: a runtime to check is handed in, and so is
    the way to open a scratch one for the example scenarios."""

    store: Store
    contexts: ExecutionContextManager
    events: VMEventPublisher
    policies: DeterminismPolicyService
    vms: VirtualMachineRegistry

    def deploy(self, code: bytes, address: int | None = None, storage: Mapping[int, int] | None = None,
               *, validate_code: bool = True, spec_version: str | None = None) -> object: ...

    def call(self, request: CallRequest | None = None, **fields: Any) -> RecordedExecution: ...

    def close(self) -> None: ...


def default_examples() -> Path:
    """The example scenarios the package brings (the checkout's examples/, or the copy a
    wheel installs under <prefix>/share/rtwo-vm/examples): rtwo_vm.examples decides."""
    from rtwo_vm.examples import bundled_directory
    return bundled_directory()


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    evidence: str
    seconds: float

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "evidence": self.evidence,
                "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class ReadinessReport:
    readiness: str
    checked_at: str
    checks: tuple[Check, ...]

    def to_json(self) -> dict:
        return {"readiness": self.readiness, "checkedAt": self.checked_at,
                "checks": [c.to_json() for c in self.checks]}


def overall(statuses: list[str]) -> str:
    if "failed" in statuses:
        return "not_ready"
    if "not_available" in statuses:
        return "partial"
    return "ready"


def per_version(check: Callable[[str], tuple[str, str]]) -> tuple[str, str]:
    """A check run for every spec version: the worst status (failed, then not_available,
    then passed) and each version's evidence."""
    found = [(name, *check(name)) for name in spec.names()]
    statuses = {status for _, status, _ in found}
    status = next((s for s in ("failed", "not_available") if s in statuses), "passed")
    return status, "; ".join(f"{name}: {evidence}" for name, _, evidence in found)


def evidence_from(data_dir: Path | None, proofs_report: Path | None = None) -> dict[str, str | None]:
    """Where readiness reads its evidence, as the CLI's ``readiness --json`` and the API's
    readiness answer say it (``evidenceFrom``): the data directory and the proofs report
    (``proofs_report``: one the user named), absolute; None: no data directory given, and no
    report named, so nothing is read."""
    report = (Path(proofs_report) if proofs_report is not None
              else None if data_dir is None else tools.EvidenceFiles(data_dir).proofs_report)
    return {"dataDir": None if data_dir is None else str(Path(data_dir).absolute()),
            "proofsReport": None if report is None else str(report.absolute())}


class VMReadinessService:
    """The checks of chapter 10.7 over ``runtime`` (None: no database opened); ``scratch``
    opens an empty in-memory runtime for each example scenario (None: the examples check is
    not available). ``proofs_report`` names the proof report to read (default: the data
    directory's, ``data_dir``/proofs-report.json, as ``rtwo-vm prove`` writes it; without a
    data directory none is read, and the check says so: never a file of the working
    directory)."""

    def __init__(self, runtime: Services | None, clock: Callable[[], str],
                 examples_dir: Path | None = None, conformance_budget: float | None = 60.0,
                 proofs_report: Path | None = None, scratch: Callable[[], Services] | None = None,
                 data_dir: Path | None = None):
        self._runtime = runtime
        self._scratch = scratch
        self._clock = clock
        self.examples_dir = examples_dir or default_examples()
        self.conformance_budget = conformance_budget
        self.proofs_report = proofs_report
        self.data_dir = data_dir

    @property
    def proofs_report_path(self) -> Path | None:
        """The proof report the proof_results check reads (None: no data directory given)."""
        if self.proofs_report is not None:
            return Path(self.proofs_report)
        if self.data_dir is not None:
            return tools.EvidenceFiles(self.data_dir).proofs_report
        return None

    def evidence_from(self) -> dict[str, str | None]:
        """Where the checks read their evidence (module function evidence_from)."""
        return evidence_from(self.data_dir, self.proofs_report)

    @property
    def check_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self._checks())

    def _checks(self) -> list[tuple[str, Callable[[], tuple[str, str]]]]:
        return [("spec_data", self._spec_data), ("instruction_coverage", self._coverage),
                ("lifecycle", self._lifecycle), ("examples", self._examples),
                ("smt_semantics", self._smt), ("proof_results", self._proofs),
                ("conformance_vectors", self._vectors), ("conformance_results", self._replay),
                ("database", self._database)]

    def run(self, only: Sequence[str] | None = None, skip: Sequence[str] = ()) -> ReadinessReport:
        unknown = set(only or ()) | set(skip)
        unknown -= set(self.check_names)
        if unknown:
            raise ValueError(f"unknown readiness check {sorted(unknown)[0]!r}; checks: "
                             f"{', '.join(self.check_names)}")
        checked_at = self._clock()
        results = []
        for name, check in self._checks():
            if (only and name not in only) or name in skip:
                continue
            started = time.monotonic()
            try:
                status, evidence = check()
            except Exception as err:  # noqa: BLE001 - a crashing check is a failed check
                status, evidence = "failed", f"the check raised {type(err).__name__}: {err}"
            results.append(Check(name, status, evidence, time.monotonic() - started))
        return ReadinessReport(overall([c.status for c in results]), checked_at, tuple(results))

    # -- the checks --------------------------------------------------------------------------

    def _spec_data(self) -> tuple[str, str]:
        table = runtime_spec()
        try:
            from spec.loader import validate_against_schemas
            found = validate_against_schemas()
        except ImportError:
            return "not_available", "jsonschema is not installed"
        found += problems(catalog())
        if found:
            return "failed", f"{len(found)} problems: {found[0]}"
        return "passed", (f"{len(spec.DATA_FILES)} data files of spec {table.version} match their "
                          f"schemas; sandbox.toml cross-references hold")

    def _coverage(self) -> tuple[str, str]:
        """The self-check of every VM of the database that is not retired; with none (or no
        database), of every VM the registry registers by default (vms.default_pairs)."""
        vms = []
        if self._runtime is not None:
            vms = [(f"{vm.vm_id} ({vm.execution_mode}, spec {vm.runtime_compatibility[0]})",
                    vm.execution_mode, vm.runtime_compatibility[0])
                   for vm in self._runtime.vms.list() if vm.status != "retired"]
        if not vms:
            vms = [(f"{mode}, spec {version}", mode, version)
                   for version, mode in default_pairs()]
        checks = [(label, *self_check(mode, version)) for label, mode, version in vms]
        ok = bool(checks) and all(passed for _, passed, _ in checks)
        return ("passed" if ok else "failed"), "; ".join(f"{label}: {evidence}"
                                                         for label, _, evidence in checks)

    def _lifecycle(self) -> tuple[str, str]:
        cat = catalog()
        initial, final = cat.roles["initial"], cat.roles["final"]
        reachable, frontier = {initial}, [initial]
        while frontier:
            for nxt in cat.transitions.get(frontier.pop(), ()):
                if nxt not in reachable:
                    reachable.add(nxt)
                    frontier.append(nxt)
        dead_ends = [s for s in cat.stages if s != final and not cat.transitions.get(s)]
        unreached = [s for s in cat.stages if s not in reachable]
        orders = {s["order"] for s in runtime_spec().lifecycle["stage"]}
        found = []
        if unreached:
            found.append(f"unreachable: {', '.join(unreached)}")
        if dead_ends:
            found.append(f"dead ends: {', '.join(dead_ends)}")
        if len(orders) != 10:
            found.append(f"{len(orders)} stage orders, not 10")
        if found:
            return "failed", "; ".join(found)
        moves = sum(len(v) for v in cat.transitions.values())
        return "passed", (f"{len(orders)} stages ({len(cat.stages)} names), {moves} transitions; "
                          f"every stage reachable from {initial} and leads to {final}")

    def _examples(self) -> tuple[str, str]:
        folder = self.examples_dir
        if not folder.is_dir() or not list(folder.glob("*.toml")):
            return "not_available", f"no example scenarios in {folder}"
        if self._scratch is None:
            return "not_available", "no runtime to run the example scenarios in"
        from rtwo_vm.examples import iter_requests
        statuses: Counter[str] = Counter()
        mismatched, calls = [], 0
        for path in sorted(folder.glob("*.toml")):
            runtime, deployed_for = None, None
            gen = iter_requests(path, runtime_version())
            try:
                request = next(gen)
                while True:
                    if runtime is None or deployed_for != request.scenario:
                        if runtime is not None:
                            runtime.close()
                        runtime, deployed_for = self._scratch(), request.scenario
                        for address, contract in request.state.contracts.items():
                            runtime.deploy(contract.code, address, dict(contract.storage),
                                          spec_version=request.version)
                    direct = request.run()
                    recorded = runtime.call(CallRequest(
                        to=request.message.to, caller=request.message.caller,
                        call_data=request.message.call_data, block_time=request.context.block_time,
                        random_seed=request.context.random_seed, limits=request.limits,
                        policy_id=runtime.policies.create(
                            time_access=request.policy.time_access,
                            randomness=request.policy.randomness,
                            external_call=request.policy.external_call,
                            allowed_operations=request.policy.allowed_operations,
                            forbidden_operations=request.policy.forbidden_operations).policy_id,
                        storage_access=request.policy.storage_access))
                    calls += 1
                    statuses[direct.status] += 1
                    if recorded.result.digest != direct.digest():
                        mismatched.append(f"{request.scenario}#{request.index}")
                    request = gen.send(direct)
            except StopIteration:
                pass
            finally:
                if runtime is not None:
                    runtime.close()
        summary = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
        if mismatched or statuses.get("internal"):
            return "failed", (f"{calls} example calls ({summary}); recorded results differ from "
                              f"the interpreter's for {', '.join(mismatched) or 'none'}")
        return "passed", (f"{calls} example calls ({summary}) ran through all ten stages; every "
                          f"recorded digest equals the interpreter's")

    def _smt(self) -> tuple[str, str]:
        return per_version(self._smt_of)

    def _smt_of(self, version: str) -> tuple[str, str]:
        probe = tools.smt_models(version)
        if not probe.available:
            return "not_available", probe.evidence
        total = len(spec.load(version).instructions)
        ok = len(probe.value) == total and not probe.details.get("broken")
        return ("passed" if ok else "failed"), probe.evidence

    def _proofs(self) -> tuple[str, str]:
        """The proof report counts only when complete and current (proofs.report.assess):
        a partial run's or a stale report is refused, whatever its statuses say."""
        default = None if self.data_dir is None else tools.EvidenceFiles(self.data_dir).proofs_report
        probe = tools.proof_report(self.proofs_report, default)
        path = self.proofs_report_path
        if path is None or not probe.available:
            return "not_available", probe.evidence

        from proofs.report import assess, undecided, verdict
        from conformance.protocol import loads_bounded
        try:   # a regular file, its size counted while reading (never st_size)
            doc = loads_bounded(files.read_bounded(path, tools.PROOFS_REPORT_LIMIT, "proofs report"), 64)
        except ValueError as err:
            return "failed", f"{path} is not a proofs report: {str(err)[:160]}"
        usable, why = assess(doc)
        if not usable:
            return "failed", f"{path} refused: {why}"
        rows = doc["results"]
        if verdict(rows) == "passed":
            return "passed", probe.evidence + "; complete and current"
        open_rows = undecided(rows)
        hint = (f"; not proved: {open_rows[0]['theorem']} {open_rows[0]['opcode']} "
                f"w{open_rows[0]['width']} ({len(open_rows)} undecided)" if open_rows else "")
        return "failed", probe.evidence + hint

    def _vectors(self) -> tuple[str, str]:
        return per_version(self._vectors_of)

    def _vectors_of(self, version: str) -> tuple[str, str]:
        probe = tools.conformance_vectors(version)
        if not probe.available:
            return "not_available", probe.evidence
        covered = sum(1 for c in probe.value.values() if c)
        ok = covered == len(probe.value) and not probe.details.get("unreadable")
        return ("passed" if ok else "failed"), probe.evidence

    def _replay(self) -> tuple[str, str]:
        return per_version(self._replay_of)

    def _replay_of(self, version: str) -> tuple[str, str]:
        vectors = tools.conformance_vectors(version)
        if not vectors.available:
            return "not_available", vectors.evidence
        budget = (None if self.conformance_budget is None
                  else self.conformance_budget / len(spec.names()))
        probe = tools.replay_vectors(vectors.details["vectors"], version, budget)
        if not probe.available:
            return "not_available", probe.evidence
        counts = probe.value
        ok = counts["agreed"] == counts["total"]
        return ("passed" if ok else "failed"), probe.evidence

    def _database(self) -> tuple[str, str]:
        runtime = self._runtime
        if runtime is None:
            return "not_available", "no database opened (pass --db)"
        store = runtime.store
        integrity = store.single("PRAGMA integrity_check")[0]
        incomplete = runtime.contexts.incomplete()
        contexts = runtime.contexts.count()
        roots = store.single("SELECT count(*) FROM contexts WHERE parent_context_id IS NULL")[0]
        events = store.single("SELECT count(*) FROM outbox")[0]
        pending = runtime.events.undelivered_counts()
        rows = runtime.events.sink_rows()
        broken = [r.sink for r in rows if getattr(r.sink, "damaged", False) is True]
        unconfirmed = [r.name for r in rows if not r.confirmed and r.sink not in broken]
        evidence = (f"{store.path}: schema {store.schema_version}, integrity {integrity}; "
                    f"{contexts} contexts ({roots} entry), {len(incomplete)} incomplete; "
                    f"{events} events" + "".join(f", {n} undelivered to {s}"
                                                 for s, n in pending.items()))
        if unconfirmed:
            evidence += (f"; {len(unconfirmed)} sink(s) not confirmed on this machine "
                         f"({', '.join(unconfirmed[:3])}: rtwo-vm events sink-confirm NAME)")
        if broken:
            first = broken[0]
            evidence += (f"; {len(broken)} damaged sink row{'s' if len(broken) > 1 else ''} "
                         f"({getattr(first, 'table', '')} {getattr(first, 'id', '')}: "
                         f"{getattr(first, 'reason', '')})")
        ok = integrity == "ok" and not incomplete and not broken
        return ("passed" if ok else "failed"), evidence
