"""One replay bundle per failing vector (conformance.run.replay reads them back): rendered in
triage order, bounded, named safely and uniquely, written atomically; the bundles of an earlier
run are removed only once they are recognised as bundles, never through a link."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from collections import Counter
from pathlib import Path
from typing import Any

from conformance.report.counts import ranked
from conformance.report.scenarios import failing as failing_scenarios
from conformance.run.compare import bounded
from conformance.run.inputs import BUNDLE_FORMAT, BUNDLE_FORMATS, BUNDLE_LIMIT, MAX_DEPTH, SCENARIO_BUNDLE_FORMAT
from conformance.run.suite import SuiteResult, slug

MAX_BUNDLES = 50                 # replay bundles written per run (--max-bundles)
BUNDLE_BYTES = 512 << 10         # bytes of one bundle


def bundle_prefixes(runs) -> list[str]:
    """A file-name prefix per implementation run: its name, numbered when two runs share one
    (two builds of the same VM), so that their bundles never overwrite each other."""
    names = [slug(run.name) for run in runs]
    seen: Counter = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(name if names.count(name) == 1 else f"{name}-{seen[name]}")
    return out


def bundle_name(prefix: str, vector_id: str) -> str:
    """A file name unique and safe on every file system for any id: a slug of the prefix and
    the id, and a short hash of both (so ``a/b`` and ``a__b`` never share a file)."""
    digest = hashlib.sha256(f"{prefix}\0{vector_id}".encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug(prefix)[:40]}__{slug(vector_id)[:100]}-{digest}.json"


def _shrunk(doc: dict[str, Any], limit: int) -> str:
    """The bundle as JSON, within ``limit`` bytes: the response and pass messages are cut
    first (with a marker), the vector is always kept whole (replay needs it)."""
    text = json.dumps(doc, indent=1, sort_keys=True, default=str)
    if len(text) <= limit:
        return text
    doc = dict(doc, truncated=f"bundle cut to {limit} bytes: the response, failures and pass messages shortened")
    doc["response"] = bounded(doc["response"], 4000)
    doc["failures"] = doc["failures"][:20]
    doc["passes"] = [dict(p, message=bounded(p.get("message"), 2000)) for p in doc["passes"]]
    return json.dumps(doc, indent=1, sort_keys=True, default=str)


def bundle_texts(result: SuiteResult, directory: Path, max_bundles: int = MAX_BUNDLES,
                 max_bytes: int = BUNDLE_BYTES) -> dict[tuple[str, str], tuple[Path, str]]:
    """The bundles of a run, rendered, not written: (command, id) -> (path in ``directory``,
    JSON text), one per failing vector and implementation, in triage order, at most
    ``max_bundles`` in all: the vector, the response, the failures, the adapter command and
    its working directory (information, never run by a replay), and every pass the vector
    ran in with its environment and the vectors the same process ran before it."""
    out: dict[tuple[str, str], tuple[Path, str]] = {}
    for run, prefix in zip(result.runs, bundle_prefixes(result.runs)):
        # The failing scenarios first (a few, each telling): the scenario sent and its divergence.
        for o in failing_scenarios(run.scenarios):
            if len(out) >= max_bundles:
                return out
            if "unavailable" in o.categories:
                continue
            path = directory.resolve() / bundle_name(prefix, o.vector_id)
            doc = {
                "bundle": SCENARIO_BUNDLE_FORMAT, "spec_version": result.version,
                "implementation": {"command": run.command, "cwd": run.cwd, "name": run.name, "version": run.version},
                "scenario": result.scenarios[o.vector_id], "response": o.reply,
                "failures": [m.to_json() for m in o.failures], "reason": o.reason[:4000],
                "known_failure": o.known or None,
                "divergence": o.scenario.to_json() if o.scenario is not None else None,
                "passes": [p.to_json() for p in o.passes],
                "replay": f"rtwo-vm conformance replay {shlex.quote(str(path))} --impl {shlex.quote(run.command)}",
            }
            out[(run.command, o.vector_id)] = (path, _shrunk(doc, max_bytes) + "\n")
        for o in ranked(run, ("fail", "xfail")):
            # A vector never sent (the adapter would not start) has nothing to replay.
            if "unavailable" in o.categories:
                continue
            if len(out) >= max_bundles:
                return out
            # The folder resolved, the name not: a link planted under the name is not followed.
            path = directory.resolve() / bundle_name(prefix, o.vector_id)
            doc = {
                "bundle": BUNDLE_FORMAT,
                "spec_version": result.version,
                "implementation": {"command": run.command, "cwd": run.cwd, "name": run.name,
                                   "version": run.version},
                "vector": result.vectors[o.vector_id],
                "response": o.reply,
                "failures": [m.to_json() for m in o.failures],
                "reason": o.reason[:4000],
                "known_failure": o.known or None,
                "divergence": o.divergence.to_json() if o.divergence else None,
                "passes": [p.to_json() for p in o.passes],
                "replay": f"rtwo-vm conformance replay {shlex.quote(str(path))} --impl {shlex.quote(run.command)}",
            }
            out[(run.command, o.vector_id)] = (path, _shrunk(doc, max_bytes) + "\n")
    return out


def write_bundles(result: SuiteResult, directory: Path, max_bundles: int = MAX_BUNDLES,
                  max_bytes: int = BUNDLE_BYTES, remove_stale: bool = True) -> dict[tuple[str, str], Path]:
    """Write :func:`bundle_texts` into ``directory`` (created; never a link), each file
    atomically, then (``remove_stale``) remove the bundles of an earlier run."""
    from spec.files import atomic_write, output_dir
    output_dir(directory, "bundle folder")
    texts = bundle_texts(result, directory, max_bundles, max_bytes)
    for path, text in texts.values():
        atomic_write(path, text)
    written = {key: path for key, (path, _) in texts.items()}
    if remove_stale:
        remove_stale_bundles(directory, set(written.values()))
    return written


_BUNDLE_NAME = re.compile(r"[A-Za-z0-9_.+=-]{1,150}-[0-9a-f]{12}\.json")


def remove_stale_bundles(directory: Path, keep: set[Path]) -> list[Path]:
    """Remove the bundles of an earlier run from ``directory`` (they would mislead): only
    regular files (never a link, never what a link names) with a bundle's file name whose
    content is a bundle. Anything else is left alone. Returns what was removed."""
    from spec.files import FileRefused, read_json
    removed = []
    keep_names = {p.name for p in keep}
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name in keep_names or not _BUNDLE_NAME.fullmatch(entry.name):
                continue
            try:
                if not stat.S_ISREG(os.lstat(entry.path).st_mode):
                    continue
                doc = read_json(entry.path, BUNDLE_LIMIT, MAX_DEPTH, "replay bundle")
                if isinstance(doc, dict) and doc.get("bundle") in (*BUNDLE_FORMATS, SCENARIO_BUNDLE_FORMAT):
                    os.unlink(entry.path)          # unlink never follows a link
                    removed.append(Path(entry.path))
            except (OSError, FileRefused):
                continue
    return removed
