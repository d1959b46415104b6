"""The vector author's commands (issue 20): ``vectors promote`` and ``vectors fill`` write only
into the checkout they work on, with that checkout's definitions, or refuse; findings folders,
manifests and promoted.jsonl are read bounded and checked before anything runs; a finding the
reference could not fill in reasonable time is refused; outputs are never written through a
link. The checkout cases copy the packages into tmp_path twice — an "installed" copy on
PYTHONPATH (as ``pip install .`` leaves it) and a checkout — and run the installed CLI there."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spec
from conformance.constants import project_packages
from conformance.corpus import store
from conformance.corpus import fuzz_source
from conformance.fuzz.findings import make_vector, write_findings
from conformance.fuzz.generate import generate
from conformance.fuzz.program import FuzzInput, code_of_container
from conformance.corpus.vector import content_hash
from reference_vm import assemble
from rtwo_vm.cli import main

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = project_packages(ROOT) or ()   # what pip install . copies (pyproject.toml)
LIMITS = spec.load("1.0").limits
VERSIONS = spec.names()


def run_cli(*args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of rtwo-vm ARGS in this process."""
    import io
    from contextlib import redirect_stderr, redirect_stdout
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def refused(*args: str, fragment: str = "") -> str:
    """The one-line usage error (exit 2) of rtwo-vm ARGS."""
    code, out, err = run_cli(*args)
    assert code == 2 and err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, (args, code, err[:400])
    assert "Traceback" not in err and fragment in err, (args, err)
    return err
# The installed CLI, without the working directory first on the path (python -P), as the
# rtwo-vm console script runs it.
INSTALLED_CLI = "import sys; from rtwo_vm.cli import main; sys.exit(main(sys.argv[1:]))"


# -- findings --------------------------------------------------------------------------------

def finding(index: int = 3) -> dict:
    """A finding as a campaign writes it: request ``index`` of campaign 1, reference result."""
    return make_vector(generate(1, index), 1, index, "result:x", "impl")


def looping(compute, memory_pages=None) -> dict:
    """A schema-valid finding whose entry contract loops for ever, with these limits (its
    expected result is not recomputed: nothing may run it)."""
    inp = FuzzInput(contracts={0x100: (code_of_container(assemble("top:\njump top", "1.0"), "1.0"), {})})
    inp.limits["compute"] = 100     # filled cheaply, then given the limits under test
    vector = make_vector(inp, 1, 7, "result:x", "impl")
    vector["input"]["sandbox"]["limits"]["compute"] = compute
    if memory_pages is not None:
        vector["input"]["sandbox"]["limits"]["memory_pages"] = memory_pages
    vector["_meta"]["content_hash"] = content_hash(vector)
    return vector


def findings_dir(tmp_path: Path, *vectors: dict, name: str = "findings") -> Path:
    folder = tmp_path / name
    write_findings(folder, list(vectors), 1, "1.0")
    return folder


def tree_digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


# -- the checkout a command works on (subprocess, an installed copy and a checkout) ------------

