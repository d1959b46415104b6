"""A replay bundle comes from someone else (issue 20): replay never runs the command, the
directory or an environment variable it records, refuses a malformed or oversized bundle in
one line with exit 2 (never an internal error, never a hang), and starts one process per
pass it replays, with at most the run's largest --repeat plus the main pass recorded.

The bundles are real files in tmp_path, written by a real run; the adapters real processes.
Every hostile command here would create a marker file if it ran: each test checks it did not.
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.run import determinism, inputs, replay as rp
from conformance.report.bundles import write_bundles
from conformance.run.outcomes import PRECEDING_KEPT
from conformance.constants import corpus_dir
from conformance.run.process import Settings
from conformance.corpus.selection import select
from conformance.run.suite import Options, reference_command, run_suite
from rtwo_vm.cli import main

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"
TARGET = "hash/SHA256/length_1"


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """A bundle as a real run writes it: a wrong result, with a determinism pass."""
    from conformance.corpus import store
    wrong = shlex.join([sys.executable, str(FAULTY), "--fault", "wrong-result", "--target", TARGET])
    result = run_suite([wrong], select(store.load(corpus_dir("1.0")), [TARGET]), [],
                       Options(Settings("1.0"), repeat=1))
    (path,) = write_bundles(result, tmp_path_factory.mktemp("bundles")).values()
    return json.loads(path.read_text())


def marker_adapter(marker: Path) -> str:
    """An adapter that leaves ``marker`` behind when it starts, then serves the reference."""
    return shlex.join(["sh", "-c", f": > {shlex.quote(str(marker))}; exec \"$0\" -m conformance.adapter",
                       sys.executable])


def save(tmp_path: Path, doc, name: str = "bundle.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def refused(capsys, *argv: str) -> str:
    """Run the CLI in this process; it must refuse with exit 2 and one line on stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert out == "" and err.count("\n") == 1 and "internal error" not in err, err
    return err


def test_what_a_run_writes_is_a_valid_bundle_and_the_schemas_are_valid(written):
    import jsonschema
    assert inputs.bundle_problem(written) is None
    jsonschema.Draft202012Validator.check_schema(inputs._BUNDLE)
    jsonschema.Draft202012Validator.check_schema(inputs._report_schema())
    pass_schema = inputs._BUNDLE["$defs"]["pass"]["properties"]
    assert pass_schema["preceded_by"]["maxItems"] == PRECEDING_KEPT
    assert set(inputs._BUNDLE["$defs"]["environment"]["properties"]) == set(determinism.ENV_KEYS)
    assert written["replay"].endswith("--impl " + shlex.quote(written["implementation"]["command"]))


def test_a_hostile_command_is_never_run(written, tmp_path, capsys):
    marker = tmp_path / "ran"
    bundle = copy.deepcopy(written)
    bundle["implementation"].update(
        command=f"sh -c 'id > {marker}; exec python3 -m conformance.adapter'", cwd=str(tmp_path))
    path = save(tmp_path, bundle)
    err = refused(capsys, "conformance", "replay", str(path))
    assert "replay runs only the adapter you name" in err and "--impl" in err
    assert shlex.quote(bundle["implementation"]["command"]) in err   # to read and copy
    assert not marker.exists()
    # With the user's adapter the vector replays (the reference passes it); the bundle's
    # command still does not run.
    assert main(["conformance", "replay", str(path), "--impl", reference_command()]) == 0
    assert not marker.exists()


def test_a_relative_adapter_of_the_senders_directory_is_never_run(written, tmp_path, capsys, monkeypatch):
    sender = tmp_path / "sender"
    sender.mkdir()
    marker = tmp_path / "ran"
    evil = sender / "evil-adapter.sh"
    evil.write_text(f"#!/bin/sh\n: > {marker}\nexec {sys.executable} -m conformance.adapter\n")
    evil.chmod(0o755)
    bundle = copy.deepcopy(written)
    bundle["implementation"].update(command="./evil-adapter.sh", cwd=str(sender))
    path = save(tmp_path, bundle)
    monkeypatch.chdir(sender)            # even from the sender's own directory
    refused(capsys, "conformance", "replay", str(path))
    assert not marker.exists()
    # The control: the script does leave its marker when the user names it.
    assert main(["conformance", "replay", str(path), "--impl", "./evil-adapter.sh"]) == 0
    assert marker.exists()


