"""Run-time detection of the proof and conformance tools (``proofs``, ``conformance``).

Both packages are optional for the runtime: when one is absent, or present but without the
interface looked for, the probe says so in its evidence and reports nothing rather than a
guess. Nothing here is cached, so a tool installed later is seen by the next check.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import spec
from spec import files


@dataclass(frozen=True)
class Probe:
    """What a tool offers: ``value`` is None when it is not available (``evidence`` says why)."""

    available: bool
    evidence: str
    value: Any = None
    details: Mapping[str, Any] = field(default_factory=dict)


def _import(name: str) -> tuple[Any, str | None]:
    try:
        return importlib.import_module(name), None
    except ImportError as err:
        return None, f"{name} cannot be imported ({err})"
    except Exception as err:  # noqa: BLE001 - a half-written tool must not break readiness
        return None, f"{name} fails to import ({type(err).__name__}: {err})"


# z3 is not safe to use from two threads at once, and a server runs the instruction registry's
# probe (below, in a background thread) and upgrade checks (upgrade.py, in request threads)
# side by side: every use of z3 in a runtime process holds this lock.
Z3_LOCK = threading.Lock()


def smt_models(version: str, bits: int = 64) -> Probe:
    with Z3_LOCK:
        return _smt_models(version, bits)


def _smt_models(version: str, bits: int) -> Probe:
    """Mnemonics of spec ``version`` with an SMT transition model: ``proofs.instructions.MODULES``,
    each module's ``models(width)`` (the interface of the proofs package)."""
    instructions, why = _import("proofs.instructions")
    words, why_words = _import("proofs.words")
    if instructions is None or words is None:
        return Probe(False, why or why_words or "proofs not installed")
    modules = getattr(instructions, "MODULES", None)
    width = getattr(words, "width", None)
    if not isinstance(modules, Mapping) or not callable(width):
        return Probe(False, "proofs.instructions has no MODULES mapping or proofs.words no width()")
    try:
        machine = width(bits, version)
    except ValueError as err:   # proofs.versions.UnmodelledVersion: no models of this version
        return Probe(False, str(err).splitlines()[0][:200] if str(err) else "no models")
    covered: set[str] = set()
    broken: dict[str, str] = {}
    for type_name, module in modules.items():
        try:
            covered.update(module.models(machine))
        except Exception as err:  # noqa: BLE001 - count what works, show what does not
            broken[type_name] = f"{type(err).__name__}: {err}"[:200]
    table = spec.load(version)
    known = covered & set(table.by_mnemonic)
    evidence = f"proofs models {len(known)}/{len(table.instructions)} instructions of spec {version}"
    if broken:
        evidence += f"; {len(broken)} instruction types fail to build: {', '.join(sorted(broken))}"
    return Probe(True, evidence, frozenset(known), {"broken": broken})


def vectors_dir(version: str) -> Path | None:
    """The folder of spec ``version``'s committed corpus (conformance.constants.corpus_dir)."""
    constants, _ = _import("conformance.constants")
    corpus_dir = getattr(constants, "corpus_dir", None) if constants is not None else None
    return corpus_dir(version) if callable(corpus_dir) else None


def conformance_vectors(version: str) -> Probe:
    """Spec ``version``'s committed corpus (read through conformance.corpus.store, manifest
    first) and how many vectors name each mnemonic of the version in ``tags.opcodes``."""
    corpus, _ = _import("conformance.corpus.store")
    folder = vectors_dir(version)
    if corpus is None or folder is None:
        return Probe(False, "conformance not installed")
    try:
        vectors = corpus.load(folder)
    except FileNotFoundError:
        return Probe(False, f"no corpus at {folder} (run: rtwo-vm vectors fill)")
    except (OSError, ValueError, KeyError) as err:
        return Probe(True, f"corpus at {folder} unreadable: {err}"[:200], {}, {"vectors": []})
    counts = {m: 0 for m in spec.load(version).by_mnemonic}
    for vector in vectors:
        for mnemonic in set(vector.get("tags", {}).get("opcodes") or ()):
            if mnemonic in counts:
                counts[mnemonic] += 1
    covered = sum(1 for c in counts.values() if c)
    evidence = (f"{len(vectors)} vectors in {folder.parent.name}/{folder.name}/ tag "
                f"{covered}/{len(counts)} instructions of spec {version}")
    return Probe(True, evidence, counts, {"vectors": vectors})


