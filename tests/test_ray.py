"""The tests that start a local Ray cluster (the fuzzer's backend, conformance/fuzz/backend.py,
which ``vectors strength --backend ray`` uses too), in one module: pytest-xdist runs a module
on one worker (``--dist loadscope``), so two clusters never start side by side. Each test
checks its command's own behaviour; the helpers are those of its command's test module."""

from __future__ import annotations

import json
import subprocess

import pytest

from test_fuzz import cli, state
from test_fuzz_crash import CRASH_LINE, load, planted
from test_strength import CLI as STRENGTH

pytest.importorskip("ray")


def test_campaign_on_a_local_ray_cluster(tmp_path):
    local, on_ray = tmp_path / "local", tmp_path / "ray"
    assert cli("fuzz", "--runs", "256", "--seed", "8", "--out", str(local)).returncode == 0
    done = cli("fuzz", "--runs", "256", "--seed", "8", "--out", str(on_ray), "--ray", "local", "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    a, b = state(local), state(on_ray)
    for key in ("pool", "cells", "arcs", "outcomes", "executions"):
        assert a[key] == b[key], key
    assert sorted(int(w) for w in b["workers"]) == [0, 1]


def test_a_crash_on_a_ray_actor_is_saved_and_reported(tmp_path):
    """tests/test_fuzz_crash.py's crash, planted on a Ray actor."""
    out = tmp_path / "ray"
    done = planted("--crash-at", "40", "fuzz", "--runs", "64", "--seed", "2", "--ray", "local", "--workers", "2",
                   "--out", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"internal error at request 40 of seed 2: {CRASH_LINE}" in lines[0], lines
    [error] = load(out / "report.json")["internal_errors"]
    assert error["index"] == 40 and "planted_crash.py" in error["traceback"]
    assert load(out / "state.json")["skip"] == [40]


@pytest.mark.slow
def test_the_ray_backend_gives_the_verdicts_of_the_local_one(tmp_path):
    """Strength on Ray (a real local cluster on 127.0.0.1): the same curated verdicts as the
    local processes give in tests/test_strength.py's
    test_curated_prescreen_on_a_filtered_corpus_leaves_the_checkout_alone."""
    out = tmp_path / "strength.json"
    proc = subprocess.run([*STRENGTH, "--curated-only", "--no-confirm", "--backend", "ray", "--workers", "2",
                           "--filter", "arithmetic/SUB/*", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    by_id = {m["id"]: m for m in json.loads(out.read_text())["mutants"]}
    assert by_id["curated:sub_operands_swapped"]["status"] == "killed"
    assert by_id["curated:log_topics_reversed"]["status"] == "survived"
