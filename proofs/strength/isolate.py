"""A mutant's fair unit, run in a copy of the tree with the mutant written into it.

``run_unit`` copies the packages a proofs unit imports (spec, reference_vm, compiled_vm, proofs) into a
fresh temporary directory, writes the mutated module there, and runs the unit in a fresh
interpreter whose working directory and import path are the copy (the worker checks that
it imports the copy). The checkout is never written. The unit's solver calls are bounded by
the deterministic budgets; ``timeout`` (seconds of wall clock) is only a safety net: a unit
still running then is killed with its process group and reported as ``timeout``. The
directory is removed whatever happens.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from proofs.strength.mutants import ROOT, Mutant

PACKAGES = ("spec", "reference_vm", "compiled_vm", "proofs")


def run_unit(mutant: Mutant | None, opcodes: tuple[str, ...], timeout: float,
             version: str) -> dict:
    """{"rows": [...]} of the unit under spec ``version``, or {"error": ...}, or
    {"timeout": seconds}."""
    with tempfile.TemporaryDirectory(prefix="rtwo-prove-strength-") as tmp:
        tree = Path(tmp)
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        for package in PACKAGES:
            shutil.copytree(ROOT / package, tree / package, ignore=ignore, symlinks=True)
        if mutant is not None:
            (tree / mutant.path).write_text(mutant.source, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
        env["PYTHONPATH"] = str(tree)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        task = json.dumps({"tree": str(tree), "opcodes": list(opcodes), "version": version})
        proc = subprocess.Popen([sys.executable, "-m", "proofs.strength.worker"], cwd=tree, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        try:
            out, err = proc.communicate(task, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {"timeout": timeout}
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.returncode != 0:
            last = (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
            return {"error": last[:200]}
        try:
            return json.loads(out)
        except ValueError:
            return {"error": "the worker wrote no verdict"}
