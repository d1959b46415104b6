"""CONTRIBUTING.md, "Adding a version", followed to the letter: steps 1 to 4 are carried out on
a copy of the spec package in a temporary folder, with the file contents taken from the
walkthrough's own blocks (a fence ```` ```toml spec/versions.toml ```` names the file it goes
to), and the copy is then loaded in a fresh interpreter that imports it instead of the
checkout's (PYTHONPATH): ``spec.load("1.2")``, ``rtwo-vm spec check``, ``rtwo-vm spec diff 1.1
1.2`` and the documentation pages of step 9 must all see the new version.

The loader reads its files from its own package (importlib.resources), so the copy is a whole
package, not a root handed to the loader."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^ *```(\w+) (\S+)\n(.*?)^ *```", re.M | re.S)
RTWO_VM = Path(sys.executable).parent / "rtwo-vm"


def walkthrough() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return text.split("\n## Adding a version\n", 1)[1].split("\n## ", 1)[0]


def blocks() -> dict[str, str]:
    """File named by a fence of the walkthrough -> the block's text, its indentation removed."""
    out = {}
    for _, path, body in BLOCK.findall(walkthrough()):
        lines = body.splitlines()
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        out[path] = "\n".join(line[indent:] for line in lines) + "\n"
    return out


def follow(package: Path) -> None:
    """Steps 1 to 4 of the walkthrough on ``package`` (a copy of spec/)."""
    given = blocks()
    assert set(given) == {"spec/versions.toml", "spec/versions/1.2/diff.toml",
                          "spec/versions/1.2/sections/6.5.md", "spec/CHANGELOG.md"}
    # 1. append the version
    versions = package / "versions.toml"
    versions.write_text(versions.read_text(encoding="utf-8") + "\n" + given["spec/versions.toml"],
                        encoding="utf-8")
    # 2. the diff
    folder = package / "versions" / "1.2"
    (folder / "sections").mkdir(parents=True)
    (folder / "diff.toml").write_text(given["spec/versions/1.2/diff.toml"], encoding="utf-8")
    # 3. the section as 1.1 has it, its first line naming the item, BSWAP's row after
    # POPCNT's, its definition appended
    first, _, text = (package / "versions" / "1.1" / "sections" / "6.5.md").read_text(
        encoding="utf-8").partition("\n")
    assert first == "<!-- items: N2 -->"
    popcnt = "| `0x6B` | `POPCNT` | — | `a -- popcnt(a)` |\n"
    assert popcnt in text
    text = text.replace(popcnt, popcnt + "| `0x6C` | `BSWAP` | — | `a -- bswap(a)` |\n")
    section = "<!-- items: N1 -->\n" + text.rstrip("\n") + "\n\n" + given["spec/versions/1.2/sections/6.5.md"]
    (folder / "sections" / "6.5.md").write_text(section, encoding="utf-8")
    # 4. the changelog section at the top
    changelog = package / "CHANGELOG.md"
    head, sep, rest = changelog.read_text(encoding="utf-8").partition("\n## ")
    changelog.write_text(head + "\n" + given["spec/CHANGELOG.md"] + sep + rest, encoding="utf-8")


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A folder holding a package ``spec`` that is the checkout's spec/ with 1.2 added."""
    where = tmp_path_factory.mktemp("with-1.2")
    shutil.copytree(ROOT / "spec", where / "spec", ignore=shutil.ignore_patterns("__pycache__"))
    follow(where / "spec")
    return where


