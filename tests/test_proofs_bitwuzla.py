"""Bitwuzla's place: the first attempt at a re-check, never a prover (proofs/budgets.toml).

Bitwuzla has a wall clock only. In the profiles ``per-claim`` and ``call-arithmetic`` it
re-checks first (``bitwuzla-first``): the sat or unsat it returns is kept as the second
answer, what it does not decide in time goes to the next re-checker (a resource limit).
The row's status comes from its provers alone, so it is the same whether Bitwuzla answers
in time or not; a prover that answers unsat to everything is caught by Bitwuzla, and by
the next re-checker when Bitwuzla is too late; a Bitwuzla that answers unsat to everything
proves nothing. The row here is ``call_flag_limit_and_undo`` at CALL (profile per-claim:
z3 proves claim by claim) with a claim of our own: x < 3 gives x < 4, not x < 2.
"""

from __future__ import annotations

import pytest
import z3

from proofs import cache, claims, solvers, verdicts
from proofs.registry import Query, Theorem
from proofs.runner import COUNTEREXAMPLE, DISAGREES, PROVED, Options
from conftest import BASE_VERSION as V, need_bitwuzla

FIRST = "bitwuzla (at most 10 s, incremental script)"
CVC5 = "cvc5 (incremental script)"


def _row(*claims_):
    x = z3.BitVec("x", 64)
    built = [z3.Implies(z3.ULT(x, 3), z3.ULT(x, bound)) for bound in claims_]
    query = Query(built, [z3.ULE(x, 100)])
    th = Theorem("call_flag_limit_and_undo", "CALL", (64,), lambda bits, model=None: query)
    verdicts.use(Options(version=V))
    profile = solvers.load().profile(th.name, th.profile, th.opcode)
    assert (profile.prove, profile.recheck) == (("z3",), ("bitwuzla-first", "cvc5"))
    (status, extra, _), = claims.check_rows([(th, query)], 64)
    return status, extra


def _prover_lies(monkeypatch):
    """z3 answers unsat to every claim (a claim's own text expects unsat; the premises'
    query does not), as a broken prover would."""
    real = solvers.check

    def check(config, text, wall_seconds, cached=True, model=True):
        if config.solver == "z3" and "(set-info :status unsat)" in text:
            return solvers.Answer(solvers.UNSAT)
        return real(config, text, wall_seconds, cached, model)
    monkeypatch.setattr(solvers, "check", check)


def _bitwuzla_says(monkeypatch, status: str):
    """A Bitwuzla (planted: installed or not) that answers ``status`` to every check."""
    monkeypatch.setattr(solvers, "available", lambda name: True)
    monkeypatch.setattr(solvers, "_bitwuzla_answers", lambda config, text, wall: [
        solvers.Answer(status)] * text.count("(check-sat)"))


def test_a_lying_prover_is_caught_by_bitwuzla(monkeypatch):
    need_bitwuzla()
    _prover_lies(monkeypatch)
    status, extra = _row(4, 2)
    assert (status, extra["second_status"]) == (DISAGREES, DISAGREES)
    assert extra["rechecked_by"] == {FIRST: 2}


def test_a_lying_prover_is_caught_by_cvc5_when_bitwuzla_is_too_late(monkeypatch):
    _prover_lies(monkeypatch)
    _bitwuzla_says(monkeypatch, solvers.TIMEOUT)
    status, extra = _row(4, 2)
    assert (status, extra["second_status"]) == (DISAGREES, DISAGREES)
    assert extra["rechecked_by"] == {CVC5: 2}


def test_a_bitwuzla_that_answers_unsat_to_everything_proves_nothing(monkeypatch):
    _bitwuzla_says(monkeypatch, solvers.UNSAT)
    status, extra = _row(4, 2)
    assert status == COUNTEREXAMPLE and extra["counterexample"]["model"] == "[x = 2]"
    assert extra["second_status"] == DISAGREES and extra["rechecked_by"] == {FIRST: 2}


def test_the_verdict_is_the_same_whether_bitwuzla_answers_in_time_or_not(monkeypatch):
    """A machine so loaded that Bitwuzla never answers within its seconds: the same status,
    provers, their work units and agreement; only who re-checked differs."""
    need_bitwuzla()
    in_time = _row(4, 5, 200)
    assert in_time[0] == PROVED and in_time[1]["rechecked_by"] == {FIRST: 3}
    _bitwuzla_says(monkeypatch, solvers.TIMEOUT)
    too_late = _row(4, 5, 200)
    assert too_late[1]["rechecked_by"] == {CVC5: 3}
    same = ("proved_by", "second_status", "premises", "antecedents")
    assert too_late[0] == in_time[0]
    assert [too_late[1][k] for k in same] == [in_time[1][k] for k in same]
    assert too_late[1]["resources"]["z3"] == in_time[1]["resources"]["z3"]


def test_the_cache_keeps_bitwuzlas_sat_and_unsat_never_its_timeout(tmp_path):
    need_bitwuzla()
    kept = cache.VerdictCache(tmp_path / "cache", tmp_path / "key")
    config = solvers.load().configs["bitwuzla-first"]
    calls = []

    def solve(status):
        def run():
            calls.append(status)
            return [solvers.Answer(status)]
        return run
    for text, status in (("(check-sat) ; a", solvers.UNSAT), ("(check-sat) ; b", solvers.TIMEOUT)):
        for _ in range(2):
            assert kept.through("script", config, text, solve(status))[0].status == status
    assert calls == [solvers.UNSAT, solvers.TIMEOUT, solvers.TIMEOUT]   # unsat solved once
    assert kept.stats["hits"] == 1 and kept.stats["stored"] == 1


@pytest.mark.parametrize("edit, says", [
    (('prove = ["z3"]\nrecheck = ["bitwuzla-first", "cvc5"]',
      'prove = ["bitwuzla-first", "z3"]\nrecheck = ["cvc5"]'),
     "profile per-claim: bitwuzla-first has no resource limit (a wall clock only): it may "
     "re-check, never prove"),
    (("rlimit = 300_000\n", "rlimit = 300_000\nseconds = 5\n"),
     "config z3-recheck.seconds: a number of seconds in (0, 1e6), for bitwuzla only"),
])
def test_a_budgets_file_that_lets_bitwuzla_prove_is_refused(tmp_path, capsys, edit, says):
    from rtwo_vm.cli import main
    text = solvers.BUDGETS_FILE.read_text()
    assert edit[0] in text
    (tmp_path / "b.toml").write_text(text.replace(*edit, 1))
    assert main(["prove", "--budgets", str(tmp_path / "b.toml"), "--opcode", "NOP"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err
