"""A campaign directory is data, not code: --resume runs only what its command line names; no
output follows a link; the state, report and findings are replaced atomically and nothing the
campaign did not write is deleted; the state is read bounded and checked before use."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.corpus import store

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT / "conformance" / "vectors" / "1.0"
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"


def cli(*args, timeout=240):
    if args[:1] == ("fuzz",) and "--spec-version" not in args and "--resume" not in args:
        args = (*args, "--spec-version", "1.0")      # the campaigns of before 1.1, request for request
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {p.name: p.read_bytes() if p.is_file() else None for p in sorted(folder.iterdir())}


def one_error_line(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """A small campaign against the reference adapter (the default --impl)."""
    out = tmp_path_factory.mktemp("fuzz") / "ref"
    done = cli("fuzz", "--runs", "64", "--seed", "4", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def copy(campaign: Path, tmp_path: Path) -> Path:
    target = tmp_path / "c"
    shutil.copytree(campaign, target, symlinks=True)
    return target


# -- --resume runs the implementations of its command line -------------------------------------
def test_resume_with_the_same_implementations_continues(campaign, tmp_path):
    out = copy(campaign, tmp_path)
    done = cli("fuzz", "--resume", str(out), "--runs", "96", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["executions"] == 96


def test_resume_with_other_implementations_is_refused(campaign, tmp_path):
    out = copy(campaign, tmp_path)
    recorded = json.loads((out / "state.json").read_text())["impls"]
    other = shlex.join([sys.executable, str(FAULTY), "--fault", "none"])
    line = one_error_line(cli("fuzz", "--resume", str(out), "--impl", other, "--runs", "96"))
    assert line.startswith(f"rtwo-vm: error: cannot resume from {out}: the campaign ran against --impl "
                           f"{recorded[0]!r}, this resume names --impl {other!r}")
    assert json.loads((out / "state.json").read_text())["next_index"] == 64      # nothing ran


def test_a_state_naming_a_command_never_runs_it(campaign, tmp_path):
    """A state whose impls were edited to a command: a resume without --impl is refused (it
    would run the reference adapter), and the command is never run either way."""
    out = copy(campaign, tmp_path)
    marker = tmp_path / "ran"
    command = shlex.join(["sh", "-c", f"touch {marker}"])
    state = json.loads((out / "state.json").read_text())
    state["impls"] = [command]
    (out / "state.json").write_text(json.dumps(state))
    line = one_error_line(cli("fuzz", "--resume", str(out), "--runs", "96"))
    assert f"the campaign ran against --impl {command!r}, this resume names none (the reference adapter)" in line
    assert not marker.exists()


# -- no output through a link; nothing deleted that the campaign did not write ------------------------
def test_findings_linked_to_a_corpus_is_refused_and_the_corpus_untouched(campaign, tmp_path):
    target = tmp_path / "corpus"
    shutil.copytree(VECTORS, target)
    before = snapshot(target)
    assert len([n for n in before if n.endswith(".jsonl")]) > 10
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "findings").symlink_to(target)
    line = one_error_line(cli("fuzz", "--runs", "32", "--out", str(fresh)))
    assert line == f"rtwo-vm: error: {fresh / 'findings'}: is a symbolic link; the findings folder is not written " \
                   "through it"
    resumed = copy(campaign, tmp_path)
    shutil.rmtree(resumed / "findings")
    (resumed / "findings").symlink_to(target)
    one_error_line(cli("fuzz", "--resume", str(resumed), "--runs", "96"))
    assert snapshot(target) == before
    assert not (fresh / "state.json").exists()


@pytest.mark.parametrize("name", ["report.txt", "report.json", "state.json"])
def test_an_output_file_linked_elsewhere_is_refused_and_the_file_untouched(tmp_path, name):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)
    line = one_error_line(cli("fuzz", "--runs", "32", "--out", str(out)))
    assert line == f"rtwo-vm: error: {out / name}: is a symbolic link; the {name} is not written through it"
    assert victim.read_text() == "precious\n"


def test_a_link_where_the_old_temporary_state_was_is_left_alone(tmp_path):
    """The state is written to a fresh temporary name (never a fixed one like state.json.tmp,
    which someone could have planted as a link)."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "state.json.tmp").symlink_to(victim)
    done = cli("fuzz", "--runs", "32", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == "precious\n" and (out / "state.json.tmp").is_symlink()
    assert sorted(p.name for p in out.iterdir()) == ["findings", "report.json", "report.txt", "state.json",
                                                      "state.json.tmp"]


def test_a_campaign_folder_that_is_a_link_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    line = one_error_line(cli("fuzz", "--runs", "32", "--out", str(tmp_path / "link")))
    assert "is a symbolic link" in line
    assert list(real.iterdir()) == []


def test_a_findings_folder_holding_foreign_files_is_refused_and_kept(tmp_path):
    out = tmp_path / "out"
    (out / "findings").mkdir(parents=True)
    shutil.copy(VECTORS / "manifest.json", out / "findings" / "manifest.json")
    (out / "findings" / "control.jsonl").write_text("{}\n")
    before = snapshot(out / "findings")
    line = one_error_line(cli("fuzz", "--runs", "32", "--out", str(out)))
    assert "holds 'control.jsonl', which a fuzz campaign does not write" in line
    assert snapshot(out / "findings") == before


def test_findings_replace_only_the_campaigns_own_files(tmp_path):
    """A rewrite removes the fuzz group file it no longer needs, keeps nothing else to remove."""
    from conformance.fuzz.findings import write_findings
    from conformance.fuzz.generate import generate
    from conformance.fuzz.findings import make_vector
    folder = tmp_path / "findings"
    vector = make_vector(generate(1, 0), 1, 0, "fee", "x")
    write_findings(folder, [vector], 1, "1.0")
    assert sorted(p.name for p in folder.iterdir()) == ["fuzz.jsonl", "manifest.json"]
    assert [v["id"] for v in store.load(folder)] == ["fuzz/s1/000000000"]
    write_findings(folder, [], 1, "1.0")
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"] and store.load(folder) == []


def test_a_failed_write_leaves_the_previous_state_and_findings_whole(tmp_path, monkeypatch):
    """A full disk while writing (fsync fails with ENOSPC): the previous files stay as they
    were and no temporary file is left behind."""
    import errno
    from conformance.fuzz.findings import make_vector, write_findings
    from conformance.fuzz.generate import generate
    from conformance.fuzz.state import save_state
    save_state(tmp_path, {"version": 1, "n": 1})
    write_findings(tmp_path / "findings", [make_vector(generate(1, 0), 1, 0, "fee", "x")], 1, "1.0")
    before, findings_before = snapshot(tmp_path), snapshot(tmp_path / "findings")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        save_state(tmp_path, {"version": 1, "n": 2})
    with pytest.raises(OSError):
        write_findings(tmp_path / "findings", [], 1, "1.0")
    assert snapshot(tmp_path) == before and snapshot(tmp_path / "findings") == findings_before


# -- the state is read bounded and checked ------------------------------------------------------------
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "directory"])
def test_a_state_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path, kind):
    from conformance.fuzz.state import StateError, load_state
    path = tmp_path / "state.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(StateError) as err:
        load_state(tmp_path)
    assert str(err.value) == f"cannot resume from {path}: not a regular file (a campaign state is read only from " \
                             "a regular file)"
    line = one_error_line(cli("fuzz", "--resume", str(tmp_path), "--runs", "32", timeout=60))
    assert line.startswith("rtwo-vm: error: ")