def replay_vectors(vectors: list[dict], version: str,
                   budget_seconds: float | None = None) -> Probe:
    """Run spec ``version``'s vectors through the reference interpreter with
    ``conformance.corpus.vector.run_reference`` and compare with their expected results."""
    vector_mod, why = _import("conformance.corpus.vector")
    run = getattr(vector_mod, "run_reference", None) if vector_mod else None
    if not callable(run):
        return Probe(False, why or "conformance.corpus.vector has no run_reference()")
    started = time.monotonic()
    agreed, disagreed, errors = 0, [], []
    for vector in vectors:
        if budget_seconds is not None and time.monotonic() - started > budget_seconds:
            break
        try:
            got = run(vector["input"], version).to_json()
        except Exception as err:  # noqa: BLE001 - a vector the runner cannot read is a finding
            errors.append(f"{vector.get('id')}: {type(err).__name__}: {err}"[:200])
            continue
        if got == vector["expected"].get("result"):
            agreed += 1
        else:
            disagreed.append(str(vector.get("id")))
    checked = agreed + len(disagreed) + len(errors)
    evidence = (f"{agreed}/{checked} vectors agree with the reference interpreter"
                + (f" (stopped after {budget_seconds:g} s; {len(vectors) - checked} unchecked)"
                   if checked < len(vectors) else ""))
    if disagreed:
        evidence += f"; disagree: {', '.join(disagreed[:5])}"
    if errors:
        evidence += f"; {len(errors)} unreadable: {errors[0]}"
    return Probe(True, evidence, {"checked": checked, "total": len(vectors), "agreed": agreed},
                 {"disagreed": disagreed, "errors": errors})


# Theorem statuses that count as proved; any other status fails the proof check (and is shown).
PROVED = frozenset({"proved", "agrees"})  # proofs.runner.PROVED and AGREES
# The largest proofs report read (through spec.files: a cap counted while reading).
PROOFS_REPORT_LIMIT = 256 << 20


@dataclass(frozen=True)
class EvidenceFiles:
    """The evidence files of one data directory (rtwo_vm/arguments/evidence.py chooses it; it
    never depends on the working directory): what `rtwo-vm prove` and `rtwo-vm conformance
    run` write and readiness reads."""

    root: Path

    @property
    def proofs_report(self) -> Path:
        """The full run's report, the one readiness reads."""
        return self.root / "proofs-report.json"

    @property
    def partial_proofs_report(self) -> Path:
        return self.root / "proofs-partial-report.json"

    def version_proofs_report(self, version: str) -> Path:
        """`rtwo-vm check`'s report of an older spec version."""
        return self.root / f"proofs-report-{version}.json"

    @property
    def conformance(self) -> Path:
        """`rtwo-vm conformance run`'s reports: one folder per spec version."""
        return self.root / "conformance"

    def conformance_report(self, version: str) -> Path:
        """`rtwo-vm conformance run`'s report of spec ``version`` (beside its junit.xml,
        report.html and bundles/)."""
        return self.conformance / version / "report.json"


def proof_report(path: Path | None = None, default: Path | None = None) -> Probe:
    """The proof suite's latest report (``proofs.report.document``: rows under "results",
    each with a "status"), as ``rtwo-vm prove`` writes it.

    ``path`` names the report file given by the user; when it is not given, ``default`` (the
    data directory's, EvidenceFiles.proofs_report) is read. With neither nothing is read (never
    a file under the working directory). ``value`` maps each status to its count."""
    report: Any = None
    explicit = path is not None
    chosen = path if path is not None else default
    if chosen is None:
        return Probe(False, "no data directory given, so no proof report read (rtwo-vm "
                            "readiness and rtwo-vm serve take --data-dir, else $RTWO_VM_DATA)")
    path = Path(chosen)
    source = str(path)
    if path.is_file():
        try:
            report = files.read_json(path, PROOFS_REPORT_LIMIT, 64, "proofs report")
        except (OSError, ValueError) as err:
            return Probe(False, f"{path} is unreadable ({err})")
    elif explicit:
        return Probe(False, f"no proof report at {path}")
    else:
        return Probe(False, f"no proof report at {path} (`rtwo-vm prove` writes it there)")
    theorems = report.get("results") if isinstance(report, Mapping) else None
    if not isinstance(theorems, list) or not theorems:
        return Probe(False, f"{source} lists no results (`rtwo-vm prove` writes them)")
    counts: dict[str, int] = {}
    for row in theorems:
        status = str(row.get("status")) if isinstance(row, Mapping) else "malformed"
        counts[status] = counts.get(status, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return Probe(True, f"{len(theorems)} results in {source}: {summary}", counts)
