"""Solver configurations and their deterministic budgets (``proofs/budgets.toml``).

A *configuration* is a solver with its options and a resource limit that does not depend on
time or load: z3's ``rlimit`` and cvc5's ``rlimit-per`` count the solvers' own work units, so
the same query gets the same answer on a quiet machine and on a busy one. A wall-clock limit
remains only as a safety net; hitting it is ``timeout``, never ``unknown``. Bitwuzla has no
resource limit, only its time limit (a configuration's ``seconds``, else the safety net): it
may re-check, never prove (``load`` refuses a profile that lets it), so that no status
depends on time; budgets.toml's ``bitwuzla-first`` is its first attempt at some re-checks,
whose sat or unsat is kept and whose timeouts go to the next re-checker.

Every query is solved from its SMT-LIB 2 text in a fresh solver (for z3: a fresh context),
so the answer depends on the text alone, not on what the process solved before.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spec.files import FileRefused, read_bounded

SAT, UNSAT, UNKNOWN, TIMEOUT = "sat", "unsat", "unknown", "timeout"
DECIDED = (SAT, UNSAT)
BUDGETS_FILE = Path(__file__).with_name("budgets.toml")
SOLVERS = ("z3", "cvc5", "bitwuzla")


@dataclass(frozen=True)
class Config:
    name: str                       # the key in budgets.toml, e.g. "cvc5-int"
    solver: str                     # z3 | cvc5 | bitwuzla
    rlimit: int | None              # resource units (None: bitwuzla, wall clock only)
    options: tuple = ()             # (option, value) pairs, in file order
    script: bool = False            # a row's claims in one incremental script (smtlib.script)
    logic: str | None = None        # the logic the solver is told instead of the text's own
    seconds: float | None = None    # bitwuzla: its wall-clock limit per check (a first attempt)

    @property
    def label(self) -> str:
        """How the report names it: the solver and every non-default setting."""
        opts = ", ".join([f"{k}={v}" for k, v in self.options]
                         + ([f"at most {self.seconds:g} s"] if self.seconds else [])
                         + (["incremental script"] if self.script else [])
                         + ([f"logic {self.logic}"] if self.logic else []))
        return f"{self.solver} ({opts})" if opts else self.solver

    def to_json(self) -> dict:
        return {"solver": self.solver, "options": dict(self.options), "rlimit": self.rlimit,
                "script": self.script, "logic": self.logic, "seconds": self.seconds}

    def told(self, text: str) -> str:
        """``text`` with its ``(set-logic …)`` replaced by the configuration's logic, if any."""
        if self.logic is None or not text.startswith("(set-logic "):
            return text
        return f"(set-logic {self.logic})" + text[text.index(")") + 1:]


@dataclass(frozen=True)
class Profile:
    name: str
    prove: tuple[str, ...]          # configurations tried in order until one decides
    recheck: tuple[str, ...]        # re-checking configurations (the first that decides)


@dataclass(frozen=True)
class Budgets:
    wall_seconds: float
    configs: dict
    profiles: dict
    theorems: dict = field(default_factory=dict)   # theorem name -> profile name
    source: str = ""

    def profile(self, theorem_name: str, declared: str | None = None,
                opcode: str | None = None) -> Profile:
        """The profile of a theorem row: ``[theorem]`` "name@OPCODE", then "name", then the
        declaration's own, then "default"."""
        name = (self.theorems.get(f"{theorem_name}@{opcode}") or self.theorems.get(theorem_name)
                or declared or "default")
        if name not in self.profiles:
            raise ValueError(f"theorem {theorem_name!r}: no budget profile {name!r} in "
                             f"{self.source}")
        return self.profiles[name]

    def to_json(self) -> dict:
        return {"file": self.source, "wall_seconds_safety_net": self.wall_seconds,
                "configurations": {k: c.to_json() for k, c in sorted(self.configs.items())},
                "profiles": {k: {"prove": list(p.prove), "recheck": list(p.recheck)}
                             for k, p in sorted(self.profiles.items())},
                "theorems": dict(sorted(self.theorems.items()))}


class BudgetError(ValueError):
    """A budgets file that cannot be used (one line, for the CLI)."""


