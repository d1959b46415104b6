"""Agreement checks in the verdict cache (proofs/cache.py ``through_row``): an agreement
check that agreed is not run again on the same code, data, tools and options, with the same
row; its entry is sealed like an answer (one sealed with another key is refused and the check
runs again); a check that finds a difference is never kept; other options run it again."""

from __future__ import annotations

import json
from pathlib import Path

from proofs import cache
from proofs.runner import AGREES
from rtwo_vm.cli import main

ADD = ["prove", "--opcode", "ADD", "--width", "64", "--no-table", "--quiet"]


def prove(folder: Path, key: Path, *more: str) -> dict:
    main([*ADD, *more, "--cache", str(folder), "--cache-key", str(key), "--report", "r.json"])
    return json.loads(Path("r.json").read_text())


def agreement(doc: dict) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("seconds", "cache")}
            for r in doc["results"] if r["theorem"].startswith("agreement_")]


def test_an_agreeing_check_is_kept_and_not_run_again(tmp_path):
    first = prove(tmp_path / "c", tmp_path / "k")
    rows = agreement(first)
    # ADD at 64 bits: z3's branch inputs and the derandomized hypothesis examples, both agree.
    assert {r["theorem"] for r in rows} == {"agreement_branches", "agreement_hypothesis"}
    assert {r["status"] for r in rows} == {AGREES}
    assert first["summary"]["cache"]["checks_run"] == 2
    assert first["summary"]["cache"]["checks_cached"] == 0
    again = prove(tmp_path / "c", tmp_path / "k")
    assert again["summary"]["cache"]["checks_cached"] == 2
    assert again["summary"]["cache"]["checks_run"] == 0
    assert agreement(again) == rows
    # Other hypothesis examples are another check: run again, and kept beside the first.
    other = prove(tmp_path / "c", tmp_path / "k", "--samples", "3")
    assert other["summary"]["cache"]["checks_run"] == 1          # the hypothesis check
    assert other["summary"]["cache"]["checks_cached"] == 1       # the branches: same inputs


def test_an_entry_sealed_with_another_key_is_refused_and_the_check_runs(tmp_path):
    prove(tmp_path / "c", tmp_path / "k")
    doc = prove(tmp_path / "c", tmp_path / "other-key")
    got = doc["summary"]["cache"]
    assert got["checks_cached"] == 0 and got["checks_run"] == 2 and got["refused"] >= 2


def test_a_difference_is_never_kept_and_a_forged_agreement_is_refused(tmp_path):
    folder, key = tmp_path / "c", tmp_path / "k"
    store = cache.open_cache(str(folder), str(key))
    found = {"theorem": "agreement_branches", "opcode": "ADD", "width": 64,
             "status": "disagrees", "cases": 3, "findings": [{"inputs": {}, "differences": []}]}
    assert store.through_row(["a check"], lambda: found) == found
    assert store.lookup_row(cache.row_key(["a check"])) is None       # not kept: runs again
    ran = []
    store.through_row(["a check"], lambda: ran.append(1) or found)
    assert ran == [1]
    # An agreeing row is kept; edited into another row, its MAC no longer verifies.
    agrees = {**found, "status": AGREES, "findings": []}
    store.through_row(["b check"], lambda: agrees)
    path = next(p for p in (folder / "v1").glob("??/*.json")
                if p.stem == cache.row_key(["b check"]))
    entry = json.loads(path.read_text())
    assert entry["row"] == {k: agrees[k] for k in ("theorem", "opcode", "width", "status", "cases")}
    entry["row"]["opcode"] = "SUB"
    path.write_text(json.dumps(entry))
    assert store.lookup_row(cache.row_key(["b check"])) is None
    assert store.take_stats()["refused"] == 1


def test_a_carried_cache_answers_rows_from_the_drivers_entries_and_hands_back_new_ones(tmp_path):
    """prove --ray: a worker's cache (proofs/carried.py) is the driver's verified entries;
    what it checks is handed back and sealed by the driver, never written by the worker."""
    from proofs.carried import CarriedCache, store_carried
    driver = cache.open_cache(str(tmp_path / "c"), str(tmp_path / "k"))
    agrees = {"theorem": "agreement_branches", "opcode": "ADD", "width": 64, "status": AGREES,
              "cases": 5, "findings": []}
    driver.through_row(["known"], lambda: agrees)
    worker = CarriedCache(driver.entries())
    ran: list[str] = []
    assert worker.through_row(["known"], lambda: ran.append("known") or agrees)["cases"] == 5
    other = {**agrees, "opcode": "SUB", "cases": 7}
    assert worker.through_row(["new"], lambda: ran.append("new") or other) == other
    assert ran == ["new"] and worker.take_stats()["checks_cached"] == 1
    handed = worker.take_new()
    assert list(handed) == [cache.row_key(["new"])]
    assert driver.lookup_row(cache.row_key(["new"])) is None      # the worker wrote nothing
    store_carried(driver, handed)
    assert driver.lookup_row(cache.row_key(["new"]))["cases"] == 7
