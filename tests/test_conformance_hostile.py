"""The runner against implementations that misbehave on purpose: real adapter processes that
nest JSON without end, write 100 MB lines, endless lines or floods of stderr, hang, leave a
grandchild in a new session holding stdout, look answers up in the published corpus, or lose
jumps in their traces. Each test checks the verdict, the bounds, the exit code, and that no
process and no temporary directory survives."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.constants import corpus_dir

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"
SIX = "arithmetic/ADD/one__*"         # 6 vectors
TARGET = "arithmetic/ADD/one__one"
MB = 1 << 20



def manifest_for(directory: Path) -> str:
    """A schema-valid manifest for the group files written into ``directory`` (its digest is not
    that of the vectors: what these tests check comes before any digest check)."""
    import hashlib
    from conformance.corpus import store
    real = store.read_manifest(corpus_dir("1.0"))
    files = [{"path": f.name, "vectors": f.read_text().count("\n"),
              "sha256": hashlib.sha256(f.read_bytes()).hexdigest()} for f in sorted(directory.glob("*.jsonl"))]
    return json.dumps({**real, "files": files, "vector_count": sum(f["vectors"] for f in files)})


def add_vectors() -> int:
    """How many vectors the committed corpus holds for arithmetic/ADD/* (the tests' selection)."""
    from conformance.corpus import store
    from conformance.corpus.selection import select
    return len(select(store.load(corpus_dir("1.0")), ["arithmetic/ADD/*"]))

def faulty(fault: str, tmp_path: Path, target: str = TARGET) -> str:
    # The pid file path marks every adapter process of the test (see survivors()).
    return shlex.join([sys.executable, str(FAULTY), "--fault", fault, "--target", target,
                       "--pidfile", str(tmp_path / "adapter.pid")])


def run(tmp_path: Path, *args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, int]:
    """``rtwo-vm conformance run ARGS`` in a subprocess; the result and the runner's peak RSS
    in bytes. TMPDIR points into tmp_path, so that a temporary directory left behind shows."""
    rss = tmp_path / "rss"
    # VmHWM is the peak of this process image alone; ru_maxrss would carry over the peak of
    # the process that forked it (pytest's own memory) across exec.
    code = ("import runpy, sys\n"
            f"sys.argv = ['rtwo-vm', 'conformance', 'run', '--spec-version', '1.0'] + {list(args)!r}\n"
            "try:\n    runpy.run_module('rtwo_vm.cli', run_name='__main__')\n"
            "finally:\n    peak = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))\n"
            f"    open({str(rss)!r}, 'w').write(peak)\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "TMPDIR": str(tmp)})
    assert list(tmp.iterdir()) == [], "a temporary directory survived the run"
    assert survivors(tmp_path) == [], "an adapter process survived the run"
    return done, int(rss.read_text()) * 1024


def survivors(tmp_path: Path) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if str(tmp_path).encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                pass
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def report(out: Path) -> dict:
    return json.loads((out / "1.0" / "report.json").read_text())


def failures(out: Path) -> dict[str, dict]:
    (impl,) = report(out)["implementations"]
    return {f["id"]: f for f in impl["failures"]}


BASE = ("--filter", SIX, "--fresh", "0", "--repeat", "0", "--timeout", "2", "--no-progress")


@pytest.mark.parametrize("fault,kind", [("nested", "garbage"), ("huge-line", "oversized"),
                                        ("endless-line", "oversized"), ("blank-flood", "timeout")])
def test_hostile_lines_fail_their_vector_within_bounds(tmp_path, fault, kind):
    out = tmp_path / "out"
    started = time.monotonic()
    done, rss = run(tmp_path, "--impl", faulty(fault, tmp_path), "--out", str(out), *BASE)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    found = failures(out)
    assert list(found) == [TARGET] and found[TARGET]["kind"] == kind, found
    assert report(out)["implementations"][0]["counts"]["pass"] == 5, "the run goes on after the fault"
    assert rss < 300 * MB and size(out) < 100 * MB
    assert time.monotonic() - started < 60


def test_a_nested_hello_is_a_start_error_exit_3(tmp_path):
    out = tmp_path / "out"
    done, _ = run(tmp_path, "--impl", faulty("nested-hello", tmp_path), "--out", str(out), *BASE)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "could not start" in done.stdout and "nested 200000 levels deep" in done.stdout
    assert "Traceback" not in done.stderr


def test_a_stderr_flood_keeps_only_the_end_of_each_log(tmp_path):
    out = tmp_path / "out"
    done, rss = run(tmp_path, "--impl", faulty("stderr-flood", tmp_path), "--out", str(out), "--keep-logs", *BASE)
    assert done.returncode == 0, done.stdout + done.stderr
    logs = list((out / "logs").glob("*.adapter.log"))
    assert logs and all(p.stat().st_size <= 3 * 64 * 1024 for p in logs), [p.stat().st_size for p in logs]
    main = [p.read_text() for p in logs if "__main-" in p.name]
    assert main and all("earlier bytes of stderr dropped" in t and "last words of the flood" in t for t in main)
    assert rss < 300 * MB and size(out) < 100 * MB


def test_hangs_cost_seconds_then_the_rest_is_unavailable(tmp_path):
    out = tmp_path / "out"
    started = time.monotonic()
    done, _ = run(tmp_path, "--impl", faulty("hang", tmp_path, "*"), "--out", str(out), "--filter", "arithmetic/ADD/*",
                  "--fresh", "0", "--repeat", "0", "--timeout", "1", "--max-failures", "2", "--workers", "1",
                  "--no-progress")
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    kinds = [f["kind"] for f in report(out)["implementations"][0]["failures"]]
    assert kinds.count("timeout") == 2 and kinds.count("unavailable") == add_vectors() - 2, kinds
    assert "gave up after 2 consecutive crashes, hangs or protocol failures" in done.stdout
    assert elapsed < 30, f"{add_vectors()} hanging vectors took {elapsed:.0f} s"


def test_a_crash_is_a_crash_even_when_a_setsid_grandchild_holds_stdout(tmp_path):
    out = tmp_path / "out"
    done, _ = run(tmp_path, "--impl", faulty("setsid-crash", tmp_path), "--out", str(out), *BASE)
    assert done.returncode == 1, done.stdout + done.stderr
    found = failures(out)[TARGET]
    assert found["kind"] == "crash" and "exit status 70" in found["reason"], found
    # The adapter's keeper kills what the adapter left the moment the adapter exits, so the
    # grandchild no longer holds its stdout open (the crash is seen at once, not at a timeout).
    assert "held open by another process" not in found["reason"]
    grandchild = int((tmp_path / "adapter.pid").read_text())
    assert not alive(grandchild), "the grandchild in its own session survived"


def test_sigterm_kills_every_adapter_and_leaves_no_temporary_directory(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    pidfile = tmp_path / "adapter.pid"
    runner = subprocess.Popen([sys.executable, "-m", "rtwo_vm.cli", "conformance", "run", "--impl",
                               faulty("hello-pid", tmp_path), "--out", str(tmp_path / "out"), "--spec-version",
                               "1.0", *BASE[:-3],
                               "--timeout", "60", "--no-progress"], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not pidfile.exists() and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)      # waiting for the adapter's hello (the event), not for a chosen time
    assert pidfile.exists(), runner.communicate()
    adapter = int(pidfile.read_text() or 0)
    runner.send_signal(signal.SIGTERM)
    _, err = runner.communicate(timeout=30)
    assert runner.returncode == 130 and b"interrupted" in err
    left = (alive(adapter), survivors(tmp_path), list(tmp.iterdir()))
    assert left == (False, [], []), left


def test_a_corpus_lookup_adapter_fails_a_default_run(tmp_path):
    out = tmp_path / "out"
    lookup = faulty("lookup", tmp_path, "*")
    done, _ = run(tmp_path, "--impl", lookup, "--out", str(out), "--filter", SIX, "--fresh", "12", "--seed", "5",
                  "--no-progress")
    assert done.returncode == 1, done.stdout
    doc = report(out)
    (impl,) = doc["implementations"]
    # Every request is blinded (spec 11.8.4): not one is a published input, so nothing is found.
    assert impl["counts"]["pass"] == 0 and impl["counts"]["unsupported"] == 6, impl["counts"]
    assert impl["fresh_counts"]["pass"] == 0 and doc["seed"] == 5 and doc["fresh"] == 12
    assert doc["blinding"]["on"] and doc["blinding"]["vectors"] == 18
    # Without blinding it answers the published vectors, and the fresh sample is what catches it.
    done, _ = run(tmp_path, "--impl", lookup, "--out", str(out), "--filter", SIX, "--fresh", "12", "--seed", "5",
                  "--no-progress", "--no-blind")
    assert done.returncode == 1, done.stdout
    doc = report(out)
    (impl,) = doc["implementations"]
    assert impl["counts"]["pass"] == 6 and impl["counts"]["fail"] == 0, "it answers the published vectors"
    assert impl["fresh_counts"]["pass"] < 12 and doc["blinding"]["on"] is False
    assert "fresh sample (seed 5)" in done.stdout and "seed 5" in done.stdout.splitlines()[0]
    assert "blinding off: a lookup could pass" in done.stdout
    assert all(i.startswith("fresh/5/") for i in impl["failed_ids"])
    # --last-failed generates the same sample again and runs only its failing vectors.
    again, _ = run(tmp_path, "--impl", lookup, "--out", str(out), "--filter", SIX, "--last-failed", "--no-progress",
                   "--no-blind")
    assert again.returncode == 1 and "seed 5" in again.stdout
    rerun = report(out)["implementations"][0]
    assert sorted(rerun["failed_ids"]) == sorted(impl["failed_ids"]) and rerun["fresh_counts"]["pass"] == 0
    assert rerun["counts"]["pass"] == rerun["counts"]["fail"] == 0
    # Offline reproduction of a corpus-only run without blinding: the lookup passes.
    corpus_only, _ = run(tmp_path, "--impl", lookup, "--out", str(out), *BASE, "--no-blind")
    assert corpus_only.returncode == 0
    blinded, _ = run(tmp_path, "--impl", lookup, "--out", str(out), *BASE)
    assert blinded.returncode == 1


def test_a_tracer_that_loses_jumps_fails_on_passing_vectors(tmp_path):
    out = tmp_path / "out"
    done, _ = run(tmp_path, "--impl", faulty("lose-jumps", tmp_path, "*"), "--out", str(out), "--filter",
                  "control/JUMP/*", "--fresh", "0", "--repeat", "0", "--no-progress")
    assert done.returncode == 1, done.stdout
    found = failures(out)
    assert found and all(f["kind"] == "trace" for f in found.values()), found
    assert all(f["mismatches"][0]["category"] == "trace" and "JUMP" in f["opcodes"] for f in found.values())


def test_a_partial_implementation_reads_its_wrong_answers_first(tmp_path):
    out = tmp_path / "out"
    done, _ = run(tmp_path, "--impl", faulty("partial", tmp_path, "arithmetic/ADD/one__*"), "--out", str(out),
                  "--filter", "arithmetic/*", "--fresh", "0", "--repeat", "0", "--show", "3", "--max-bundles", "4",
                  "--no-progress")
    assert done.returncode == 1
    text = done.stdout
    impl = report(out)["implementations"][0]
    assert impl["counts"]["unsupported"] > 100, impl["counts"]
    # The wrong answers lead, the unsupported inputs are counted apart.
    first = text.index("wrong answers (3 of 6):")
    assert "unsupported (UNSUPPORTED_INPUT, counted apart from wrong answers)" in text[first:]
    assert text[first:].splitlines()[1].startswith("     arithmetic/ADD/one__") and "… and 3 more" in text
    assert "(b on top); returns the result." in text and "spec 6.3; opcodes ADD" in text  # description, sections
    assert "push8" in text and "│" in text                      # the disassembly beside the diff
    assert [f["kind"] for f in impl["failures"][:6]] == ["result"] * 6
    assert len(list((out / "1.0" / "bundles").glob("*.json"))) == 4 and "--max-bundles" in text


def test_an_impostor_does_not_inherit_the_reference_known_failures(tmp_path):
    listing = tmp_path / "reference-extra.toml"
    listing.write_text('version = 1\nspec_version = "1.0"\nimplementation = "rtwo-reference"\n'
                       'fingerprint = "* -m conformance.adapter*"\n'
                       f'[[known_failure]]\nid = "{TARGET}"\nreason = "listed for the real reference only"\n')
    out = tmp_path / "out"
    done, _ = run(tmp_path, "--impl", faulty("impostor", tmp_path), "--known-failures", str(listing),
                  "--out", str(out), *BASE)
    assert done.returncode == 1 and "rtwo-reference" in done.stdout
    assert report(out)["implementations"][0]["counts"]["xfail"] == 0 and TARGET in failures(out)


def test_ci_outputs_junit_json_html_exitfirst_and_last_failed(tmp_path):
    import xml.etree.ElementTree as ET
    out = tmp_path / "out"
    impl = faulty("crash", tmp_path, "arithmetic/ADD/one__[mo]*")     # min, minus_one, one
    done, _ = run(tmp_path, "--impl", impl, "--out", str(out), "--json", "--seed", "9", "--fresh", "4",
                  "--filter", SIX, "--repeat", "0", "--max-failures", "10", "--no-progress")
    summary = json.loads(done.stdout)
    assert done.returncode == 1 and summary["exit_code"] == 1 and summary["seed"] == 9
    assert summary["versions"]["1.0"]["implementations"][0]["failure_kinds"] == {"crash": 3}
    suites = ET.fromstring((out / "1.0" / "junit.xml").read_text())
    suite = suites.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["seed"] == "9" and props["implementation.name"] == "faulty-reference" and "corpus.digest" in props
    assert suite.get("errors") == "3" and suite.get("failures") == "0"     # crashes are errors
    times = [float(c.get("time")) for c in suite.iter("testcase")]
    assert all(t >= 0 for t in times) and any(t > 0 for t in times)
    error = suite.find(".//error")
    assert error is not None and "replay bundle:" in error.text
    page = (out / "1.0" / "report.html").read_text()
    assert "arithmetic/ADD/one__minus_one" in page and "<script" not in page and "http" not in page.split("</style>")[1]
    # -x stops at the first failure; --last-failed reruns the three that failed.
    first, _ = run(tmp_path, "--impl", impl, "--out", str(tmp_path / "x"), "-x", *BASE, "--workers", "1",
                   "--window", "1")
    assert first.returncode == 1 and "stopped at the first failure (-x)" in first.stdout
    again, _ = run(tmp_path, "--impl", impl, "--out", str(out), "--last-failed", "--json", "--repeat", "0",
                   "--max-failures", "10", "--no-progress")
    counts = json.loads(again.stdout)["versions"]["1.0"]["implementations"][0]["counts"]
    assert counts["fail"] == 3 and counts["pass"] == 0


@pytest.mark.parametrize("option", [("--timeout", "nan"), ("--timeout", "inf"), ("--timeout", "0"),
                                    ("--workers", "0"), ("--window", "-1"), ("--fresh", "-1"),
                                    ("--max-failures", "0"), ("--seed", "x"), ("--filter", "no/such/vector*")])
def test_bad_numbers_and_empty_filters_are_usage_errors(option, capsys):
    from rtwo_vm.cli import main
    assert main(["conformance", "run", *option]) == 2
    assert "error" in capsys.readouterr().err


def test_every_command_refuses_infinite_numbers(capsys):
    from rtwo_vm.cli import main
    assert main(["conformance", "selftest", "--timeout", "inf"]) == 2
    assert main(["conformance", "replay", "x", "--timeout", "nan"]) == 2
    assert main(["vectors", "list", "--filter", "opcode=NOSUCH"]) == 2


def test_bundle_names_are_unique_and_safe_for_every_id():
    from conformance.report.bundles import bundle_name
    ids = ["a/b", "a__b", "a\0b", "x" * 300, "../../etc/passwd", "A/B", "a b"]
    names = [bundle_name("vm", i) for i in ids]
    assert len(set(names)) == len(ids)
    assert all(len(n) < 200 and "/" not in n and "\0" not in n and not n.startswith(".") for n in names)


def test_duplicate_corpus_ids_are_an_error_naming_the_id(tmp_path, capsys):
    from conformance.corpus import store
    from rtwo_vm.cli import main
    (vector,) = [v for v in store.load(corpus_dir("1.0")) if v["id"] == TARGET]
    (tmp_path / "arithmetic.jsonl").write_text((json.dumps(vector) + "\n") * 2)
    (tmp_path / "manifest.json").write_text(manifest_for(tmp_path))
    assert main(["vectors", "list", "--dir", str(tmp_path)]) == 2
    assert f"duplicate vector id '{TARGET}'" in capsys.readouterr().err


def test_the_reference_adapter_answers_hostile_requests_with_bad_message():
    lines = b"[" * 300_000 + b"\n" + b'{"x":"' + b"a" * (17 * MB) + b'"}\n' + b'{"type":"shutdown"}\n'
    done = subprocess.run([sys.executable, "-m", "conformance.adapter"], cwd=ROOT, input=lines, capture_output=True,
                          timeout=60)
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r.get("code") for r in replies[:2]] == ["BAD_MESSAGE", "BAD_MESSAGE"] and replies[2] == {"type": "bye"}
    assert done.returncode == 0 and b"Traceback" not in done.stderr


def test_awkward_ids_get_one_bundle_each_and_valid_reports(tmp_path):
    import xml.etree.ElementTree as ET
    from conformance.corpus import store
    (vector,) = [v for v in store.load(corpus_dir("1.0")) if v["id"] == TARGET]
    ids = ["a/b", "a__b", "x/" + "y" * 300, "nul/\u0000/id"]
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "odd.jsonl").write_text("".join(json.dumps({**vector, "id": i}) + "\n" for i in ids))
    (folder / "manifest.json").write_text(manifest_for(folder))
    out = tmp_path / "out"
    done, _ = run(tmp_path, "--dir", str(folder), "--impl", faulty("wrong-result", tmp_path, "*"),
                  "--out", str(out), "--fresh", "0", "--repeat", "0", "--no-progress")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert sorted(failures(out)) == sorted(ids)
    assert len(list((out / "1.0" / "bundles").glob("*.json"))) == 4
    suite = ET.fromstring((out / "1.0" / "junit.xml").read_bytes()).find("testsuite")
    assert suite.get("failures") == "4"


def test_reports_are_cut_to_their_limits_with_a_marker(tmp_path):
    import xml.etree.ElementTree as ET
    from conformance.corpus import store
    from conformance.report.bundles import write_bundles
    from conformance.report.document import encode_report, to_json
    from conformance.report.junit import junit_xml
    from conformance.run.process import Settings
    from conformance.corpus.selection import select
    from conformance.run.suite import Options, run_suite
    vectors = select(store.load(corpus_dir("1.0")), ["arithmetic/ADD/*"])
    n = len(vectors)
    result = run_suite([faulty("wrong-result", tmp_path, "*")], vectors, [],
                       Options(repeat=0, settings=Settings("1.0", timeout=5), trace_sample=False))
    full = to_json(result, {})
    assert len(full["implementations"][0]["failures"]) == n and "truncated" not in full
    size = len(encode_report(full))
    small = to_json(result, {}, limit=size // 2)
    (impl,) = small["implementations"]
    assert len(encode_report(small)) <= size // 2 and "truncated" in small
    assert len(impl["failed_ids"]) == n and impl["failures_left_out"] == n - len(impl["failures"]) > 0
    xml = junit_xml(result)
    assert "junit.xml size limit" not in xml
    cut = junit_xml(result, limit=len(xml) // 2)
    assert len(cut) < len(xml) and "[left out: junit.xml size limit]" in cut
    assert ET.fromstring(cut).get("failures") == str(n)
    bundles = write_bundles(result, tmp_path / "b", max_bundles=3, max_bytes=2_000)
    assert len(bundles) == 3
    doc = json.loads(next(iter(bundles.values())).read_text())
    assert "bundle cut to 2000 bytes" in doc["truncated"] and doc["vector"]["id"].startswith("arithmetic/ADD/")