def _positive_int(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BudgetError(f"{where}: a positive integer is required, not {value!r}")
    return value


@functools.cache
def load(path: str | None = None) -> Budgets:
    file = Path(path) if path else BUDGETS_FILE
    try:
        data = tomllib.loads(read_bounded(file, 1 << 20, "budgets file").decode("utf-8"))
    except FileRefused as err:   # a FIFO, a device, too large: refused before or while reading
        raise BudgetError(str(err)) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise BudgetError(f"{file}: {err}") from None
    try:
        wall = float(data["wall_seconds"])
        if not (0 < wall < 1e6):
            raise BudgetError(f"{file}: wall_seconds must be in (0, 1e6)")
        configs = {}
        for name, c in data["config"].items():
            solver = c["solver"]
            if solver not in SOLVERS:
                raise BudgetError(f"{file}: config {name}: unknown solver {solver!r}")
            rlimit = None if solver == "bitwuzla" else _positive_int(
                c.get("rlimit"), f"{file}: config {name}.rlimit")
            options = tuple((str(k), str(v)) for k, v in c.get("options", {}).items())
            script = c.get("script", False)
            if not isinstance(script, bool):
                raise BudgetError(f"{file}: config {name}.script must be true or false")
            seconds = c.get("seconds")
            if seconds is not None and (solver != "bitwuzla" or isinstance(seconds, bool)
                                        or not isinstance(seconds, (int, float))
                                        or not 0 < seconds < 1e6):
                raise BudgetError(f"{file}: config {name}.seconds: a number of seconds in "
                                  "(0, 1e6), for bitwuzla only (z3 and cvc5 have rlimit)")
            logic = c.get("logic")
            if logic is not None and not (isinstance(logic, str) and logic.replace("_", "")
                                          .isalnum() and len(logic) <= 16):
                raise BudgetError(f"{file}: config {name}.logic must be an SMT-LIB logic name")
            configs[name] = Config(name, solver, rlimit, options, script, logic,
                                   None if seconds is None else float(seconds))
        profiles = {}
        for name, p in data["profile"].items():
            prove, recheck = tuple(p["prove"]), tuple(p.get("recheck", ()))
            for c in prove + recheck:
                if c not in configs:
                    raise BudgetError(f"{file}: profile {name}: no config {c!r}")
            if not prove:
                raise BudgetError(f"{file}: profile {name}: empty prove list")
            for c in prove:
                if configs[c].rlimit is None:
                    raise BudgetError(f"{file}: profile {name}: {c} has no resource limit "
                                      "(a wall clock only): it may re-check, never prove")
            profiles[name] = Profile(name, prove, recheck)
        theorems = {str(k): str(v) for k, v in data.get("theorem", {}).items()}
        for k, v in theorems.items():
            if v not in profiles:
                raise BudgetError(f"{file}: theorem {k}: no profile {v!r}")
    except BudgetError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise BudgetError(f"{file}: malformed budgets ({type(err).__name__}: {err})") from None
    return Budgets(wall, configs, profiles, theorems, str(file))


@dataclass(frozen=True)
class Answer:
    status: str                     # sat | unsat | unknown (budget spent) | timeout
    resources: int | None = None    # the solver's own work units spent
    model: object = field(default=None, compare=False)   # z3: a sat model, in z3's main context


# The verdict cache of the run in progress (proofs/cache.py: a VerdictCache), set by the
# runner before its workers fork; None: every query is solved.
verdict_cache: Any = None


def check(config: Config, text: str, wall_seconds: float, cached: bool = True,
          model: bool = True) -> Answer:
    """Solve the SMT-LIB 2 ``text`` (its ``:status`` is ignored) with ``config`` (or take its
    answer from the run's verdict cache, unless ``cached`` is off). A cached answer carries
    no model: z3's sat answers are solved again unless ``model`` is off (not wanted)."""
    if verdict_cache is not None and cached:
        return verdict_cache.through("check", config, text,
                                     lambda: [_check(config, text, wall_seconds)],
                                     again=model and config.solver == "z3")[0]
    return _check(config, text, wall_seconds)


def _check(config: Config, text: str, wall_seconds: float) -> Answer:
    text = config.told(text.replace("(set-info :status unsat)", "(set-info :status unknown)", 1))
    if config.solver == "z3":
        return _z3(config, text, wall_seconds)
    if config.solver == "cvc5":
        return _cvc5(config, text, wall_seconds)
    return _bitwuzla(config, text, wall_seconds)


def _z3_solver(config: Config, wall_seconds: float):
    """A solver of ``config`` in a fresh z3 context: its budget, the safety net, its options."""
    import z3
    solver = z3.Solver(ctx=z3.Context())
    solver.set("rlimit", config.rlimit)
    solver.set("timeout", int(wall_seconds * 1000))
    for key, value in config.options:
        solver.set(key, _z3_value(value))
    return solver


def _z3_value(text: str):
    """An option's value as z3 takes it: budgets.toml's numbers and booleans are read back
    as text (Config.options), and z3 refuses a symbol where it wants a number or a bool."""
    if text in ("true", "false", "True", "False"):
        return text in ("true", "True")
    return int(text) if text.isdigit() else text


def _z3(config: Config, text: str, wall_seconds: float) -> Answer:
    import z3
    solver = _z3_solver(config, wall_seconds)
    solver.from_string(text)
    answer = str(solver.check())
    stats = solver.statistics()
    used = stats.get_key_value("rlimit count") if "rlimit count" in stats.keys() else None
    model = None
    if answer == "unknown":
        answer = _z3_undecided(config, solver.reason_unknown(), used)
    elif answer == SAT:
        model = solver.model().translate(z3.main_ctx())
    return Answer(answer, used, model)


def _z3_undecided(config: Config, reason: str, used: int | None) -> str:
    """z3 reports a spent rlimit as "max. resource limit exceeded" or as "canceled" (as it
    does the wall clock): a check that used its whole budget is unknown, never a timeout."""
    if used is not None and config.rlimit is not None and used >= config.rlimit:
        return UNKNOWN
    return TIMEOUT if ("timeout" in reason or "canceled" in reason) else UNKNOWN


def _cvc5(config: Config, text: str, wall_seconds: float) -> Answer:
    return _cvc5_answers(config, text, wall_seconds, incremental=False)[-1]


def check_script(config: Config, text: str, wall_seconds: float) -> list[Answer]:
    """Solve every ``(check-sat)`` of the script ``text`` (smtlib.script) in one fresh,
    incremental solver of ``config``, each within the configuration's resource limit (cvc5's
    ``rlimit-per`` counts per check) and the wall-clock safety net: the answers in order,
    each with the work units that check spent (an incremental solver shares the work on
    the assumptions between a row's claims). z3 and cvc5; z3's ``rlimit`` and cvc5's
    ``rlimit-per`` both bound each check on its own. From the run's verdict cache when it
    holds the script's answers."""
    if verdict_cache is not None:
        return verdict_cache.through("script", config, text,
                                     lambda: _check_script(config, text, wall_seconds))
    return _check_script(config, text, wall_seconds)


def _check_script(config: Config, text: str, wall_seconds: float) -> list[Answer]:
    text = config.told(text)
    if config.solver == "z3":
        return _z3_script(config, text, wall_seconds)
    if config.solver == "bitwuzla":
        return _bitwuzla_answers(config, text, wall_seconds)
    return _cvc5_answers(config, text, wall_seconds, incremental=True)


_SPECIAL = re.compile(r"[()|;]")


def toplevel(text: str) -> list[str]:
    """The top-level s-expressions of an SMT-LIB text (comments at top level skipped).
    Only parentheses, quoted symbols ``|…|`` and top-level ``;`` comments matter: the scan
    jumps from one of those characters to the next."""
    out, depth, start, pos, end = [], 0, 0, 0, len(text)
    search = _SPECIAL.search
    while (found := search(text, pos)) is not None:
        i = found.start()
        ch = text[i]
        pos = i + 1
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                out.append(text[start:pos])
        elif ch == "|":
            close = text.find("|", pos)
            pos = end if close < 0 else close + 1
        elif depth == 0:        # a comment, to the end of its line
            newline = text.find("\n", pos)
            pos = end if newline < 0 else newline + 1
    return out


def _z3_script(config: Config, text: str, wall_seconds: float) -> list[Answer]:

    solver = _z3_solver(config, wall_seconds)
    answers: list[Answer] = []
    pending: list[str] = []
    spent = 0
    for block in toplevel(text):
        if block.startswith("(set-logic") or block.startswith("(set-info"):
            continue
        if block in ("(check-sat)", "(push 1)", "(pop 1)"):
            if pending:
                solver.from_string("\n".join(pending))
                pending = []
            if block == "(push 1)":
                solver.push()
            elif block == "(pop 1)":
                solver.pop()
            else:
                answer = str(solver.check())
                stats = solver.statistics()
                total = (stats.get_key_value("rlimit count") if "rlimit count" in stats.keys()
                         else None)
                if answer == "unknown":
                    answer = _z3_undecided(config, solver.reason_unknown(),
                                           None if total is None else total - spent)
                # A counterexample's model is produced again in the main context on demand.
                answers.append(Answer(answer, None if total is None else total - spent))
                spent = total if total is not None else spent
            continue
        pending.append(block)
    return answers or [Answer(UNKNOWN)]


def _cvc5_answers(config: Config, text: str, wall_seconds: float,
                  incremental: bool) -> list[Answer]:
    import cvc5
    solver = cvc5.Solver()
    if incremental:
        solver.setOption("incremental", "true")
    for key, value in config.options:
        solver.setOption(key, value)
    solver.setOption("rlimit-per", str(config.rlimit))
    solver.setOption("tlimit-per", str(int(wall_seconds * 1000)))
    parser = cvc5.InputParser(solver)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "query")
    symbols = parser.getSymbolManager()
    answers: list[Answer] = []
    spent = 0
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        if command.getCommandName() == "check-sat":
            result = solver.checkSat()
            if result.isSat():
                answer = SAT
            elif result.isUnsat():
                answer = UNSAT
            else:
                answer = (TIMEOUT if result.getUnknownExplanation()
                          == cvc5.UnknownExplanation.TIMEOUT else UNKNOWN)
            try:
                total = solver.getStatistics()["resource::resourceUnitsUsed"]["value"]
            except (KeyError, TypeError, RuntimeError):
                total = None
            answers.append(Answer(answer, None if total is None else total - spent))
            spent = total if total is not None else spent
            continue
        out = command.invoke(solver, symbols).strip()
        if out.startswith("(error"):
            raise RuntimeError(f"cvc5: {out}")   # an export problem must not pass silently
    return answers or [Answer(UNKNOWN)]