def test_a_state_larger_than_a_campaign_can_hold_is_refused_before_parsing(tmp_path):
    from conformance.fuzz.state import MAX_STATE_BYTES, StateError, load_state
    with open(tmp_path / "state.json", "wb") as f:
        f.write(b'{"version": 1, "pool": [')
        f.truncate(MAX_STATE_BYTES + 1)      # sparse: no disk used
    with pytest.raises(StateError) as err:
        load_state(tmp_path)
    assert str(err.value) == (f"cannot resume from {tmp_path / 'state.json'}: larger than the {MAX_STATE_BYTES} "
                              "bytes a campaign state may hold")
    assert MAX_STATE_BYTES < 128 << 20      # far below the 256 MiB that let a state take 2.8 GB to parse


def test_the_state_cap_follows_from_what_a_campaign_holds():
    """Mostly the pool (capacity times the largest entry) and the kept findings and safety-net
    vectors; each other part has its own small bound (the campaign enforces every one when it
    records)."""
    from conformance.fuzz import state
    from conformance.fuzz.pool import CAPACITY, ENTRY_BYTES
    assert state.MAX_STATE_BYTES >= CAPACITY * ENTRY_BYTES + state.FINDING_BYTES * (state.FINDINGS_KEPT
                                                                                    + state.SAFETY_NET_KEEP)
    assert state.MAX_STATE_BYTES <= 2 * CAPACITY * ENTRY_BYTES + 2 * state.FINDING_BYTES * (
        state.FINDINGS_KEPT + state.SAFETY_NET_KEEP) + (16 << 20)


def test_a_request_too_large_for_the_pool_still_counts_its_coverage():
    from conformance.fuzz.campaign import _merge, _new_state, Options
    from conformance.fuzz.generate import generate
    from conformance.fuzz.pool import ENTRY_BYTES, Pool
    state = _new_state(Options(impls=["x"], out=Path("unused")))
    pool = Pool.from_json(state["pool"])
    small, large = generate(1, 0).to_json(), generate(1, 1).to_json()
    large["call_data"] = "00" * ENTRY_BYTES
    results = [{"start": 0, "count": 2, "worker": 0, "new": [[0, ["a|b"], [], small], [1, ["c|d"], [], large]],
                "divergences": [], "findings": [], "outcomes": {}, "seconds": 0.0}]
    before = len(pool)
    added = _merge(state, pool, set(), set(), results, 0.0)
    assert added["cells"] == ["a|b", "c|d"] and added["pool"] == [small] and len(pool) == before + 1
