"""The native tier is an optional extra: without llvmlite, ``--engine native`` refuses in one
line with exit status 2 (``rtwo-vm run`` and the adapter), ``native_vm`` still imports and says
why, and nothing else changes. These run whether llvmlite is installed or not: its absence is
made in a child process (``sys.modules['llvmlite'] = None``, which is what importlib reports for
a package that is not there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOP = str(ROOT / "benchmarks" / "loop.rasm")
WITHOUT = "import sys; sys.modules['llvmlite'] = None; "


def without_llvmlite(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT + code], capture_output=True, text=True,
                          cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)


def test_run_with_the_native_engine_refuses_in_one_line_without_the_extra(tmp_path):
    done = without_llvmlite("from rtwo_vm.cli import main; sys.exit(main(['run', %r, '--engine', 'native']))"
                            % LOOP, tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("rtwo-vm: error: ") and "llvmlite" in line and "[native]" in line
    # The other engines run as before in the same situation.
    done = without_llvmlite("from rtwo_vm.cli import main; sys.exit(main(['run', %r, '--engine', 'compiled',"
                            " '--calldata', '0x0500000000000000']))" % LOOP, tmp_path)
    assert done.returncode == 0 and '"status": "success"' in done.stdout


def test_the_native_adapter_refuses_in_one_line_without_the_extra(tmp_path):
    done = without_llvmlite("from conformance.adapter import main; sys.exit(main(['--engine', 'native']))",
                            tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert "llvmlite" in line and "[native]" in line


def test_native_vm_imports_without_the_extra_and_says_why_it_cannot_run(tmp_path):
    probe = ("import native_vm; print(native_vm.missing())\n"
             "try:\n    native_vm.execute\nexcept ImportError as err:\n    print('ImportError', err)")
    done = without_llvmlite(probe, tmp_path)
    assert done.returncode == 0, done.stderr
    reason, refused = done.stdout.splitlines()
    assert "llvmlite" in reason and refused == f"ImportError {reason}"
