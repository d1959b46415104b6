"""One mutant's prescreen in a fresh interpreter: ``python -m conformance.strength.worker``
reads a task (JSON on stdin: the mutant, the corpus directory, the vector filters, whether
every killer is wanted, the time limit) and writes its verdict (JSON on stdout). This is how a
remote backend (Ray) runs a mutant: the task needs no state of the parent."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence


def task(mutant, corpus_dir: Path, version: str, filters=(), exhaustive: bool = False,
         timeout: float = 120.0) -> dict:
    return {"mutant": mutant.to_json(), "corpus": str(corpus_dir), "version": version, "filters": list(filters),
            "exhaustive": exhaustive, "timeout": timeout}


def run_subprocess(doc: dict) -> dict:
    """Run one task in a fresh interpreter (what a Ray task calls)."""
    import subprocess

    def killed(how: str, detail: str) -> dict:
        return {"mutant": doc["mutant"]["id"], "status": "killed", "how": how, "killers": [],
                "detail": detail[:200], "seconds": 0.0, "shortest": None}
    try:
        proc = subprocess.run([sys.executable, "-m", "conformance.strength.worker"], input=json.dumps(doc),
                              capture_output=True, text=True, timeout=doc["timeout"] + 60)
    except subprocess.TimeoutExpired:   # as on the local backend: the wall-clock safety net
        return killed("timeout", f"still running after {doc['timeout']:g} s (wall-clock safety net)")
    if proc.returncode != 0:
        return killed("crash", (proc.stderr.strip().splitlines() or ["worker failed"])[-1])
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return killed("crash", "the worker wrote no verdict")


def main() -> int:
    doc = json.loads(sys.stdin.read())
    from conformance.corpus import store
    from conformance.corpus.selection import select
    from conformance.strength import run
    from conformance.strength.mutants import Mutant
    mutant = Mutant.from_json(doc["mutant"])
    vectors: Sequence[Mapping[str, Any]] = store.load(Path(doc["corpus"]))
    if doc["filters"]:
        vectors = select(vectors, doc["filters"])
    version = doc["version"]
    run.set_plan(run.Plan([mutant], vectors, version, run.candidates(version),
                          frozenset([mutant.id]) if doc["exhaustive"] else frozenset(), doc["timeout"],
                          run.reference_traces(vectors, version)))
    print(json.dumps(run.prescreen(0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
