"""``prove --ray`` on a real two-node Ray cluster on this machine (issue 38): a head and a
second node, each started with ``ray start`` on 127.0.0.1 (separate raylets, their own
temporary folder, ports and HOME), stopped by killing their own process groups (never
``ray stop``, which would stop every Ray process on the machine).

Planted faults are real processes: a worker that ends itself with ``os._exit`` on the run's
third task, and the second node killed (its whole process group, raylet included) while a
task runs on it. In both the verdicts equal those of a local run and the progress shows the
retry and the nodes. Kept to three theorem tasks (ADD at 64 bits) for CI's time."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

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
    report = tmp_path / "ray.json"
    proc = _planted("--hold-on-node", str(marks), *PROVE, "--ray", address, "--report", str(report),
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
    assert _verdicts(report) == local_verdicts
    last = [line for line in err.splitlines() if line.startswith("ray: 3/3")][-1]
    assert "retried" in last and " 0 retried" not in last, err