def test_an_escape_sequence_in_the_recorded_command_is_shown_escaped(written, tmp_path, capsys):
    bundle = copy.deepcopy(written)
    bundle["implementation"]["command"] = "python3 adapter.py\x1b]0;owned\x07\nrm -rf ~"
    err = refused(capsys, "conformance", "replay", str(save(tmp_path, bundle)))
    assert "\x1b" not in err and "\x07" not in err and "\\x1b" in err


@pytest.mark.parametrize("name, value", [
    ("BASH_ENV", "$(id > {marker})"), ("PATH", "{evil}"), ("LD_PRELOAD", "{evil}/x.so"),
    ("PYTHONPATH", "{evil}"), ("PYTHONSTARTUP", "{evil}/x.py"),
])
def test_only_the_determinism_variables_may_be_recorded(written, tmp_path, capsys, name, value):
    marker = tmp_path / "ran"
    bundle = copy.deepcopy(written)
    bundle["passes"][0]["environment"][name] = value.format(marker=marker, evil=tmp_path)
    err = refused(capsys, "conformance", "replay", str(save(tmp_path, bundle)), "--impl", marker_adapter(marker))
    assert name in err and "not a replay bundle" in err
    assert not marker.exists()


def test_a_recorded_path_never_reaches_the_adapter_even_past_the_reader(written, tmp_path, monkeypatch):
    """Defence in depth: a pass record holding PATH (which read_bundle refuses) still sets only
    the four determinism variables, so the user's adapter command is found on the user's PATH."""
    good, evil = tmp_path / "good", tmp_path / "evil"
    marker = tmp_path / "ran"
    for folder, body in ((good, f"exec {sys.executable} -m conformance.adapter"),
                         (evil, f": > {marker}; exec {sys.executable} -m conformance.adapter")):
        folder.mkdir()
        (folder / "rtwo-test-adapter").write_text(f"#!/bin/sh\n{body}\n")
        (folder / "rtwo-test-adapter").chmod(0o755)
    monkeypatch.setenv("PATH", f"{good}{os.pathsep}{os.environ['PATH']}")
    record = dict(written["passes"][0], environment={"TZ": "UTC0", "PATH": str(evil), "BASH_ENV": str(marker)})
    plan = rp.Plan(written["vector"], "rtwo-test-adapter", written["spec_version"], [record])
    result, _ = rp.replay(plan, {}, Settings("1.0"))
    assert result.ok and not marker.exists()


def test_the_marker_adapter_leaves_its_marker_when_it_runs(written, tmp_path):
    """The control for every test below that asserts the marker is absent."""
    marker = tmp_path / "ran"
    assert main(["conformance", "replay", str(save(tmp_path, written)), "--impl", marker_adapter(marker)]) == 0
    assert marker.exists()


def _set(doc: dict, path: str, value) -> dict:
    doc = copy.deepcopy(doc)
    *parents, last = path.split("/")
    holder = doc
    for key in parents:
        holder = holder[int(key)] if isinstance(holder, list) else holder[key]
    if value is KeyError:
        del holder[last]
    elif isinstance(holder, list):
        holder[int(last)] = value
    else:
        holder[last] = value
    return doc


MALFORMED = [
    ("passes/0/environment/TZ", 5), ("passes/0/environment/TZ", ["UTC0"]),
    ("passes/0/environment/TZ", "UTC0\x00x"), ("passes/0/environment/LANG", "C=UTF-8"),
    ("passes/0/environment/TZ", "UTC0\n"), ("passes/0/environment/LC_ALL", "/tmp/evil-locale"),
    ("passes/0/environment/TZ", "X" * 201),
    ("passes/0/environment", []), ("passes/0/environment", "TZ=UTC0"),
    ("passes/0/environment/PYTHONHASHSEED", "4294967296"), ("passes/0/environment/PYTHONHASHSEED", "-1"),
    ("passes/0/environment/PYTHONHASHSEED", "0x10"), ("passes/0/environment/PYTHONHASHSEED", 1),
    ("passes/0/preceded_by", "hash/SHA256/length_0"), ("passes/0/preceded_by", [1]),
    ("passes/0/preceded_by", {"a": 1}), ("passes/0/preceded_by", ["hash/x"] * (PRECEDING_KEPT + 1)),
    ("passes/0/preceded_count", 5.0), ("passes/0/preceded_count", -1),
    ("passes/1/order_seed", "1"), ("passes/1/order_seed", -1), ("passes/1/order_seed", 1.5),
    ("passes/1/order_seed", 1 << 64), ("passes/1/order_seed", [1]), ("passes/1/order_seed", 1.0),
    ("passes/0/name", "main\x1b[2J"), ("passes", {"0": {}}), ("passes/0", "main pass"),
    ("vector/expected", KeyError), ("vector/input", KeyError), ("vector/id", "../../etc/passwd"),
    ("vector/id", 7), ("vector", []), ("implementation/command", ["sh", "-c", "id"]),
    ("implementation/cwd", 5), ("implementation", "sh -c id"), ("implementation/command", KeyError),
    ("bundle", "rtwo-conformance replay bundle/9"), ("surprise", 1),
]