def run(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(list(argv), cwd=copy, env=env, capture_output=True, text=True, timeout=240)


def python(copy: Path, code: str) -> subprocess.CompletedProcess:
    return run(copy, sys.executable, "-c", code)


def test_the_copy_is_the_package_imported(copy):
    done = python(copy, "import spec; print(spec.__file__); print(spec.names())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(copy / "spec" / "__init__.py"), "('1.0', '1.1', '1.2')"]


def test_the_new_version_loads_with_its_instruction_and_price(copy):
    done = python(copy, "import json, spec\n"
                        "new, old = spec.load('1.2'), spec.load('1.1')\n"
                        "print(json.dumps({'bswap': new.by_mnemonic['BSWAP'].opcode,"
                        " 'in_1_1': 'BSWAP' in old.by_mnemonic, 'block': new.schedule['hash']['block_cost'],"
                        " 'old_block': old.schedule['hash']['block_cost'], 'containers': new.container_versions,"
                        " 'count': len(new.instructions) - len(old.instructions),"
                        " 'release': new.release, 'latest': spec.latest()}))")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"bswap": 0x6C, "in_1_1": False, "block": 2, "old_block": 3,
                                       "containers": [[1, 0], [1, 1], [1, 2]], "count": 1,
                                       "release": "1.2.0", "latest": "1.2"}


def test_spec_check_accepts_it_and_spec_diff_shows_every_change_with_its_item(copy):
    check = run(copy, str(RTWO_VM), "spec", "check")
    assert check.returncode == 0 and check.stdout.strip().endswith("OK"), check.stdout + check.stderr
    diff = run(copy, str(RTWO_VM), "spec", "diff", "1.1", "1.2", "--json")
    assert diff.returncode == 0, diff.stderr
    doc = json.loads(diff.stdout)
    assert doc["problems"] == []
    assert [item["id"] for item in doc["items"]] == ["1.2/N1", "1.2/P1"]
    text = run(copy, str(RTWO_VM), "spec", "diff", "1.1", "1.2").stdout
    assert "spec 1.1 -> 1.2: 2 items, 2 data differences, 1 prose sections" in text
    assert re.search(r"added +instructions instruction BSWAP: .*\[1\.2/N1\]", text)
    assert re.search(r"changed +schedule hash\.block_cost: 3 -> 2 +\[1\.2/P1\]", text)
    assert re.search(r"changed +section 6\.5 +\[1\.2/N1\]", text)
    assert "+**BSWAP** pushes *a* with its W/8 bytes in reverse order" in text
    show = run(copy, str(RTWO_VM), "spec", "show", "BSWAP", "--spec-version", "1.2")
    assert show.returncode == 0 and json.loads(show.stdout)["opcode"] == 0x6C


def test_a_from_that_is_not_the_base_value_is_refused(copy, tmp_path):
    wrong = tmp_path / "wrong"
    shutil.copytree(copy / "spec", wrong / "spec")
    diff = wrong / "spec" / "versions" / "1.2" / "diff.toml"
    text = diff.read_text(encoding="utf-8")
    assert "from = 3\n" in text
    diff.write_text(text.replace("from = 3\n", "from = 6\n"), encoding="utf-8")   # 1.0's value
    done = python(wrong, "import spec; spec.load('1.2')")
    assert done.returncode != 0
    assert "VersionError: versions/1.2/diff.toml item P1: schedule.hash.block_cost is 3, not 6" in done.stderr


def test_the_docs_gain_the_version_without_an_edit(copy):
    """Step 9: the generated pages of the copy name 1.2 as the newest and keep 1.1 and 1.0."""
    done = python(copy, "import json\nfrom rtwo_vm.site import pages as docgen, versions as docversions\n"
                        "p = docgen.pages()\n"
                        "print(json.dumps({'paths': sorted(p), 'nav': docversions.version_nav(),"
                        " 'new': p['reference/instructions/bswap.md'], 'old': p['v1.1/reference/instructions.md'],"
                        " 'changes': p['changes/1.2.md']}))")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    for path in ("changes/1.1.md", "changes/1.2.md", "v1.1/spec/06-instructions.md",
                 "v1.0/reference/instructions.md", "spec/06-instructions.md"):
        assert path in doc["paths"], path
    assert [next(iter(entry)) for entry in doc["nav"]] == [
        "What changed in 1.2", "What changed in 1.1", "Spec 1.1", "Spec 1.0"]
    assert "| since | spec 1.2 ([item N1](../../changes/1.2.md#n1)) |" in doc["new"]
    assert "BSWAP" not in doc["old"] and "v1.1/reference/instructions/bswap.md" not in doc["paths"]
    assert "reference/instructions/bswap.md" in doc["paths"]
    assert "| `schedule hash.block_cost` | changed | `3` | `2` |" in doc["changes"]
    assert "**Changelog** (6.5, `instructions.toml`): **BSWAP** (`0x6C`), base cost 2:" in doc["changes"]
