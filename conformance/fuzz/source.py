"""The ``fuzz`` source of the committed corpus: promoted findings, filled like every source.

``conformance/fuzz/promoted.jsonl`` holds one promoted finding per line (canonical JSON, sorted
by id): its id, description, categories, opcodes and vector input. ``vectors fill`` turns each
into a Case and runs it through the reference, so the expected results are recomputed by the
filler (never copied from a campaign) and a fill stays deterministic: the file is committed and
read in order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Mapping

from conformance.constants import PACKAGE_DIR
from conformance.vector import Case, parse_bytes, parse_word

PROMOTED = PACKAGE_DIR / "fuzz" / "promoted.jsonl"


def read(path: Path = PROMOTED) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(entries, key=lambda e: e["id"])


def case_of(entry: Mapping[str, Any]) -> Case:
    """The Case whose filled input is exactly the entry's input."""
    vi = entry["input"]
    contracts = {parse_word(a): (parse_bytes(b["code"]), {parse_word(k): parse_word(v) for k, v in b["storage"].items()})
                 for a, b in vi["pre_state"]["contracts"].items()}
    to = parse_word(vi["message"]["to"])
    deployed = to in contracts
    entry_code, entry_storage = contracts.pop(to, (b"", {}))
    pol, sandbox = vi["policy"], vi["sandbox"]
    policy = {"time_access": pol["time_access"], "randomness": pol["randomness"],
              "external_call": pol["external_call"], "storage_access": sandbox["storage_access"],
              "forbidden_operations": tuple(pol["forbidden_operations"])}
    if pol["allowed_operations"] is not None:
        policy["allowed_operations"] = tuple(pol["allowed_operations"])
    return Case(id=entry["id"], description=entry["description"], code=entry_code,
                opcodes=tuple(entry["opcodes"]), categories=tuple(entry["categories"]),
                storage=entry_storage, contracts=contracts, to=to, deploy_entry=deployed,
                caller=parse_word(vi["message"]["caller"]), call_data=parse_bytes(vi["message"]["call_data"]),
                block_time=parse_word(vi["context"]["block_time"]),
                random_seed=parse_bytes(vi["context"]["random_seed"]), policy=policy,
                limits=dict(sandbox["limits"]), source="fuzz", isolation_level=sandbox["isolation_level"])


def cases(path: Path = PROMOTED) -> Iterator[Case]:
    for entry in read(path):
        yield case_of(entry)