@pytest.mark.parametrize("where, value", MALFORMED, ids=[f"{w}={str(v)[:20]!r}" for w, v in MALFORMED])
def test_a_malformed_bundle_is_refused_in_one_line(written, tmp_path, capsys, where, value):
    marker = tmp_path / "ran"
    path = save(tmp_path, _set(written, where, value))
    err = refused(capsys, "conformance", "replay", str(path), "--impl", marker_adapter(marker))
    assert "not a replay bundle" in err
    assert not marker.exists()


@pytest.mark.parametrize("text", ['{"bundle": "rtwo-conformance replay bundle/2", "passes": [{"order_seed": 1e999}]}',
                                  "[1, 2]", "not json", "[" * 100 + "]" * 100, '{"bundle": NaN}', ""])
def test_a_file_that_is_no_bundle_at_all_is_refused(tmp_path, capsys, text):
    err = refused(capsys, "conformance", "replay", str(save(tmp_path, text)), "--impl", reference_command())
    assert str(tmp_path / "bundle.json") in err


def test_a_bundle_records_at_most_the_largest_repeat_plus_the_main_pass(written, tmp_path, capsys):
    marker = tmp_path / "ran"
    record = written["passes"][1]
    for count in (inputs.MAX_PASSES + 1, 201):
        bundle = dict(written, passes=[written["passes"][0]] + [dict(record, differs=True)] * (count - 1))
        refused(capsys, "conformance", "replay", str(save(tmp_path, bundle)), "--impl", marker_adapter(marker))
        assert not marker.exists()
    refused(capsys, "conformance", "replay", TARGET, "--repeat", str(inputs.MAX_REPEAT + 1))
    assert main(["conformance", "run", "--repeat", str(inputs.MAX_REPEAT + 1)]) == 2


def test_one_process_per_replayed_pass(written, tmp_path):
    """The main pass and the passes that differed run, each in its own process (one more
    for the probe); the others do not."""
    starts = tmp_path / "starts"
    counting = shlex.join(["sh", "-c", f"echo x >> {shlex.quote(str(starts))}; exec \"$0\" -m conformance.adapter",
                           sys.executable])
    main_pass, other = written["passes"]
    bundle = dict(written, passes=[main_pass] + [dict(other, differs=True)] * 3 + [dict(other, differs=False)] * 5)
    plan = rp.plan_bundle(inputs.read_bundle(save(tmp_path, bundle)), counting)
    assert len(plan.passes) == 4
    rp.replay(plan, {}, Settings("1.0"))
    assert len(starts.read_text().split()) == 1 + 4


def _no_hang(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The CLI in a child process, so that a read that blocks fails the test (timeout) rather
    than hanging it."""
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_a_fifo_or_a_device_as_bundle_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "bundle.json"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        done = _no_hang("conformance", "replay", str(path), "--impl", reference_command())
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1


def test_an_oversized_bundle_is_refused(written, tmp_path, capsys):
    big = json.dumps(written)[:-1] + ', "reason": "' + "x" * inputs.BUNDLE_LIMIT + '"}'
    err = refused(capsys, "conformance", "replay", str(save(tmp_path, big)), "--impl", reference_command())
    assert f"larger than the {inputs.BUNDLE_LIMIT} bytes" in err


def test_replay_keep_logs_never_follows_a_link(written, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "logs").symlink_to(elsewhere)
    err = refused(capsys, "conformance", "replay", str(save(tmp_path, written)), "--impl", reference_command(),
                  "--keep-logs", str(tmp_path / "logs"))
    assert "symbolic link" in err and list(elsewhere.iterdir()) == []


def test_a_bundle_of_an_unknown_version_is_refused_in_one_line(written, tmp_path, capsys):
    """A bundle names the version its session ran: one naming a version spec/versions.toml does
    not define is refused before any adapter starts."""
    marker = tmp_path / "ran"
    bundle = dict(copy.deepcopy(written), spec_version="9.9")
    err = refused(capsys, "conformance", "replay", str(save(tmp_path, bundle)), "--impl", marker_adapter(marker))
    assert "9.9" in err and not marker.exists()
