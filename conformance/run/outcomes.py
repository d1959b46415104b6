"""The judgement of one vector's replies: the failure kinds, the records of each pass
(:class:`PassRun`) and of each vector (:class:`Outcome`), the main pass's verdict
(:func:`evaluate`), the digest two runs must share (:func:`signature`), and the memory budget
for the responses a report keeps (:class:`Keeper`). Used by conformance.run.suite, which runs
the passes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.run import determinism
from conformance.run.compare import Mismatch, capped, compare_reply
from conformance.corpus.fresh import is_fresh
from conformance.protocol import reply_problems
from conformance.run.process import Reply
from conformance.run.tracediff import Divergence

# Process-level failures, as reported per vector.
PROCESS_FAILURES = ("crash", "timeout", "garbage", "oversized", "wrong_id", "extra_output", "protocol",
                    "unavailable")
# Failure kinds ranked for triage: real wrong answers first, then the adapter's misbehaviour,
# then what the implementation says it cannot do.
WRONG_ANSWERS = ("result", "resource", "resource_bound", "stage", "internal", "nondeterministic", "trace",
                 "disagreement")
UNSUPPORTED = "unsupported"
KINDS = WRONG_ANSWERS + PROCESS_FAILURES + ("adapter_error", UNSUPPORTED)
KEPT_MESSAGES = 64 << 20    # bytes of wrong responses kept for the report (then only their start)
# Outcome statuses: a listed known failure that fails is an expected failure (xfail); one that
# passes is "now passing" (xpass) and fails the run until it is removed from its list.
STATUSES = ("pass", "fail", "xfail", "xpass")
PRECEDING_KEPT = 64     # preceding vectors of the same process recorded per pass in a bundle


@dataclass
class PassRun:
    """One execution of a vector: the pass, its environment, and what came back."""

    name: str                                # "main pass", "determinism pass 1", ...
    label: str                               # how the pass ran (determinism.MAIN_PASS, ...)
    environment: dict[str, str | None]       # values of determinism.ENV_KEYS, None = unset
    order_seed: int | None                   # None: corpus order
    reply: Reply | None
    differs: bool = False                    # differs from the main pass (a determinism failure)
    response: str = ""                       # what came back, described (when the reply keeps no message)

    def __post_init__(self) -> None:
        if not self.response and self.reply is not None and (self.reply.message is not None
                                                            or self.reply.failure is not None):
            self.response = determinism.describe(determinism.reply_signature(self.reply))

    def to_json(self) -> dict[str, Any]:
        preceded, count = self.reply.preceded_by(PRECEDING_KEPT) if self.reply else ([], 0)
        return {"name": self.name, "pass": self.label, "environment": self.environment, "order_seed": self.order_seed,
                "preceded_by": preceded, "preceded_count": count, "differs": self.differs,
                "response": self.response or determinism.describe(determinism.reply_signature(self.reply)),
                "message": self.reply.message if self.differs and self.reply else None,
                "log": self.reply.log_path if self.reply else None}


@dataclass
class Outcome:
    vector_id: str
    status: str                                   # one of STATUSES
    failures: list[Mismatch] = field(default_factory=list)
    reason: str = ""                              # process failure detail
    reply: dict[str, Any] | None = None           # the main pass's response message
    divergence: Divergence | None = None
    known: str = ""                               # the known-failure entry's reason, when listed
    passes: list[PassRun] = field(default_factory=list)
    correct: bool = False                         # the main pass's result matches the expected one
    seconds: float = 0.0                          # the adapter's time on the vector in the main pass
    signature: str = ""                           # digest of the main pass's response (determinism)
    scenario: Any = None                          # a failing scenario's scenario_judge.StepDivergence

    @property
    def categories(self) -> list[str]:
        return sorted({m.category for m in self.failures})

    @property
    def kind(self) -> str:
        """The failure kind that ranks this vector in the triage (KINDS order)."""
        cats = self.categories
        return min(cats, key=KINDS.index) if cats and all(c in KINDS for c in cats) else (cats or ["?"])[0]

    @property
    def fresh(self) -> bool:
        return is_fresh(self.vector_id)

    @property
    def failed(self) -> bool:
        """Whether the implementation got this vector wrong (listed or not)."""
        return self.status in ("fail", "xfail")


def evaluate(vector: Mapping[str, Any], reply: Reply | None) -> Outcome:
    """Judge the main pass's reply to one vector."""
    vid = vector["id"]
    if reply is None:
        return Outcome(vid, "fail", [Mismatch("response", "a response", "none", "protocol")], "no response")
    if reply.failure is not None:
        return Outcome(vid, "fail", [Mismatch("response", "a response", reply.failure, reply.failure)], reply.detail)
    message = reply.message
    assert message is not None      # a reply without a failure holds the message (AdapterProcess.take_head)
    problems = reply_problems(message, vid, traced=False)
    if problems:
        return Outcome(vid, "fail", [Mismatch("response", "a result", p, "protocol") for p in problems],
                       "; ".join(problems), message)
    if message["type"] == "error":
        code = message.get("code")
        detail = f"adapter error {code}: {str(message.get('message', ''))[:300]}"
        kind = UNSUPPORTED if code == "UNSUPPORTED_INPUT" else "adapter_error"
        return Outcome(vid, "fail", [Mismatch("response", "a result", code, kind)], detail, message)
    failures = capped(compare_reply(vector, message))
    return Outcome(vid, "fail" if failures else "pass", failures, "", message, correct=not failures)


def signature(reply: Reply | None) -> str:
    """A digest of what must be identical between two runs of a vector."""
    return hashlib.sha256(json.dumps(determinism.reply_signature(reply), sort_keys=True,
                                     default=str).encode()).hexdigest()


class Keeper:
    """Keeps the responses a report needs within a memory budget: a correct result is the
    vector's expected one (nothing kept), a wrong one is kept while the budget lasts, then
    only its start."""

    def __init__(self, budget: int = KEPT_MESSAGES):
        self.left = budget

    def keep(self, outcome: Outcome, vector: Mapping[str, Any], reply: Reply | None) -> None:
        message = outcome.reply
        if message is None:
            return
        if outcome.correct:
            outcome.reply = {"type": "result", "id": message.get("id"), "result": vector["expected"]["result"],
                             "stage": message.get("stage")}
            return
        weight = 64 + (reply.size if reply is not None else 0) * 8
        if weight <= self.left and weight <= 1 << 20:
            self.left -= weight
            return
        text = json.dumps(message, default=str)[:2000]
        outcome.reply = {"type": message.get("type"), "id": message.get("id"),
                         "truncated": f"response of {reply.size if reply else len(text)} bytes not kept; "
                                      f"it starts: {text}"}


def small(message: dict[str, Any] | None) -> dict[str, Any] | None:
    if message is None:
        return None
    text = json.dumps(message, default=str)
    return message if len(text) <= 16384 else {"type": message.get("type"), "truncated": text[:2000]}


def light(reply: Reply) -> Reply:
    """The reply as a pass record keeps it: without its message (the outcome holds it)."""
    return Reply(reply.vector_id, None, reply.failure, reply.detail[:2000], reply.history, reply.position,
                 reply.log_path, reply.seconds, reply.size)
