"""``rtwo-vm check`` sequences the user-facing commands and fails when one of them fails.

The proof step is exercised by tests/test_proofs_suite.py (the full suite once); here it is
skipped to keep CI short."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "check", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_check_runs_every_step_and_passes(tmp_path):
    # In a directory of its own: the reports check writes (build/...) never touch the
    # checkout, and a report an earlier `rtwo-vm check` left there is never read.
    data = tmp_path / "data"
    done = check("--skip", "prove", "--data-dir", str(data), cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    for title in ("fill the vectors, confirm a quick cover by the models, compare with the committed corpus",
                  "validate the reference through its own adapter",
                  "readiness report with evidence"):
        assert re.search(rf"PASS .* s  {re.escape(title)}", done.stdout), title
    assert "RESULT: everything passed" in done.stdout
    assert "every implementation conforms" in done.stdout
    assert re.search(r"second oracle \(quick\): \d+ vectors run by the proofs' models .*: all agree", done.stdout)
    for version in ("1.0", "1.1"):   # one report per version the reference announces
        assert (data / "conformance" / version / "report.json").is_file()
    assert not (tmp_path / "build").exists()


def test_check_fails_when_a_step_fails(capsys):
    import argparse

    from rtwo_vm.commands import check as check_command

    calls = []

    def fake_main(argv):
        calls.append(argv[0])
        return 1 if argv[0] == "conformance" else 0

    code = check_command._cmd_check(argparse.Namespace(skip=["prove"], cli_main=fake_main))
    out = capsys.readouterr().out
    assert code == 1
    assert calls == ["vectors", "conformance", "readiness"]  # a failure does not stop the rest
    assert "FAIL" in out and "1 step(s) failed" in out
    assert "verdict cache: not used (no prove step)" in out


def test_check_states_the_verdict_cache_its_prove_steps_used(capsys, monkeypatch, tmp_path):
    import argparse

    from rtwo_vm.commands import check as check_command
    monkeypatch.setenv("RTWO_VM_PROOFS_CACHE", str(tmp_path / "the-cache"))
    skip = ["vectors", "conformance", "readiness"]
    assert check_command._cmd_check(argparse.Namespace(skip=skip, cli_main=lambda argv: 0)) == 0
    assert f"verdict cache: used, {tmp_path / 'the-cache'} " in capsys.readouterr().out
