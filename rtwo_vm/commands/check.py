"""``rtwo-vm check``: the main job — the whole system shown working, end to end.

Runs, in order and each with its own progress display: the opcode theorems of every version
(``prove``), the proved differences of each version from its base (``prove --diff``), a fresh fill of the conformance vectors compared with the committed corpus
(``vectors fill --check``, the second oracle on its quick cover of the corpus: every vector
takes minutes, which ``vectors fill`` spends), validation of the reference interpreter through its own adapter
(``conformance run``), and the readiness report with its evidence (``readiness``). Every
step is the very command a user would run; ``check`` only sequences them and summarises.
Exit code 0 only when every step passed.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

STEPS = (
    ("prove the opcode theorems of the newest version", ["prove", "--no-table"]),
    ("fill the vectors, confirm a quick cover by the models, compare with the committed corpus",
     ["vectors", "fill", "--check", "--second-oracle", "quick"]),
    ("validate the reference through its own adapter", ["conformance", "run"]),
    ("readiness report with evidence", ["readiness"]),
)


def _steps(data: Path | None = None) -> list[tuple[str, list[str]]]:
    """STEPS, with the theorems of every version the proofs model (the older ones first, each
    into a report of its own, so that the newest finds their shared verdicts in the verdict
    cache and writes the report readiness reads), then one ``prove --diff`` per version and
    its base (read from spec/versions.toml, never listed here). The reports go to the data
    directory ``data`` (the default one when None: rtwo_vm/arguments/evidence.py), where
    readiness reads them; each step that writes or reads evidence is given it."""
    import spec
    from proofs import versions
    from rtwo_vm.arguments.evidence import default_data_dir
    from rtwo_vm.runtime.tools import EvidenceFiles
    folder = (data or default_data_dir()).absolute()
    older = [(f"prove the opcode theorems of {v}",
              ["prove", "--no-table", "--spec-version", v, "--report",
               str(EvidenceFiles(folder).version_proofs_report(v))])
             for v in versions.MODELLED if v != versions.newest()]
    pairs = [(v.base, v.version) for v in spec.versions()
             if v.base is not None and {v.base, v.version} <= set(versions.MODELLED)]
    given = ["--data-dir", str(folder)]
    diffs = [(f"prove what {new} changes from {old}", ["prove", "--diff", old, new, *given])
             for old, new in pairs]
    mine = [(title, [*argv, *given] if argv[0] in EVIDENCE_STEPS else argv) for title, argv in STEPS]
    return [*older, mine[0], *diffs, *mine[1:]]


# The steps that write or read evidence in the data directory (and take --data-dir).
EVIDENCE_STEPS = ("prove", "readiness", "conformance")


def _cache_line(proved: bool) -> str:
    """Whether the prove steps used a verdict cache, and which (they use the default one)."""
    if not proved:
        return "verdict cache: not used (no prove step)"
    from proofs import cache
    return (f"verdict cache: used, {cache.default_dir()} (proofs/cache.py: answers sealed with "
            "the local key; each prove step above prints what it took from it)")


def register(sub) -> None:
    p = sub.add_parser("check", help="prove, fill, validate and report readiness: the whole system")
    p.add_argument("--skip", action="append", default=[], choices=["prove", "vectors", "conformance", "readiness"],
                   help="leave a step out")
    p.add_argument("--data-dir", dest="data_dir", metavar="DIR",
                   help="data directory the reports are written to and readiness reads "
                        "(default $RTWO_VM_DATA, else ~/.local/share/rtwo-vm)")
    p.set_defaults(func=_cmd_check)


def _cmd_check(args) -> int:
    main = args.cli_main       # rtwo_vm.cli.main: each step is the command a user would run
    results = []
    from rtwo_vm.arguments.evidence import data_dir, where_line
    steps = [(title, argv) for title, argv in _steps(data_dir(args)) if argv[0] not in args.skip]
    print(where_line(args))
    with tempfile.TemporaryDirectory(prefix="rtwo-check-") as scratch:
        for number, (title, argv) in enumerate(steps, start=1):
            if argv[0] == "readiness":
                # A fresh scratch database, so that readiness checks a real runtime file
                # rather than whatever rtwo-vm.db happens to be in the current directory.
                from rtwo_vm.runtime import Runtime
                db = os.path.join(scratch, "check.db")
                Runtime(db).close()
                argv = argv + ["--db", db]
            print(f"\n[{number}/{len(steps)}] {title}: rtwo-vm {' '.join(argv)}", flush=True)
            started = time.monotonic()
            code = main(argv)
            results.append((title, code, time.monotonic() - started))
            sys.stdout.flush()
    print("\nrtwo-vm check")
    for title, code, seconds in results:
        print(f"  {'PASS' if code == 0 else 'FAIL'}  {seconds:7.1f} s  {title}")
    print(_cache_line("prove" not in args.skip))
    failed = [t for t, c, _ in results if c != 0]
    print("RESULT: " + ("everything passed" if not failed else f"{len(failed)} step(s) failed"))
    return 0 if not failed else 1