def copy_packages(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PACKAGES:
        shutil.copytree(ROOT / name, target / name, ignore=ignore)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A non-editable install: the packages in a site folder of their own."""
    site = tmp_path_factory.mktemp("site")
    copy_packages(site)
    return site


def installed_cli(site: Path, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-P", "-c", INSTALLED_CLI, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def one_line_refusal(done: subprocess.CompletedProcess, fragment: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("rtwo-vm: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert fragment in done.stderr, done.stderr


def test_promote_in_a_checkout_with_a_plain_install_writes_the_checkout_with_its_definitions(installed, tmp_path):
    checkout = tmp_path / "checkout"
    copy_packages(checkout)
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    # The checkout's definitions differ from the installed ones: its generator version.
    constants = checkout / "conformance" / "constants.py"
    constants.write_text(constants.read_text().replace('GENERATOR_VERSION = "', 'GENERATOR_VERSION = "9'))
    version = next(line.split('"')[1] for line in constants.read_text().splitlines()
                   if line.startswith("GENERATOR_VERSION"))
    site_before = tree_digest(installed)
    wanted = finding()
    found = findings_dir(tmp_path, wanted)
    work = checkout / "docs"          # anywhere inside the checkout
    work.mkdir()
    done = installed_cli(installed, work, "vectors", "promote", str(found))
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree_digest(installed) == site_before             # nothing written into site-packages
    committed = fuzz_source.read(ROOT / "conformance" / "fuzz" / "promoted.jsonl")
    entries = {e["id"]: e for e in fuzz_source.read(checkout / "conformance" / "fuzz" / "promoted.jsonl")}
    assert sorted(entries) == sorted({e["id"] for e in committed} | {wanted["id"]})
    assert entries[wanted["id"]]["input"] == wanted["input"]
    for spec_version in VERSIONS:     # a finding of a 1.0 campaign: in every version's corpus
        vectors = checkout / "conformance" / "vectors" / spec_version
        manifest = json.loads((vectors / "manifest.json").read_text())
        assert manifest["sources"]["fuzz"] == len(committed) + 1
        assert manifest["generator"] == f"rtwo-vm vectors fill {version}"
        [stored] = [v for v in store.load(vectors) if v["id"] == wanted["id"]]
        assert stored["input"] == wanted["input"] and stored["_meta"]["spec_version"] == spec_version
        assert stored["_meta"]["generator"] == f"rtwo-vm vectors fill {version}"
        if spec_version == "1.0":
            assert stored["expected"] == wanted["expected"]
    # the next fill of that checkout keeps the finding: --check finds the stored corpus identical
    check = installed_cli(installed, work, "vectors", "fill", "--check", "--second-oracle", "off")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "stored corpus is identical" in check.stdout
    assert tree_digest(installed) == site_before


def test_a_checkout_whose_packages_are_not_imported_even_first_on_the_path_is_refused(installed, tmp_path):
    # A checkout by its markers (pyproject naming rtwo-vm, conformance/corpus/definitions) whose
    # packages are not importable: the child process still runs the installed copy.
    checkout = tmp_path / "checkout"
    (checkout / "conformance" / "corpus" / "definitions").mkdir(parents=True)
    (checkout / "conformance" / "vectors").mkdir()
    shutil.copy(ROOT / "pyproject.toml", checkout / "pyproject.toml")
    site_before, checkout_before = tree_digest(installed), tree_digest(checkout)
    found = findings_dir(tmp_path, finding())
    for args in (["vectors", "promote", str(found)], ["vectors", "fill"]):
        done = installed_cli(installed, checkout, *args)
        one_line_refusal(done, "pip install -e .")
    assert tree_digest(installed) == site_before and tree_digest(checkout) == checkout_before


def test_promote_outside_a_checkout_writes_only_what_it_is_told(tmp_path):
    found = findings_dir(tmp_path, finding())
    refused("vectors", "promote", str(found), fragment="--project DIR")
    refused("vectors", "promote", str(found), "--dir", str(tmp_path / "c"), fragment="go together")
    refused("vectors", "promote", str(found), "--promoted", str(tmp_path / "p.jsonl"), fragment="go together")
    assert not (tmp_path / "c").exists() and not (tmp_path / "p.jsonl").exists()


# -- hostile findings folders, manifests and promoted.jsonl -----------------------------------

def promote_into(tmp_path: Path, found: Path, *extra: str) -> tuple[Path, Path, list[str]]:
    promoted, target = tmp_path / "out" / "promoted.jsonl", tmp_path / "out" / "corpus"
    return promoted, target, ["vectors", "promote", str(found), *extra, "--promoted", str(promoted),
                              "--dir", str(target)]


def real_manifest(**changes) -> dict:
    return {**json.loads((ROOT / "conformance" / "vectors" / "1.0" / "manifest.json").read_text()), **changes}


def plant(path: Path, content: str | bytes) -> None:
    """A file from outside: text, a FIFO ("fifo") or a link to a device ("/dev/...")."""
    if content == "fifo":
        os.mkfifo(path)
    elif isinstance(content, str) and content.startswith("/dev/"):
        path.symlink_to(content)
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def listing(name: str) -> str:
    return json.dumps(real_manifest(files=[{"path": name, "vectors": 1, "sha256": "0" * 64}]))


@pytest.mark.parametrize("name, manifest, group", [
    ("a list", "[]", None),
    ("files not a list", '{"files": "abc"}', None),
    ("files of the wrong shape", json.dumps(real_manifest(files=[1])), None),
    ("a path outside", listing("../x.jsonl"), None),
    ("not JSON", "{", None),
    ("nested deeply", "[" * 100000 + "]" * 100000, None),
    ("the manifest /dev/zero", "/dev/zero", None),
    ("the manifest a FIFO", "fifo", None),
    ("an entry /dev/zero", listing("fuzz.jsonl"), "/dev/zero"),
    ("an entry a FIFO", listing("fuzz.jsonl"), "fifo"),
    ("a line not JSON", listing("fuzz.jsonl"), "{\n"),
    ("a line not a vector", listing("fuzz.jsonl"), "[1]\n"),
    ("not UTF-8", listing("fuzz.jsonl"), b"\xff\n"),
    ("no manifest", None, None),
])
def test_a_hostile_findings_folder_is_refused_in_one_line_and_nothing_is_written(tmp_path, name, manifest, group):
    found = tmp_path / "findings"
    found.mkdir()
    if manifest is not None:
        plant(found / "manifest.json", manifest)
    if group is not None:
        plant(found / "fuzz.jsonl", group)
    promoted, target, args = promote_into(tmp_path, found)
    err = refused(*args)
    assert str(found) in err, err
    assert not promoted.exists() and not target.exists()


def test_a_finding_that_would_run_for_ever_is_refused_before_anything_runs(tmp_path):
    default = LIMITS["default"]
    cases = (("compute", looping(LIMITS["maximum"]["compute"])), ("compute", looping(default["compute"] + 1)),
             ("memory_pages", looping(default["compute"], default["memory_pages"] + 1)))
    for number, (name, vector) in enumerate(cases):
        found = findings_dir(tmp_path, vector, name=f"findings{number}")
        promoted, target, args = promote_into(tmp_path, found)
        err = refused(*args, fragment=f"its {name} limit")
        assert vector["id"] in err and str(default[name]) in err
        assert not promoted.exists() and not target.exists()


def test_the_limits_a_promoted_finding_may_ask_for():
    low, high, default = LIMITS["minimum"], LIMITS["maximum"], LIMITS["default"]

    def problems(**limits):
        vector = looping(limits.pop("compute", default["compute"]), limits.pop("memory_pages", None))
        vector["input"]["sandbox"]["limits"].update(limits)
        return fuzz_source.entry_problems({k: vector[k] for k in ("id", "description", "input")}
                                          | {"categories": vector["tags"]["categories"],
                                             "opcodes": vector["tags"]["opcodes"]})
    assert problems() == []                                               # the default sandbox
    assert problems(compute=high["compute"] + 1) == []                    # INVALID_LIMITS: nothing runs
    assert problems(compute=low["compute"] - 1) == []
    assert problems(compute=float(high["compute"])) != []                 # 1e12 is the integer 10^12
    assert problems(compute=1.5) == [] and problems(compute=True) == []   # not integers: rejected at once
    assert problems(memory_pages=high["memory_pages"]) != []
    assert problems(storage_units=high["storage_units"]) == []            # storage is charged compute


@pytest.mark.parametrize("name, content", [
    ("not JSON", b"{\n"),
    ("not an entry", b"[1]\n"),
    ("an unknown member", None),
    ("outside the fuzz group", None),
    ("listed twice", None),
    ("over the limits", None),
])
def test_a_hostile_promoted_file_is_refused_before_anything_runs(tmp_path, name, content):
    vector = finding()
    entry = {"id": vector["id"], "description": vector["description"], "categories": vector["tags"]["categories"],
             "opcodes": vector["tags"]["opcodes"], "input": vector["input"]}
    line = json.dumps(entry).encode() + b"\n"
    if name == "an unknown member":
        content = json.dumps({**entry, "expected": {}}).encode()
    elif name == "outside the fuzz group":
        content = json.dumps({**entry, "id": "arithmetic/ADD/mine"}).encode()
    elif name == "listed twice":
        content = line + line
    elif name == "over the limits":
        big = looping(LIMITS["maximum"]["compute"])
        content = json.dumps({**entry, "input": big["input"]}).encode()
    found = findings_dir(tmp_path, vector)
    promoted, target, args = promote_into(tmp_path, found)
    promoted.parent.mkdir()
    promoted.write_bytes(content)
    err = refused(*args)
    assert str(promoted) in err, err
    assert promoted.read_bytes() == content and not target.exists()


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_a_promoted_file_that_is_not_a_regular_file_is_refused(tmp_path, special):
    found = findings_dir(tmp_path, finding())
    promoted, target, args = promote_into(tmp_path, found)
    promoted.parent.mkdir()
    if special == "fifo":
        os.mkfifo(promoted)
    else:
        promoted.symlink_to(special)
    refused(*args)
    assert not target.exists()


# -- outputs: never through a link, whole or not at all -----------------------------------------

def test_promote_never_writes_through_a_link(tmp_path):
    found = findings_dir(tmp_path, finding())
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")          # an empty fuzz source: read, then written through the link
    promoted, target, args = promote_into(tmp_path, found)
    promoted.parent.mkdir()
    promoted.symlink_to(elsewhere)
    refused(*args, fragment="symbolic link")
    assert elsewhere.read_text() == "" and not target.exists()
    promoted.unlink()
    (tmp_path / "real").mkdir()
    target.symlink_to(tmp_path / "real")
    refused(*args, fragment="symbolic link")
    assert list((tmp_path / "real").iterdir()) == [] and not promoted.exists()


def test_promote_writes_whole_files_and_a_link_inside_the_corpus_stops_it_before_any_write(tmp_path):
    found = findings_dir(tmp_path, finding())
    promoted, target, args = promote_into(tmp_path, found)
    code, out, err = run_cli(*args)
    assert code == 0, err
    assert all(store.problems(target / v) == [] for v in VERSIONS) and leftovers(tmp_path / "out") == []
    corpus = target / "1.0"
    before = {p.name: p.read_bytes() for p in corpus.iterdir() if p.is_file()}
    promoted_before = promoted.read_bytes()
    # the manifest, written last, is a link: refused before any group file changes
    outside = tmp_path / "outside.json"
    outside.write_text("precious")
    (corpus / "manifest.json").unlink()
    (corpus / "manifest.json").symlink_to(outside)
    (corpus / "fuzz.jsonl").write_text("stale\n")
    refused(*args, fragment="symbolic link")
    assert outside.read_text() == "precious" and (corpus / "fuzz.jsonl").read_text() == "stale\n"
    assert promoted.read_bytes() == promoted_before
    assert {p.name for p in corpus.iterdir() if p.is_file()} == set(before)


# -- vectors strength: every argument before any work; vectors release ------------------------

def broken_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "manifest.json").write_text("[]")
    return folder


@pytest.mark.parametrize("args, fragment", [
    (["--reasons", "/nonexistent"], "cannot read the mutant reasons"),
    (["--reasons", "/dev"], "cannot read the mutant reasons"),      # files under /dev: never read
    (["--module", "no/such"], "no module reference_vm/no/such.py"),
    (["--filter", "colour=red"], "unknown filter key"),
    (["--record"], "--record writes"),                               # not inside a checkout
    (["--json", "no/such/folder/report.json"], "no such folder"),
])
def test_strength_refuses_a_bad_argument_before_reading_the_corpus(tmp_path, args, fragment):
    # The corpus named is malformed: a refusal naming the argument shows it came first.
    err = refused("vectors", "strength", "--dir", str(broken_corpus(tmp_path)), *args)
    assert fragment in err and "cannot read the corpus" not in err, err


def test_strength_never_writes_its_report_through_a_link(tmp_path):
    target = tmp_path / "precious.json"
    target.write_text("{}")
    (tmp_path / "report.json").symlink_to(target)
    err = refused("vectors", "strength", "--dir", str(broken_corpus(tmp_path)), "--json", str(tmp_path / "report.json"))
    assert "symbolic link" in err and target.read_text() == "{}"


def test_release_reads_the_corpus_bounded_and_never_writes_through_a_link(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "zero.jsonl").symlink_to("/dev/zero")
    (bad / "manifest.json").write_text(json.dumps(real_manifest(
        files=[{"path": "zero.jsonl", "vectors": 1, "sha256": "0" * 64}])))
    out = tmp_path / "out"
    refused("vectors", "release", "--dir", str(bad), "-o", str(out), fragment="not a regular file")
    assert not out.exists()
    (tmp_path / "real").mkdir()
    out.symlink_to(tmp_path / "real")
    refused("vectors", "release", "-o", str(out), fragment="symbolic link")
    assert list((tmp_path / "real").iterdir()) == []
    out.unlink()
    out.mkdir()
    digest = json.loads((ROOT / "conformance" / "vectors" / "1.0" / "manifest.json").read_text())["digest"]
    tarball = out / f"rtwo-vm-vectors-{spec.load('1.0').release}-{digest[:12]}.tar.gz"
    tarball.symlink_to(tmp_path / "precious")
    (tmp_path / "precious").write_text("precious")
    refused("vectors", "release", "-o", str(out), fragment="symbolic link")
    assert (tmp_path / "precious").read_text() == "precious" and leftovers(out) == []
