"""The tests that start a local Ray cluster (fanout/: the fuzzer's backend, ``vectors strength
--backend ray``, ``prove --strength --ray`` and ``prove --ray`` on a two-node cluster), in one module: pytest-xdist runs a module
on one worker (``--dist loadscope``), so two clusters never start side by side. Each test
checks its command's own behaviour; the helpers are those of its command's test module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BASE_VERSION as V

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
                           "--mutant", "curated:sub_operands_swapped", "--mutant", "curated:log_topics_reversed",
                           "--filter", "arithmetic/SUB/*", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    by_id = {m["id"]: m for m in json.loads(out.read_text())["mutants"]}
    assert sorted(by_id) == ["curated:log_topics_reversed", "curated:sub_operands_swapped"]
    assert by_id["curated:sub_operands_swapped"]["status"] == "killed"
    assert by_id["curated:log_topics_reversed"]["status"] == "survived"


# prove --strength on Ray (was in test_proofs_strength.py)
ON_RAY = """
import json, sys
from proofs.strength import mutants, run
broken = mutants.planted("proofs/instructions/control.py", "models.NOP",
                         "def NOP(s, imm):\\n        return [running(s)]",
                         "def NOP(s, imm):\\n        return [running(s, undefined_name)]", "nop_crash")
listed = mutants.equivalent()
wanted = next(iter(listed))
(equivalent,) = [m for m in mutants.generated(wanted.split(":", 1)[0]) if m.id == wanted]
verdicts = run.run([broken, equivalent], sys.argv[1], timeout=900, baseline=False, ray="local",
                   jobs=1).verdicts
print(json.dumps([[v.status, v.how, v.detail] for v in verdicts] + [listed[wanted]]))
"""


def test_on_ray_a_mutant_and_a_listed_one_get_the_local_verdicts():
    """prove --strength --ray (fanout/tasks.py on a private local cluster): the NOP crash
    mutant is killed by its unit run on a Ray worker, as locally (test above), and a listed
    equivalent mutant is not run and keeps its reason. The driver is a process of its own:
    a Ray driver leaves gRPC threads behind, and a test worker that forks after it (the
    strength tests fork their mutants) could fork a held lock."""
    done = subprocess.run([sys.executable, "-c", ON_RAY, V], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, env={**os.environ,
                                                       "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    (status, how, _), (status2, _, detail), reason = json.loads(done.stdout.splitlines()[-1])
    assert status == "killed" and how in ("failing", "crash")
    assert status2 == "equivalent" and detail == reason


# ------------------------------------------------------------------------------------------
# From test_fanout_ray.py:
# ``prove --ray`` on a real two-node Ray cluster on this machine (issue 38): a head and a
# second node, each started with ``ray start`` on 127.0.0.1 (separate raylets, their own
# temporary folder, ports and HOME), stopped by killing their own process groups (never
# ``ray stop``, which would stop every Ray process on the machine).
#
# Planted faults are real processes: a worker that ends itself with ``os._exit`` on the run's
# third task, and the second node killed (its whole process group, raylet included) while a
# task runs on it. In both the verdicts equal those of a local run and the progress shows the
# retry and the nodes. Kept to three theorem tasks (ADD at 64 bits) for CI's time.

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "fanout_fixtures" / "planted_worker.py"
PROVE = ("prove", "--opcode", "ADD", "--width", "64", "--no-agreement", "--no-table",
         "--no-cache")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head node running (fanout/local_cluster.py); every node it starts is killed at the
    end (its own process groups only)."""
    pytest.importorskip("ray")
    from fanout.local_cluster import LocalCluster
    if not (Path(sys.executable).parent / "ray").exists():
        pytest.skip("no ray command beside this Python")
    with LocalCluster(tmp_path_factory.mktemp("ray"), pythonpath=str(ROOT)) as running:
        yield running


def _verdicts(report: Path) -> list[tuple]:
    return sorted((r["theorem"], r["opcode"], r["width"], r["status"])
                  for r in json.loads(report.read_text())["results"])


@pytest.fixture(scope="module")
def local_verdicts(tmp_path_factory):
    report = tmp_path_factory.mktemp("local") / "local.json"
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *PROVE, "--report", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = _verdicts(report)
    # ADD's seven theorems at 64 bits, every one proved (the local run, the reference here).
    assert len(verdicts) == 7 and {v[3] for v in verdicts} == {"proved"}
    return verdicts


def _planted(*args, env, timeout=300):
    return subprocess.Popen([sys.executable, str(PLANTED), *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_worker_that_dies_on_its_third_task_changes_no_verdict(cluster, local_verdicts, tmp_path):
    address, env = cluster.address, cluster.env
    marks = tmp_path / "marks"
    marks.mkdir()
    report = tmp_path / "ray.json"
    proc = _planted("--exit-at", "3", str(marks), *PROVE, "--ray", address, "--report", str(report),
                    env=env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert _verdicts(report) == local_verdicts
    # Three tasks, one of them started twice: the third start died, its task ran again.
    assert sorted(p.name for p in marks.iterdir()) == ["task-1", "task-2", "task-3", "task-4"]
    assert "ray: 3/3 tasks done, 1 retried" in err, err


def test_a_node_killed_mid_run_changes_no_verdict(cluster, local_verdicts, tmp_path):
    address, env = cluster.address, cluster.env
    cluster.add_node({"RTWO_TEST_NODE": "second"})
    marks = tmp_path / "marks"
    marks.mkdir()
    # --report -: stdout is the report alone, though Ray's driver prints the lost node there
    proc = _planted("--hold-on-node", str(marks), *PROVE, "--ray", address, "--report", "-",
                    env=env)
    try:
        deadline = time.monotonic() + 120
        while not (marks / "holding").exists():      # a task is running on the second node
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        cluster.kill(1)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    report = tmp_path / "ray.json"
    report.write_text(out)                    # one JSON document, nothing else
    assert _verdicts(report) == local_verdicts
    last = [line for line in err.splitlines() if line.startswith("ray: 3/3")][-1]
    assert "retried" in last and " 0 retried" not in last, err


def test_the_verdict_cache_stays_with_the_driver_and_serves_every_node(cluster, local_verdicts,
                                                                       tmp_path):
    """prove --ray --cache: the driver carries its verified entries to the workers and seals
    what they solved with its own key (proofs/cache.CarriedCache). No worker opens the folder
    (no lock file is ever made: only a process that solves through the folder locks it), the
    verdicts are the local ones, and a second run takes its answers from the cache."""
    cluster.add_node({"RTWO_TEST_NODE": "cache"})
    folder, key = tmp_path / "cache", tmp_path / "key" / "proofs.key"
    args = [a for a in PROVE if a != "--no-cache"] + ["--cache", str(folder), "--cache-key",
                                                       str(key), "--ray", cluster.address]

    def prove(report: Path) -> dict:
        done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--report", str(report)],
                              cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert _verdicts(report) == local_verdicts
        return json.loads(report.read_text())["summary"]["cache"]

    first = prove(tmp_path / "first.json")
    entries = list((folder / "v1").glob("??/*.json"))
    assert first["solved"] > 0 and len(entries) > 0
    assert list((folder / "v1" / "locks").iterdir()) == []
    second = prove(tmp_path / "second.json")
    assert second["hits"] >= len(entries) and second["solved"] < first["solved"]
    assert second["refused"] == 0
