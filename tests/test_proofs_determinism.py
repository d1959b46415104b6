"""Every proof query's SMT-LIB text is the same under any PYTHONHASHSEED.

Two processes with different hash seeds print the digest of every theorem task's scripts
(its claims' script and its antecedents' script, proofs/digests.py) and must print the same
lines. The planted bug: the lifecycle graph's moves iterated in set order (as they were),
which the same comparison must notice.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLANT_SET_ORDER = (
    "import proofs.lifecycle as lifecycle\n"
    "lifecycle.sorted = lambda items: list(items)   # the moves in the set's own order\n")


def _digests(seed: int, tmp_path: Path, prelude: str = "", strict: bool = False) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["PYTHONHASHSEED"] = str(seed)
    code = prelude + f"from proofs.digests import main\nmain({['--strict'] if strict else []})\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=900, check=True)
    (tmp_path / f"digests-{seed}.txt").write_text(out.stdout)
    return out.stdout.splitlines()


def test_every_script_is_the_same_under_two_hash_seeds(tmp_path):
    """The first run also reads every script with Bitwuzla's strict reader (when installed:
    the test extra installs it), so every theorem query of the suite is standard SMT-LIB."""
    strict = importlib.util.find_spec("bitwuzla") is not None
    first, second = _digests(1, tmp_path, strict=strict), _digests(2, tmp_path)
    assert len(first) > 200          # every theorem task (a group is one line)
    assert any(line.startswith("lifecycle_error_stages_roll_back/-") for line in first)
    assert first == second


def test_a_query_built_in_set_order_is_noticed(tmp_path):
    first = _digests(1, tmp_path, PLANT_SET_ORDER)
    second = _digests(2, tmp_path, PLANT_SET_ORDER)
    differ = {a.split(" ")[0] for a, b in zip(first, second) if a != b}
    assert "lifecycle_terminates_without_revisiting/-" in differ
