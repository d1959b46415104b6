"""The files of a conformance run (issue 20): ``--last-failed`` reads the previous report.json
as hostile data (schema, ranges, bounded reader: one-line refusals, exit 2, no internal error,
no hang, no unbounded sample), and the run writes report.json, junit.xml, report.html and its
bundles atomically, never through a symbolic link, keeping every earlier file whole when a
write fails (a real write failure: RLIMIT_FSIZE with SIGXFSZ ignored, as a full disk), and
removing only the earlier bundles it recognises, inside its folder.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.run import inputs
from conformance.report.bundles import bundle_texts, remove_stale_bundles, write_bundles
from conformance.report.files import write_reports
from conformance.corpus.selection import select
from conformance.run.suite import Options, reference_command, run_suite
from rtwo_vm.cli import main
from spec.files import FileRefused

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"
TARGET = "hash/SHA256/length_1"
FILTER = "hash/SHA256/length_*"


def faulty(target: str = TARGET) -> str:
    return shlex.join([sys.executable, str(FAULTY), "--fault", "wrong-result", "--target", target])


def marker_adapter(marker: Path) -> str:
    return shlex.join(["sh", "-c", f": > {shlex.quote(str(marker))}; exec \"$0\" -m conformance.adapter",
                       sys.executable])


def refused(capsys, *argv: str) -> str:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and "internal error" not in err, err
    return err


def cli(*argv: str, limit: int | None = None) -> subprocess.CompletedProcess:
    """The CLI in a child process (a timeout fails a read that would block); with ``limit``,
    files it writes may not grow past ``limit`` bytes (EFBIG, as a full disk's ENOSPC)."""
    def limited() -> None:
        assert limit is not None      # run only with a limit
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, preexec_fn=limited if limit is not None else None)


def run_args(out: Path, impl: str, *more: str) -> list[str]:
    """A run of spec 1.0: its reports in OUT/1.0."""
    return ["conformance", "run", "--impl", impl, "--filter", FILTER, "--repeat", "0", "--fresh", "0",
            "--out", str(out), "--no-progress", "--spec-version", "1.0", *more]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- --last-failed ---------------------------------------------------------------------------

VALID = {"implementations": [{"failed_ids": [TARGET, "fresh/5/0001"]}], "seed": 5, "fresh_requested": 3}
BAD_REPORTS = [
    dict(VALID, fresh_requested="x"), dict(VALID, fresh_requested=-1), dict(VALID, fresh_requested=1.5),
    dict(VALID, fresh_requested=True), dict(VALID, fresh_requested=100_000_000),
    dict(VALID, fresh_requested=inputs.MAX_FRESH + 1), dict(VALID, fresh_requested=3.0),
    dict(VALID, seed=[1]), dict(VALID, seed="5"), dict(VALID, seed=-1), dict(VALID, seed=5.0),
    dict(VALID, seed=inputs.MAX_SEED + 1), dict(VALID, implementations="x"), dict(VALID, implementations=[1]),
    dict(VALID, implementations=[{"failed_ids": TARGET}]), dict(VALID, implementations=[{"failed_ids": [1]}]),
    dict(VALID, implementations=[{}]), dict(VALID, implementations=[{"failed_ids": ["hash/x\n"]}]),
    {"seed": 5}, [VALID], "report",
]
BAD_TEXTS = ['{"implementations": [], "fresh_requested": 1e999}', "not json", "[" * 100 + "]" * 100,
             '{"implementations": [], "seed": NaN}', ""]


BAD = [json.dumps(doc) for doc in BAD_REPORTS] + BAD_TEXTS


@pytest.mark.parametrize("text", BAD, ids=[text[:40] for text in BAD])
def test_a_malformed_previous_report_is_refused_in_one_line(tmp_path, capsys, text):
    marker = tmp_path / "ran"
    (tmp_path / "1.0").mkdir()
    (tmp_path / "1.0" / "report.json").write_text(text)
    err = refused(capsys, *run_args(tmp_path, marker_adapter(marker), "--last-failed"))
    assert "--last-failed" in err and str(tmp_path / "1.0" / "report.json") in err
    assert not marker.exists()


def test_a_valid_previous_report_reruns_its_failures(tmp_path, capsys):
    """The control: the same file, well formed, runs (the marker adapter starts)."""
    marker = tmp_path / "ran"
    (tmp_path / "1.0").mkdir()
    (tmp_path / "1.0" / "report.json").write_text(json.dumps(VALID))
    assert main(run_args(tmp_path, marker_adapter(marker), "--last-failed")) == 0
    assert marker.exists() and "1 passed" in capsys.readouterr().out


def test_a_fifo_or_a_device_as_previous_report_is_refused_without_blocking(tmp_path):
    fifo_dir, zero_dir = tmp_path / "fifo", tmp_path / "zero"
    (fifo_dir / "1.0").mkdir(parents=True)
    (zero_dir / "1.0").mkdir(parents=True)
    os.mkfifo(fifo_dir / "1.0" / "report.json")
    (zero_dir / "1.0" / "report.json").symlink_to("/dev/zero")
    for out in (fifo_dir, zero_dir):
        done = cli(*run_args(out, reference_command(), "--last-failed"))
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1


def test_the_run_refuses_numbers_its_reports_could_not_be_read_back_with(capsys):
    refused(capsys, "conformance", "run", "--fresh", str(inputs.MAX_FRESH + 1))
    refused(capsys, "conformance", "run", "--seed", str(inputs.MAX_SEED + 1))
    refused(capsys, "conformance", "run", "--repeat", str(inputs.MAX_REPEAT + 1))


# -- writing the reports ---------------------------------------------------------------------

