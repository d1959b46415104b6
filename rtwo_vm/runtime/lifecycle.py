"""The 10-stage execution lifecycle of lifecycle.toml as a state machine (spec chapters 8, 10.4).

A :class:`Lifecycle` starts at the initial stage and moves only along the transitions of
lifecycle.toml; any other move raises :class:`IllegalTransition` and changes nothing. It keeps
the stage history with the time each stage was entered, as the clock of the service layer
gives it (the execution itself never sees a clock).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rtwo_vm.runtime.catalog import Catalog, catalog


class IllegalTransition(Exception):
    """A move the lifecycle does not allow; the lifecycle is left unchanged."""

    def __init__(self, current: str, target: str):
        super().__init__(f"illegal lifecycle transition {current} -> {target}")
        self.current = current
        self.target = target


@dataclass(frozen=True, slots=True)
class StageEntry:
    seq: int
    stage: str
    previous: str | None
    at: str

    def to_json(self) -> dict:
        return {"seq": self.seq, "stage": self.stage, "from": self.previous, "at": self.at}


class Lifecycle:
    """One context's position in the lifecycle and its history."""

    def __init__(self, clock: Callable[[], str], cat: Catalog | None = None):
        self._cat = cat or catalog()
        self._clock = clock
        self.history: list[StageEntry] = [
            StageEntry(0, self._cat.roles["initial"], None, clock())]

    @property
    def stage(self) -> str:
        return self.history[-1].stage

    @property
    def finished(self) -> bool:
        return self.stage == self._cat.roles["final"]

    def allowed(self) -> tuple[str, ...]:
        return self._cat.transitions.get(self.stage, ())

    def advance(self, target: str) -> StageEntry:
        """Move to ``target``; raise IllegalTransition if lifecycle.toml does not allow it."""
        if target not in self.allowed():
            raise IllegalTransition(self.stage, target)
        entry = StageEntry(len(self.history), target, self.stage, self._clock())
        self.history.append(entry)
        return entry

    def stages(self) -> list[str]:
        return [e.stage for e in self.history]


def is_legal_path(stages: list[str], cat: Catalog | None = None) -> bool:
    """Whether ``stages`` starts at the initial stage and follows allowed transitions."""
    cat = cat or catalog()
    if not stages or stages[0] != cat.roles["initial"]:
        return False
    return all(b in cat.transitions.get(a, ()) for a, b in zip(stages, stages[1:]))


def path_for_outcome(status: str, code: str | None, *, callee: bool, survived: bool,
                     cat: Catalog | None = None) -> list[str]:
    """The stages a context passes through for an outcome (chapter 8.3 and 10.4).

    A code raised before the running stage moves the context from the stage before the one
    whose work raised it to the rollback stage (from the initial stage if that is the first);
    a context that ran passes every stage up to accounted and then commits only if its status
    is a commit status and its effects ``survived`` (for a callee: no ancestor failed).
    """
    cat = cat or catalog()
    roles, stages = cat.roles, cat.stages
    forward = [s for s in stages if s not in (roles["commit"], roles["rollback"], roles["final"])]
    running_at = forward.index(roles["running"])
    if code is not None:
        failed_at = cat.failure_stage(code, callee=callee)
        position = forward.index(failed_at)
        if position <= running_at and failed_at != roles["running"]:
            reached = forward[:max(position, 1)]
            return reached + [roles["rollback"], roles["final"]]
    commit = status in cat.commit_statuses and survived
    return forward + [roles["commit"] if commit else roles["rollback"], roles["final"]]