# The logics Bitwuzla reads (it has no integers or reals): a text of another logic
# (smtlib.logic's ALL) is declined, a function of the text like any answer.
BITWUZLA_LOGICS = ("QF_BV", "QF_ABV", "QF_UFBV", "QF_AUFBV")


def _bitwuzla(config: Config, text: str, wall_seconds: float) -> Answer:
    return _bitwuzla_answers(config, text, wall_seconds)[-1]


def _bitwuzla_answers(config: Config, text: str, wall_seconds: float) -> list[Answer]:
    """Every ``(check-sat)`` of ``text`` (one query, or a script: smtlib.script) in one
    fresh Bitwuzla, each within the configuration's ``seconds`` (or the safety net, if
    less): its only bound is the wall clock, so an undecided check is a ``timeout`` and
    its sat or unsat is kept only as claims.py and budgets.toml say (a decided answer of
    a sound solver is a fact about the text; whether it comes in time is not). A text of
    a logic it lacks is declined (unknown); one it cannot read is an error, as for cvc5."""
    import bitwuzla  # optional: pip install 'rtwo-vm[bitwuzla]'
    blocks = toplevel(text)
    logic = blocks[0][len("(set-logic "):-1].strip() if blocks and blocks[0].startswith(
        "(set-logic ") else None
    if logic not in BITWUZLA_LOGICS:
        return [Answer(UNKNOWN)] * max(1, sum(b == "(check-sat)" for b in blocks))
    options = bitwuzla.Options()
    limit = min(wall_seconds, config.seconds or wall_seconds)
    options.set(bitwuzla.Option.TIME_LIMIT_PER, max(1, int(limit * 1000)))
    for key, value in config.options:
        options.set(key, int(value) if value.isdigit() else value)
    parser = bitwuzla.Parser(bitwuzla.TermManager(), options)
    answers: list[Answer] = []
    pending: list[str] = []
    try:
        for block in blocks:
            if block not in ("(check-sat)", "(push 1)", "(pop 1)"):
                if not block.startswith("(set-info"):
                    pending.append(block)
                continue
            if pending:
                parser.parse("\n".join(pending), True, False)
                pending = []
            solver = parser.bitwuzla()
            if block == "(push 1)":
                solver.push(1)
            elif block == "(pop 1)":
                solver.pop(1)
            else:
                answer = str(solver.check_sat()).lower()
                answers.append(Answer(answer if answer in DECIDED else TIMEOUT))
    except bitwuzla.BitwuzlaException as err:   # an export problem must not pass silently
        raise RuntimeError(f"bitwuzla: {err}") from None
    return answers or [Answer(UNKNOWN)]


@functools.cache
def available(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True