@pytest.mark.parametrize("more", [(), ("--max-bundles", "0")], ids=["a bundle fails first", "junit.xml fails first"])
def test_a_full_disk_keeps_the_previous_report_whole(tmp_path, more):
    base = tmp_path / "out"
    out = base / "1.0"
    first = cli(*run_args(base, faulty()))
    assert first.returncode == 1, first.stdout + first.stderr
    before = snapshot(out)
    assert {"report.json", "junit.xml", "report.html"} <= set(before) and len(before) == 4
    assert inputs.read_previous(out / "report.json").failed == {TARGET}   # what a run writes reads back

    full = cli(*run_args(base, faulty("hash/SHA256/length_0"), *more), limit=1024)
    assert full.returncode == 2, full.stdout + full.stderr
    assert full.stderr.count("\n") == 1 and "cannot write" in full.stderr and "kept whole" in full.stderr
    assert snapshot(out) == before                      # every earlier file whole, no temporary file

    again = cli(*run_args(base, faulty("hash/SHA256/length_0"), *more))
    assert again.returncode == 1, again.stdout + again.stderr
    after = snapshot(out)
    assert inputs.read_previous(out / "report.json").failed == {"hash/SHA256/length_0"}
    bundles = [name for name in after if name.startswith("bundles/")]
    assert len(bundles) == (0 if more else 1) and all("length_0" in name for name in bundles)


@pytest.mark.parametrize("name", ["1.0/report.json", "1.0/junit.xml", "1.0/report.html", "1.0/bundles", "1.0",
                                  "."])
def test_no_output_path_follows_a_link(tmp_path, capsys, name):
    marker = tmp_path / "ran"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "victim"
    victim.write_text("keep me")
    out = tmp_path / "out"
    if name == ".":
        out.symlink_to(elsewhere)
    else:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).symlink_to(elsewhere if name in ("1.0/bundles", "1.0") else victim)
    err = refused(capsys, *run_args(out, marker_adapter(marker)))
    assert "symbolic link" in err
    assert not marker.exists() and victim.read_text() == "keep me" and os.listdir(elsewhere) == ["victim"]


def test_keep_logs_never_follows_a_link(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.adapter.log").write_text("keep me")
    (tmp_path / "logs").symlink_to(elsewhere)
    refused(capsys, *run_args(tmp_path / "out", reference_command(), "--keep-logs", str(tmp_path / "logs")))
    assert (elsewhere / "mine.adapter.log").read_text() == "keep me"


def test_clearing_old_logs_removes_links_never_what_they_name(tmp_path):
    from rtwo_vm.commands.conformance.files import clear_logs
    logs, victim = tmp_path / "logs", tmp_path / "victim.adapter.log"
    logs.mkdir()
    victim.write_text("keep me")
    (logs / "old.adapter.log").write_text("an earlier run's log")
    (logs / "planted.adapter.log").symlink_to(victim)
    (logs / "mine.txt").write_text("mine")
    (logs / "sub.adapter.log").mkdir()
    clear_logs(logs)
    assert sorted(os.listdir(logs)) == ["mine.txt", "sub.adapter.log"] and victim.read_text() == "keep me"


@pytest.fixture(scope="module")
def failing():
    from conformance.corpus import store
    from conformance.constants import corpus_dir
    from conformance.run.process import Settings
    return run_suite([faulty()], select(store.load(corpus_dir("1.0")), [TARGET]), [], Options(Settings("1.0"), repeat=0))


def test_a_link_planted_under_a_bundle_name_is_not_written_through(failing, tmp_path):
    folder = tmp_path / "bundles"
    folder.mkdir()
    (name,) = (path.name for path, _ in bundle_texts(failing, folder).values())
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (folder / name).symlink_to(victim)
    with pytest.raises(FileRefused, match="symbolic link"):
        write_bundles(failing, folder)
    assert victim.read_text() == "keep me"


def test_only_recognised_bundles_of_an_earlier_run_are_removed(failing, tmp_path):
    folder = tmp_path / "bundles"
    folder.mkdir()
    old_name = "vm__hash_SHA256_length_9-0123456789ab.json"
    elsewhere = tmp_path / "elsewhere.json"
    (new_path,) = write_bundles(failing, folder).values()
    bundle_text = new_path.read_text()
    (folder / old_name).write_text(bundle_text)                                  # removed
    elsewhere.write_text(bundle_text)
    (folder / "vm__linked-0123456789ac.json").symlink_to(elsewhere)              # a link: left alone
    (folder / "vm__notes-0123456789ad.json").write_text('{"mine": 1}')           # not a bundle: kept
    (folder / "mine.json").write_text(bundle_text)                               # not a bundle's name: kept
    (folder / "notes.txt").write_text("mine")
    os.mkfifo(folder / "vm__fifo-0123456789ae.json")                             # no blocking, kept
    (folder / "vm__dir-0123456789af.json").mkdir()                               # kept
    removed = remove_stale_bundles(folder, {new_path})
    assert removed == [folder / old_name]
    assert sorted(os.listdir(folder)) == sorted([new_path.name, "vm__linked-0123456789ac.json",
                                                 "vm__notes-0123456789ad.json", "mine.json", "notes.txt",
                                                 "vm__fifo-0123456789ae.json", "vm__dir-0123456789af.json"])
    assert elsewhere.read_text() == bundle_text


def test_reports_hold_an_adapters_lone_surrogate(failing, tmp_path):
    outcome = failing.runs[0].outcomes[TARGET]
    reason, outcome.reason = outcome.reason, "adapter said \ud800"
    try:
        bundles = write_reports(tmp_path, failing, {"digest": "x"}, [], {"seed": 1}, {})
    finally:
        outcome.reason = reason
    assert len(bundles) == 1 and "adapter said" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert sorted(os.listdir(tmp_path)) == ["bundles", "junit.xml", "report.html", "report.json"]
