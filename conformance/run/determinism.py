"""Determinism checks: the same vectors again in fresh processes under a perturbed environment
(hash seed, time zone, locale) and in a shuffled order, and implementations compared with each
other. A conforming implementation's results depend on the request only (chapter 1.1), so any
difference between two runs of the same vector is a failure.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from conformance.run.compare import Mismatch, compare_result

# Each pass uses the next perturbation. TZ values are POSIX rules, valid without a zoneinfo
# database; LC_ALL values exist on every POSIX system (C.UTF-8 on glibc >= 2.35 and musl).
PERTURBATIONS: tuple[dict[str, str], ...] = (
    {"PYTHONHASHSEED": "1", "TZ": "XST+11", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
    {"PYTHONHASHSEED": "4093597281", "TZ": "YST-13:45", "LC_ALL": "POSIX", "LANG": "C"},
    {"PYTHONHASHSEED": "271828", "TZ": "ZST-5:30ZDT,M3.5.0,M10.5.0", "LC_ALL": "C", "LANG": "POSIX"},
)


# The variables a pass sets; a replay bundle records their values for every pass.
ENV_KEYS: tuple[str, ...] = tuple(sorted({k for p in PERTURBATIONS for k in p}))
MAIN_PASS = "main pass: environment as given, corpus order"


def environment_of(env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The values of ENV_KEYS in ``env`` (default: this process's environment); None = unset."""
    env = os.environ if env is None else env
    return {k: env.get(k) for k in ENV_KEYS}


def apply(recorded: Mapping[str, str | None], base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base_env`` (default: this process's) with recorded values set, and None values unset."""
    env = dict(os.environ if base_env is None else base_env)
    for key, value in recorded.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass(frozen=True)
class Perturbation:
    index: int
    env: dict[str, str]
    order_seed: int

    @property
    def recorded(self) -> dict[str, str | None]:
        return environment_of(self.env)

    def describe(self) -> str:
        perturbed = PERTURBATIONS[self.index % len(PERTURBATIONS)]
        shown = ", ".join(f"{k}={self.env[k]}" for k in sorted(perturbed) if k != "LANG")
        return f"pass {self.index + 1}: fresh processes, {shown}, order shuffled (seed {self.order_seed})"


def perturbation(index: int, seed: int, base_env: Mapping[str, str] | None = None) -> Perturbation:
    env = dict(os.environ if base_env is None else base_env)
    env.update(PERTURBATIONS[index % len(PERTURBATIONS)])
    return Perturbation(index, env, seed + index)


def shuffled(ids: Sequence[str], order_seed: int) -> list[str]:
    out = list(ids)
    random.Random(order_seed).shuffle(out)
    return out


def reply_signature(reply: Any) -> Any:
    """What must be identical between two runs: the result and stage, or the failure kind."""
    if reply is None:
        return ("missing",)
    if reply.failure is not None:
        return ("failure", reply.failure)
    message = reply.message
    if message.get("type") == "error":
        return ("error", message.get("code"))
    return ("result", message.get("result"), message.get("stage"))


def differences(first: Any, second: Any, label: str) -> list[Mismatch]:
    """How a second run of a vector differs from the first (empty when identical)."""
    a, b = reply_signature(first), reply_signature(second)
    if a == b:
        return []
    if a[0] == b[0] == "result":
        found = [Mismatch(f"{m.field}", m.expected, m.actual, "nondeterministic")
                 for m in compare_result(a[1], b[1])]
        if a[2] != b[2]:
            found.append(Mismatch("stage", a[2], b[2], "nondeterministic"))
        return [Mismatch(f"{label}: {m.field}", m.expected, m.actual, m.category) for m in found] or \
            [Mismatch(label, a, b, "nondeterministic")]
    return [Mismatch(label, describe(a), describe(b), "nondeterministic")]


def describe(signature: tuple) -> str:
    if signature[0] == "result":
        result = signature[1] if isinstance(signature[1], dict) else {}
        return f"result {result.get('status')}/{result.get('error')}"
    return " ".join(str(s) for s in signature)
