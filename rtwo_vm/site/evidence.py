"""The evidence the instruction pages show beside the spec data: theorem rows of the latest full
`rtwo-vm prove` report, the z3 models and registered theorems of the proofs package, and the
vectors of the committed conformance corpus; each only when its package is installed (what could
not be used is kept in UNAVAILABLE and REFUSED, for the pages' notes)."""

from __future__ import annotations

import importlib
import inspect

import spec


def optional(module: str):
    """An optional package's module, or None when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


UNAVAILABLE: dict[str, str] = {}   # package -> why it could not be used (for the page's note)


def versioned(module: str, function: str, version: str, *args):
    """``module.function(*args, version)`` when the function takes a version; a function
    without one (a package that predates versions: it knows the base version only) is called
    for the base version alone. None when the package is missing or cannot serve ``version``;
    the reason is kept in UNAVAILABLE."""
    try:
        found = getattr(importlib.import_module(module), function)
    except ImportError:
        return None
    except Exception as err:      # a package that fails to load: the page says so, one line
        UNAVAILABLE[module.split(".")[0]] = f"{module} could not be loaded ({type(err).__name__}: {err})"
        return None
    if "version" in inspect.signature(found).parameters:
        try:
            return found(*args, version=version)
        except ValueError as err:   # proofs.versions.UnmodelledVersion: no models of this version yet
            UNAVAILABLE[module.split(".")[0]] = f"{module}.{function}: {str(err).splitlines()[0]}"
            return None
    if version != spec.names()[0]:
        UNAVAILABLE[module.split(".")[0]] = f"{module}.{function} knows spec {spec.names()[0]} only"
        return None
    return found(*args)


REFUSED: list[str] = []   # why the last report read was not used (for the page's note)


def report_version(doc: dict) -> str | None:
    """The spec version a proofs report names, if it names one."""
    named = doc.get("spec_version") or (doc.get("scope") or {}).get("spec_version")
    return str(named) if named else None


def proof_evidence(version: str) -> dict[str, list[dict]]:
    """Theorem rows by mnemonic from the latest full `rtwo-vm prove` report of ``version``, if
    one was produced and is complete and current (proofs.report.assess); otherwise none."""
    REFUSED.clear()
    # The report `rtwo-vm prove` writes: in the data directory ($RTWO_VM_DATA, else the
    # user's; rtwo_vm/arguments/evidence.py), wherever the site is built from.
    from rtwo_vm.arguments.evidence import default_data_dir
    from rtwo_vm.runtime.tools import EvidenceFiles
    report = EvidenceFiles(default_data_dir()).proofs_report
    if not report.exists():
        return {}
    try:
        from conformance.protocol import loads_bounded
        from spec.files import read_bounded
        doc = loads_bounded(read_bounded(report, 256 << 20, "proofs report"), 64)
    except (OSError, ValueError) as err:
        REFUSED.append(f"{report} is unreadable ({err})")
        return {}
    if not isinstance(doc, dict):
        REFUSED.append(f"{report} is not a proofs report")
        return {}
    if report_version(doc) not in (None, version):
        REFUSED.append(f"{report} is of spec {report_version(doc)}, not {version}")
        return {}
    # proofs.report.assess decides whether the report is complete and current for the version
    # it names (checked above to be this page's)
    report_module = optional("proofs.report")
    judged = report_module.assess(doc) if report_module is not None else None
    usable, why = judged if judged else (False, "the proofs package is not installed")
    if not usable:
        REFUSED.append(f"{report} was refused: {why}")
        return {}
    rows = doc.get("results", [])
    by_opcode: dict[str, list[dict]] = {}
    for row in rows:
        by_opcode.setdefault(row.get("opcode") or "", []).append(row)
    return by_opcode


def model_sources(version: str) -> dict[str, str]:
    """Mnemonic -> the z3 model's source, with the word-level rules it closes over."""
    table = versioned("proofs.instructions", "models", version, 64)
    if table is None:
        return {}
    out = {}
    for mnemonic, model in table.items():
        parts = [inspect.getsource(model)]
        for value in inspect.getclosurevars(model).nonlocals.values():
            if inspect.isfunction(value) or inspect.ismethod(value):
                try:
                    parts.append(inspect.getsource(value))
                except (OSError, TypeError):
                    pass
        out[mnemonic] = "\n\n".join(inspect.cleandoc("\n" + p) if p.startswith(" ") else p
                                    for p in parts)
    return out


def registered_theorems(version: str) -> dict[str, list[tuple[str, tuple[int, ...]]]]:
    """Mnemonic -> (theorem name, widths) for every theorem the proof suite registers."""
    registered = versioned("proofs.theorems", "registry", version)
    out: dict[str, list[tuple[str, tuple[int, ...]]]] = {}
    for t in registered or ():
        out.setdefault(t.opcode, []).append((t.name, t.widths))
    return out


def corpus(version: str):
    """(corpus store module, the version's corpus folder), or None without the package."""
    store = optional("conformance.corpus.store")
    constants = optional("conformance.constants")
    if store is None or constants is None:
        return None
    return store, constants.corpus_dir(version)


def vectors_by_opcode(version: str) -> dict[str, list[dict]] | None:
    """Mnemonic -> the vectors of ``version``'s committed corpus tagged with it (in corpus
    order); None without the conformance package or a corpus of the version."""
    found = corpus(version)
    if found is None or not found[1].exists():
        return None
    store, folder = found
    out: dict[str, list[dict]] = {}
    for vector in store.load(folder):
        for mnemonic in dict.fromkeys(vector["tags"]["opcodes"]):
            out.setdefault(mnemonic, []).append(vector)
    return out
