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

import pytest

ROOT = Path(__file__).resolve().parents[1]

PLANT_SET_ORDER = (
    "import proofs.lifecycle as lifecycle\n"
    "lifecycle.sorted = lambda items: list(items)   # the moves in the set's own order\n")


# The planted bug's theorems: the lifecycle graph's (proofs/lifecycle.py), which alone iterate
# its moves; the planted test prints only their digests (every theorem's took a minute).
LIFECYCLE = ("lifecycle_terminates_without_revisiting", "lifecycle_commits_only_after_accounting",
             "lifecycle_error_stages_roll_back")


def _digests(seed: int, tmp_path: Path, prelude: str = "", names: tuple[str, ...] | None = None,
             strict: bool = False) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["PYTHONHASHSEED"] = str(seed)
    code = prelude + f"from proofs.digests import main\nmain({['--strict'] if strict else []})\n"
    if names is not None:     # digests.main() with the run's options narrowed to these theorems
        code = prelude + ("from proofs import digests, runner, versions\n"
                          f"options = runner.Options(version=versions.newest(), agreement=False, names={names!r})\n"
                          "print('\\n'.join(digests.lines(options)))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=900, check=True)
    (tmp_path / f"digests-{seed}.txt").write_text(out.stdout)
    return out.stdout.splitlines()


@pytest.mark.slow
def test_every_script_is_the_same_under_two_hash_seeds(tmp_path):
    """The first run also reads every script with Bitwuzla's strict reader (when installed:
    the test extra installs it), so every theorem query of the suite is standard SMT-LIB."""
    strict = importlib.util.find_spec("bitwuzla") is not None
    first, second = _digests(1, tmp_path, strict=strict), _digests(2, tmp_path)
    assert len(first) > 200          # every theorem task (a group is one line)
    assert any(line.startswith("lifecycle_error_stages_roll_back/-") for line in first)
    assert first == second


def test_a_query_built_in_set_order_is_noticed(tmp_path):
    first = _digests(1, tmp_path, PLANT_SET_ORDER, LIFECYCLE)
    second = _digests(2, tmp_path, PLANT_SET_ORDER, LIFECYCLE)
    assert len(first) == len(second) == len(LIFECYCLE)     # one line per theorem task
    differ = {a.split(" ")[0] for a, b in zip(first, second) if a != b}
    assert "lifecycle_terminates_without_revisiting/-" in differ
    assert _digests(1, tmp_path, names=LIFECYCLE) == _digests(2, tmp_path, names=LIFECYCLE)   # unplanted: same
