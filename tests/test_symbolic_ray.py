"""``rtwo-vm symbolic --ray ADDRESS`` on a real two-node Ray cluster on this machine (issue
38): a head and a second node started with ``ray start`` on 127.0.0.1 (separate raylets),
stopped by killing their own process groups (fanout/local_cluster.py).

The queries solved ahead (every path's witness and claims, proofs/symbolic/spread.py) run as
Ray tasks; the report is the local run's byte for byte. Planted faults are real processes:
a worker that ends itself with ``os._exit`` on the run's third query, and the second node
killed while a query runs on it; in both the report is unchanged and the progress shows the
retry. Kept to the six-path dispatcher of test_symbolic_spread for CI's time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_symbolic_spread import DISPATCH, DISPATCH_PROPERTIES, _env

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "fanout_fixtures" / "planted_symbolic.py"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    pytest.importorskip("ray")
    from fanout.local_cluster import LocalCluster
    if not (Path(sys.executable).parent / "ray").exists():
        pytest.skip("no ray command beside this Python")
    with LocalCluster(tmp_path_factory.mktemp("ray"), pythonpath=str(ROOT)) as running:
        yield running


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contract")
    (folder / "dispatch.rasm").write_text(DISPATCH)
    (folder / "dispatch_properties.py").write_text(DISPATCH_PROPERTIES)
    return ("symbolic", str(folder / "dispatch.rasm"), "--max-calldata", "8", "--properties",
            str(folder / "dispatch_properties.py"), "--counterexamples", "cx", "--json")


@pytest.fixture(scope="module")
def local(contract, tmp_path_factory):
    folder = tmp_path_factory.mktemp("local")
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *contract], cwd=folder,
                          capture_output=True, text=True, timeout=300, env=_env())
    assert done.returncode == 1, done.stderr        # slot 1 changes on selector 2
    return done.stdout


def _start(args, folder, env, planted=()):
    head = [sys.executable, str(PLANTED), *planted] if planted else \
        [sys.executable, "-m", "rtwo_vm.cli"]
    return subprocess.Popen([*head, *args], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_the_ray_run_gives_the_local_report(cluster, contract, local, tmp_path):
    proc = _start([*contract, "--ray", cluster.address], tmp_path, cluster.env)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert out == local
    # the six witnesses and the two claims that are not trivially true: eight queries
    assert "ray: 6/6 queries done, 0 retried" in err and "ray: 2/2 queries done" in err, err
    assert "spread: 8 queries solved ahead on Ray" in err, err


def test_a_worker_that_dies_on_its_third_query_changes_nothing(cluster, contract, local, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _start([*contract, "--ray", cluster.address], tmp_path, cluster.env,
                  planted=("--exit-at", "3", str(marks)))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert out == local
    # eight queries, one of them started twice: the third start died, its query ran again
    assert len(list(marks.iterdir())) == 9
    assert "ray: 6/6 queries done, 1 retried" in err, err


def test_a_node_killed_mid_run_changes_nothing(cluster, contract, local, tmp_path):
    cluster.add_node({"RTWO_TEST_NODE": "second"})
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = _start([*contract, "--ray", cluster.address], tmp_path, cluster.env,
                  planted=("--hold-on-node", str(marks)))
    try:
        deadline = time.monotonic() + 120
        while not (marks / "holding").exists():      # a query is running on the second node
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.2)
        cluster.kill(1)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, err
    assert out == local
    assert any("retried" in line and " 0 retried" not in line
               for line in err.splitlines() if line.startswith("ray: ")), err
