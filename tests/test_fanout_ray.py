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
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "fanout_fixtures" / "planted_worker.py"
RAY = Path(sys.executable).parent / "ray"
PROVE = ("prove", "--opcode", "ADD", "--width", "64", "--no-agreement", "--no-table",
         "--no-cache")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(RAY), "start", "--block", "--node-ip-address=127.0.0.1",
                             "--num-cpus=1", "--disable-usage-stats", *args], env=env,
                            start_new_session=True, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(address, env, start_second): a head node running, and a function that starts the
    second node (and returns its process); every node started is killed at the end."""
    pytest.importorskip("ray")
    if not RAY.exists():
        pytest.skip("no ray command beside this Python")
    tmp = tmp_path_factory.mktemp("ray")
    short = Path(f"/tmp/rt{os.getpid()}")      # Ray's socket paths must stay short
    short.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(tmp), "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    gcs, *head_ports = _free_ports(6)
    base = 20000 + (os.getpid() % 200) * 100
    nodes = [_start(["--head", f"--port={gcs}", "--include-dashboard=false", f"--temp-dir={short}",
                     f"--node-manager-port={head_ports[0]}", f"--object-manager-port={head_ports[1]}",
                     f"--dashboard-agent-listen-port={head_ports[2]}",
                     f"--metrics-export-port={head_ports[3]}",
                     f"--runtime-env-agent-port={head_ports[4]}",
                     f"--min-worker-port={base}", f"--max-worker-port={base + 49}"],
                    env, tmp / "head.log")]

    def start_second() -> subprocess.Popen:
        ports = _free_ports(5)
        node = _start([f"--address=127.0.0.1:{gcs}", f"--node-manager-port={ports[0]}",
                       f"--object-manager-port={ports[1]}",
                       f"--dashboard-agent-listen-port={ports[2]}",
                       f"--metrics-export-port={ports[3]}", f"--runtime-env-agent-port={ports[4]}",
                       f"--min-worker-port={base + 50}", f"--max-worker-port={base + 99}"],
                      {**env, "RTWO_TEST_NODE": "second"}, tmp / "second.log")
        nodes.append(node)
        return node
    try:
        deadline = time.monotonic() + 90
        while True:
            assert nodes[0].poll() is None, (tmp / "head.log").read_text()[-2000:]
            try:
                socket.create_connection(("127.0.0.1", gcs), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the head did not start"
                time.sleep(0.3)
        yield f"127.0.0.1:{gcs}", env, start_second, tmp
    finally:
        for node in nodes:
            _kill(node)
        subprocess.run(["rm", "-rf", str(short)], check=False)


def _alive_nodes(address: str, env: dict) -> int:
    probe = ("import ray, logging; ray.init(address=%r, log_to_driver=False, logging_level=logging.ERROR);"
             "print(sum(n['Alive'] for n in ray.nodes()))" % address)
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                          timeout=120)
    return int(done.stdout.strip().splitlines()[-1])


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
    address, env, _, _ = cluster
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
    address, env, start_second, _ = cluster
    node = start_second()
    deadline = time.monotonic() + 90
    while _alive_nodes(address, env) < 2:
        assert time.monotonic() < deadline, "the second node did not join"
        time.sleep(1)
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
        _kill(node)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out + err
    assert _verdicts(report) == local_verdicts
    last = [line for line in err.splitlines() if line.startswith("ray: 3/3")][-1]
    assert "retried" in last and " 0 retried" not in last, err
