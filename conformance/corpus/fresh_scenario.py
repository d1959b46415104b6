"""Fresh scenarios of a conformance run (spec chapter 11.8.2, 11.9.5): scenario vectors generated
at run time from the run's seed, filled by the reference interpreter in the same run and never
stored, so that an implementation cannot pass a run's scenarios by recognising them.

Each is a *variant* of a selected corpus scenario, with one to three changes drawn from the seed:
a step dropped, a step repeated right after itself, two steps of the same version exchanged, or
one byte of a step's call data changed (which moves a value, a key or a selector). The versions
of the steps never decrease, as 11.9.1 requires of any scenario. A variant whose input is its
base's, or whose results are all its base's (nothing the change did was read), is drawn again, and
so is one the reference answers with INTERNAL_ERROR. Ids are ``fresh/<seed>/scenario-<n>``.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Mapping, Sequence

from conformance.corpus.fresh import PREFIX
from conformance.corpus.vector import bytes_hex, parse_bytes
from conformance.scenario.carry import MAX_STEPS
from conformance.scenario.fill import fill_input

SHARE = 10                  # one fresh scenario per SHARE vectors of the fresh sample
MAX_FRESH = 10              # fresh scenarios of a run at most
TRIES = 20                  # draws per fresh scenario before giving up on it
CHANGES = ("drop", "repeat", "swap", "call_data")


def count_for(fresh_vectors: int, selected: int) -> int:
    """How many fresh scenarios a run with a fresh sample of ``fresh_vectors`` vectors adds when
    ``selected`` scenarios are selected: one per SHARE vectors (at least one), at most MAX_FRESH;
    none without a fresh sample or without a selected scenario."""
    if fresh_vectors <= 0 or selected <= 0:
        return 0
    return min(MAX_FRESH, max(1, fresh_vectors // SHARE))


def _change(rng: random.Random, steps: list[dict[str, Any]], kind: str) -> str | None:
    """Apply one change of ``kind`` to ``steps`` (in place); what it did, or None when it cannot."""
    n = len(steps)
    if kind == "drop" and n > 1:
        i = rng.randrange(n)
        del steps[i]
        return f"step {i} dropped"
    if kind == "repeat" and n < MAX_STEPS:
        i = rng.randrange(n)
        steps.insert(i + 1, copy.deepcopy(steps[i]))
        return f"step {i} repeated"
    if kind == "swap":
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)
                 if steps[i]["spec_version"] == steps[j]["spec_version"] and steps[i] != steps[j]]
        if pairs:
            i, j = rng.choice(pairs)
            steps[i], steps[j] = steps[j], steps[i]
            return f"steps {i} and {j} exchanged"
    if kind == "call_data":
        with_data = [i for i, s in enumerate(steps) if len(s["message"]["call_data"]) > 2]
        if with_data:
            i = rng.choice(with_data)
            data = bytearray(parse_bytes(steps[i]["message"]["call_data"]))
            at = rng.randrange(len(data))
            data[at] = (data[at] + rng.randint(1, 255)) % 256
            steps[i]["message"]["call_data"] = bytes_hex(bytes(data))
            return f"byte {at} of step {i}'s call data changed"
    return None


def _variant(rng: random.Random, base: Mapping[str, Any], vid: str) -> dict[str, Any] | None:
    steps = copy.deepcopy(list(base["input"]["steps"]))
    done = []
    for _ in range(rng.randint(1, 3)):
        what = _change(rng, steps, rng.choice(CHANGES))
        if what:
            done.append(what)
    if not done:
        return None
    scenario = {"pre_state": copy.deepcopy(base["input"]["pre_state"]), "steps": steps}
    if scenario == base["input"]:
        return None
    try:
        vector = fill_input(scenario, id=vid, description=f"Fresh variant of {base['id']}: {'; '.join(done)}.",
                            source="fuzz", categories=base["tags"]["categories"], opcodes=base["tags"]["opcodes"])
    except (AssertionError, ValueError):          # INTERNAL_ERROR, or steps no longer a scenario
        return None
    if [s["result"] for s in vector["expected"]["steps"]] == [s["result"] for s in base["expected"]["steps"]]:
        return None
    vector.pop("_meta", None)       # a fresh vector is no corpus entry
    return vector


def sample(seed: int, count: int, selected: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``count`` fresh scenarios for a run of ``seed``: variants of the ``selected`` scenarios (in
    turn, from a shuffled order), each filled by the reference under its steps' versions."""
    if count <= 0 or not selected:
        return []
    rng = random.Random(f"fresh-scenarios/{seed}")
    bases = sorted(selected, key=lambda v: v["id"])
    rng.shuffle(bases)
    out: list[dict[str, Any]] = []
    for n in range(count):
        vid = f"{PREFIX}{seed}/scenario-{n:02d}"
        for attempt in range(TRIES):
            vector = _variant(rng, bases[(n + attempt) % len(bases)], vid)
            if vector is not None:
                out.append(vector)
                break
    return out
