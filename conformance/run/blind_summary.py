"""What a run's blinding did (conformance.run.blind): the transformations' descriptions, the
verdicts, the run's Summary (report.json's ``blinding``) and its one printed line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

TRANSFORMATIONS: dict[str, str] = {
    "addresses": "contract addresses, the entry address and the caller exchanged for fresh ones "
                 "(in the contracts map, the message, push operands, call-data words and storage "
                 "values); result addresses mapped back; not for a request that uses transient storage",
    "code_tail": "unreachable instructions appended after a program's last halting instruction",
    "data_tail": "bytes appended to a data section no DATASIZE reads",
    "call_data_tail": "bytes appended to call data whose size is not read",
    "block_time": "the block time changed",
    "random_seed": "the random seed changed",
    "limits": "sandbox limits away from the vector's boundary raised",
    "unread_slot": "a storage slot added at a fresh key",
    "decoy_contract": "a contract no execution reaches added at a fresh address",
}
ORDER = tuple(TRANSFORMATIONS)
PRESERVED, VALUES, UNBLINDED = "preserved", "values", "unblinded"


@dataclass
class Summary:
    """What a run's blinding did: per transformation the vectors it was applied to, per
    verdict the vectors, the reference's runs and the time it took."""

    seed: int
    vectors: int = 0
    applied: dict[str, int] = field(default_factory=lambda: {name: 0 for name in ORDER})
    verdicts: dict[str, int] = field(default_factory=lambda: {PRESERVED: 0, VALUES: 0, UNBLINDED: 0})
    unblinded: list[str] = field(default_factory=list)
    reference_runs: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"on": True, "seed": self.seed, "vectors": self.vectors, "applied": dict(self.applied),
                "verdicts": dict(self.verdicts), "unblinded": self.unblinded[:100],
                "reference_runs": self.reference_runs, "seconds": round(self.seconds, 3),
                "transformations": dict(TRANSFORMATIONS)}

OFF_NOTE = "blinding off: a lookup could pass"
OFF = {"on": False, "note": OFF_NOTE}


def line(doc: Mapping[str, Any]) -> str:
    """One line saying what a run's blinding did (Summary.to_json), or that it was off."""
    if not doc.get("on"):
        return OFF_NOTE
    used = ", ".join(f"{name} {n:,}" for name, n in doc["applied"].items() if n)
    text = (f"blinding: {doc['vectors']:,} requests blinded for seed {doc['seed']} ({used}); "
            f"expected results from the reference ({doc['reference_runs']:,} runs, {doc['seconds']:.1f} s)")
    if doc["verdicts"].get(UNBLINDED):
        text += f"; {doc['verdicts'][UNBLINDED]} sent as published"
    return text
