"""The statuses of a proofs run's rows, a run's options, and the options of the run in
progress: ``current``, set by runner.run_suite (``use``) before its pool forks and read in
the workers by runner and claims.

Statuses:

- proved: every claim unsat under its prover, re-checked by its re-checkers, premises
  satisfiable;
- counterexample: a claim is sat; its inputs are replayed on the interpreter and printed;
- unknown: a claim was left undecided within its resource budget (not proved);
- timeout: a claim hit the wall-clock safety net (not proved; distinct from unknown);
- vacuous: the premises (the query's assumptions), or the antecedent of a claim with them,
  are unsatisfiable, so the claim would hold trivially: a failure, never a proof;
- agrees / disagrees: an agreement check. A re-checking solver answering otherwise than the
  prover on a decided claim is a disagreement;
- informative: the CrossHair supplement (findings listed; never a verdict);
- error: a task crashed (a bug in the suite or a missing dependency).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proofs import versions

PROVED, COUNTEREXAMPLE, UNKNOWN, TIMEOUT = "proved", "counterexample", "unknown", "timeout"
VACUOUS = "vacuous"
AGREES, DISAGREES = "agrees", "disagrees"
INFORMATIVE = "informative"
# A task that crashed (a bug in the suite or a missing dependency): neither proof nor refutation.
ERROR = "error"
FAILING = (COUNTEREXAMPLE, DISAGREES, ERROR, VACUOUS)
UNDECIDED = (UNKNOWN, TIMEOUT)
VERDICT_OK = (PROVED, AGREES)


@dataclass
class Options:
    version: str = field(kw_only=True)       # the spec version proved (proofs.versions.MODELLED)
    opcodes: tuple[str, ...] | None = None   # None: every opcode
    names: tuple[str, ...] | None = None     # None: every theorem (and agreement_* check)
    width: int | None = None                 # None: every width each theorem lists
    solver: str = "cvc5"                     # re-checking: cvc5 (the profiles), bitwuzla, z3 (none)
    export_dir: str | None = None
    jobs: int = 2
    wall_seconds: float | None = None        # safety net per query (None: budgets.toml)
    budgets: str | None = None               # budgets file (None: proofs/budgets.toml)
    theorems_file: str | None = None         # a user's theorems instead of the built-in ones
    file_seconds: float | None = None        # safety net of each child running that file
    file_memory: int | None = None           # bytes of address space such a child may add
    samples: int = 8                         # hypothesis examples per opcode
    agreement: bool = True
    crosshair: bool = False                  # the informative CrossHair supplement
    cache_dir: str | None = None             # verdict cache folder (proofs/cache.py); None: none
    cache_key: str | None = None             # its secret key file (None: cache.default_key())
    model_overrides: dict = field(default_factory=dict)    # mnemonic -> model (tests)
    handler_overrides: dict = field(default_factory=dict)  # mnemonic -> handler (tests)

    @property
    def partial(self) -> bool:
        """Whether this run covers less than the whole registered suite."""
        return bool(self.opcodes is not None or self.width is not None or self.theorems_file
                    or self.names is not None
                    or not self.agreement or self.model_overrides or self.handler_overrides
                    or self.budgets or self.solver != "cvc5")


# Before any run: the newest modelled version's defaults (a run's own options replace them).
current = Options(version=versions.newest())


def use(options: Options) -> None:
    """Make ``options`` the run in progress (before the pool forks)."""
    global current
    current = options


def rechecking(profile) -> tuple[str, ...]:
    """The re-checking configurations of a budget profile under the run's --solver."""
    if current.solver == "z3":
        return ()
    if current.solver == "bitwuzla":
        return ("bitwuzla",)
    return profile.recheck
