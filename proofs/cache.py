"""Proved once: a verdict cache for the proof queries (``rtwo-vm prove --cache DIR``).

Every query the suite solves is an SMT-LIB 2 text given to a solver configuration under a
deterministic budget (solvers.py), so its answer is a function of (text, solver, version,
options, budget). The cache stores that answer under

    key = sha256(format, kind (one check or a script), solver name and version, the
                 configuration's options, rlimit, logic, script flag, the exact text)

and returns it instead of solving again: within one run (two rows with the same text are
solved once, also across the run's worker processes: a per-key lock is held while solving)
and across runs and versions (the 1.0 and 1.1 suites share the texts that are identical).

Only answers that are a function of the text are stored: sat, unsat, and unknown within the
resource budget, from a configuration with a resource limit; from Bitwuzla, which has a
wall clock only, its sat and unsat alone (whether it answers in time depends on the load,
what it answers does not: a sound solver's sat or unsat is a fact about the text, and a
wrong one is a disagreement, as when solved; budgets.toml's ``bitwuzla-first``); never a
``timeout`` (the wall-clock safety net), and never an answer that
carries a z3 model (the counterexample is then replayed from a fresh solve, as without a
cache). A cached answer gives the same row as a solved one (status, provers, work units).

A cache is a convenience, never evidence. A cache folder may come from someone else, so every
entry carries an HMAC-SHA256 of its key and answers under a *local secret key*: 32 random
bytes in a file readable by its owner only, outside the cache folder (created on first use;
``$RTWO_VM_PROOFS_CACHE_KEY`` or ``--cache-key`` name another). An entry whose MAC does not
verify (written with another key, or edited) is *refused*: not believed, solved again,
overwritten, and counted in the report. Whoever holds the key file can forge entries: it is
the trust root, like the sink key (rtwo_vm/runtime/sinks/approval.py).

Defaults: the folder ``$RTWO_VM_PROOFS_CACHE``, else ``$XDG_CACHE_HOME/rtwo-vm/proofs``, else
``~/.cache/rtwo-vm/proofs``; the key ``$XDG_CONFIG_HOME/rtwo-vm/proofs-cache.key`` (else
``~/.config/...``). The folder is not pruned: delete it to start afresh.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Callable

from proofs import solvers

DIR_ENV, KEY_ENV = "RTWO_VM_PROOFS_CACHE", "RTWO_VM_PROOFS_CACHE_KEY"
FORMAT = "rtwo-vm proofs cache v1"
ENTRY_BYTES = 1 << 16                # an entry is a few hundred bytes; larger ones are refused
STORED = (solvers.SAT, solvers.UNSAT, solvers.UNKNOWN)
# What is stored of each solver's answers (see the module docstring).
STORED_OF = {"z3": STORED, "cvc5": STORED, "bitwuzla": solvers.DECIDED}
HEX = re.compile(r"[0-9a-f]{64}\Z")
# answers taken, solved, refused; entries stored; the work units of the solved answers per
# solver (a measure of what was solved that does not depend on load); agreement checks whose
# row was taken from the cache, and those run
STATS = {"hits": 0, "solved": 0, "refused": 0, "stored": 0, "units_z3": 0, "units_cvc5": 0,
         "checks_cached": 0, "checks_run": 0}
ROW_FIELDS: dict[str, type | tuple[type, ...]] = {
    "theorem": str, "opcode": str, "width": (str, int), "status": str, "cases": int}
KEPT_ROWS = ("agrees",)         # an agreement check's rows that are stored (never a finding)


class CacheError(ValueError):
    """A cache folder or key that cannot be used (one line, for the CLI)."""


def default_dir() -> Path:
    given = os.environ.get(DIR_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "rtwo-vm" / "proofs"


def default_key() -> Path:
    given = os.environ.get(KEY_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else Path.home() / ".config") / "rtwo-vm" / "proofs-cache.key"


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise CacheError(f"cache key {path}: {err.strerror} (a regular file, not a link)") \
            from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CacheError(f"cache key {path}: not a regular file")
        if info.st_mode & 0o077:
            raise CacheError(f"cache key {path}: readable or writable by others "
                             f"(chmod 600 {path})")
        text = os.read(fd, 200).decode("ascii", "replace")
    finally:
        os.close(fd)
    if not re.fullmatch(r"[0-9a-f]{64}\n?", text):
        raise CacheError(f"cache key {path}: not 64 hex digits (remove it to make a new one)")
    return bytes.fromhex(text[:64])


def load_key(path: Path) -> bytes:
    """The secret key in ``path``, created (0600, atomically) when there is none."""
    key = _read_key(path)
    if key is not None:
        return key
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, (secrets.token_hex(32) + "\n").encode())
        finally:
            os.close(fd)
        try:
            os.link(temp, path)       # another process that made it first wins
        except FileExistsError:
            pass
        finally:
            os.unlink(temp)
    except OSError as err:
        raise CacheError(f"cannot create the cache key {path}: {err.strerror}") from None
    key = _read_key(path)
    assert key is not None
    return key


def _inside(path: Path, folder: Path) -> bool:
    p, f = os.path.realpath(path), os.path.realpath(folder)
    return p == f or p.startswith(f.rstrip("/") + "/")


@functools.cache
def identity(solver: str) -> str:
    """The solver's name and exact version, as a key part (another build may answer
    otherwise within the same budget)."""
    if solver == "z3":
        import z3
        return f"z3 {z3.get_full_version()}"
    if solver == "cvc5":
        import cvc5
        from importlib.metadata import version
        return f"cvc5 {version('cvc5')} {cvc5.Solver().getVersion()!r}"
    if solver == "bitwuzla":
        import bitwuzla
        return f"bitwuzla {bitwuzla.version()} {bitwuzla.git_id()}"
    raise ValueError(f"{solver}: unknown solver, never cached")


def entry_key(kind: str, config: solvers.Config, text: str) -> str:
    """An answer's key (see the module docstring)."""
    head = json.dumps([FORMAT, kind, identity(config.solver), list(config.options),
                       config.rlimit, config.logic, config.script], separators=(",", ":"))
    return hashlib.sha256(head.encode() + b"\n" + text.encode()).hexdigest()


def row_key(parts: list) -> str:
    """The key of a check's row: ``parts`` name everything the row is a function of."""
    return hashlib.sha256(json.dumps([FORMAT, "row", *parts], separators=(",", ":"),
                                     sort_keys=True).encode()).hexdigest()


def kept_row(row: dict) -> dict | None:
    """What is stored of an agreement check's row: its fields, when it agrees (a check that
    finds a difference is run again every time, and shown in full), else None."""
    if row.get("status") not in KEPT_ROWS or any(
            not isinstance(row.get(k), t) for k, t in ROW_FIELDS.items()):
        return None
    return {k: row[k] for k in ROW_FIELDS}


class VerdictCache:
    """The verdicts stored in ``folder``, each sealed with the key in ``key_file``."""

    def __init__(self, folder: str | os.PathLike[str], key_file: str | os.PathLike[str]):
        self.folder, self.key_file = Path(folder), Path(key_file)
        if self.folder.is_symlink():
            raise CacheError(f"cache folder {self.folder}: is a symbolic link")
        if _inside(self.key_file, self.folder):
            raise CacheError(f"cache key {self.key_file}: inside the cache folder "
                             f"{self.folder}; it must be kept apart from what it seals")
        try:
            self.root = self.folder / "v1"
            (self.root / "locks").mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as err:
            raise CacheError(f"cache folder {self.folder}: {err.strerror or err}") from None
        if any(not d.is_dir() or d.is_symlink() for d in (self.root, self.root / "locks")):
            raise CacheError(f"cache folder {self.folder}: v1 or v1/locks is not a folder "
                             "(or is a link)")
        self.secret = load_key(self.key_file)
        self._locks: dict[str, int] = {}
        self._pid = os.getpid()
        self.stats = dict(STATS)

    def key(self, kind: str, config: solvers.Config, text: str) -> str:
        return entry_key(kind, config, text)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _mac(self, key: str, answers: list) -> str:
        blob = json.dumps([FORMAT, key, answers], separators=(",", ":"), sort_keys=True).encode()
        return hmac.new(self.secret, blob, hashlib.sha256).hexdigest()

    def _verified(self, key: str, kind: str | None) -> tuple[str, list | dict] | None:
        """The entry of ``key`` read bounded, its form and MAC verified: (kind, value) with
        kind "answers" or "row" (``kind``: only that one, None: either); None when there is
        none, or when it does not verify (then counted as refused)."""
        path = self._path(key)
        if not os.path.lexists(path):
            return None
        from spec.files import FileRefused, read_bounded
        try:
            doc = json.loads(read_bounded(path, ENTRY_BYTES, "cache entry"))
            found = "row" if "row" in doc else "answers"
            value, mac = doc[found], doc["mac"]
            if found == "row":
                ok, sealed = isinstance(value, dict) and kept_row(value) == value, ["row", value]
            else:
                ok = isinstance(value, list) and bool(value) and all(
                    isinstance(a, list) and len(a) == 2 and a[0] in STORED
                    and (a[1] is None or type(a[1]) is int) for a in value)
                sealed = value
            ok = (ok and kind in (None, found) and isinstance(mac, str) and bool(HEX.match(mac))
                  and doc.get("key") == key and hmac.compare_digest(mac, self._mac(key, sealed)))
        except (FileRefused, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            ok = False
        if not ok:
            self.stats["refused"] += 1
            return None
        return found, value

    def lookup(self, key: str) -> list[solvers.Answer] | None:
        """The stored answers of ``key``: None when there are none, or when the entry does
        not verify (then counted as refused)."""
        got = self._verified(key, "answers")
        return None if got is None else [solvers.Answer(status, used) for status, used in got[1]]

    def store(self, key: str, answers: list[solvers.Answer]) -> None:
        plain = [[a.status, a.resources] for a in answers]
        self._write(key, {"key": key, "answers": plain, "mac": self._mac(key, plain)})

    def _write(self, key: str, doc: dict) -> None:
        path = self._path(key)
        temp = path.with_name(f".{key}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            if path.parent.is_symlink():    # never written through a link out of the folder
                return
            with open(temp, "x") as f:
                f.write(json.dumps(doc))
            os.replace(temp, path)
            self.stats["stored"] += 1
        except OSError:         # a full disk or a read-only folder: the answer stands
            with contextlib.suppress(OSError):
                os.unlink(temp)

    @contextlib.contextmanager
    def _locked(self, key: str):
        """Held while ``key`` is looked up and solved: a second process (of this run or
        another) asking for the same text waits, then reads the answer. One lock file per
        first byte of the key; opened per process (a lock is held by an open file, which
        forked processes would otherwise share)."""
        if self._pid != os.getpid():
            self._locks, self._pid = {}, os.getpid()
        name = key[:2]
        if name not in self._locks:
            try:
                self._locks[name] = os.open(self.root / "locks" / f"{name}.lock", os.O_RDWR
                                            | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError:             # a link, a read-only folder: solved without the lock
                self._locks[name] = -1
        fd = self._locks[name]
        if fd < 0:
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def through(self, kind: str, config: solvers.Config, text: str,
                solve: Callable[[], list[solvers.Answer]],
                again: bool = False) -> list[solvers.Answer]:
        """The answers of ``text`` by ``config``: from the cache, else ``solve()``d and
        stored when every answer is a function of the text (see the module docstring).
        With ``again``, a stored sat is solved again (its model is wanted: a counterexample
        is replayed from it as without a cache)."""
        stored = STORED_OF.get(config.solver, ())
        if config.rlimit is None and config.solver != "bitwuzla" or not stored:
            self.stats["solved"] += 1
            return solve()
        key = self.key(kind, config, text)
        with self._locked(key):
            got = self.lookup(key)
            if got is not None and not (again and any(a.status == solvers.SAT for a in got)):
                self.stats["hits"] += 1
                return got
            answers = solve()
            self.stats["solved"] += 1
            if f"units_{config.solver}" in self.stats:     # bitwuzla counts no work units
                self.stats[f"units_{config.solver}"] += sum(a.resources or 0 for a in answers)
            if got is None and answers and all(a.status in stored for a in answers):
                self.store(key, answers)
            return answers

    def take_stats(self) -> dict:
        """The counts since the last call (this process), and zero them."""
        out, self.stats = self.stats, dict.fromkeys(self.stats, 0)
        return out

    def lookup_row(self, key: str) -> dict | None:
        """The stored row of ``key``: None when there is none, or when it does not verify
        (then counted as refused)."""
        got = self._verified(key, "row")
        return None if got is None else dict(got[1])

    def store_row(self, key: str, row: dict) -> None:
        kept = kept_row(row)
        if kept is not None:
            self._write(key, {"key": key, "row": kept, "mac": self._mac(key, ["row", kept])})

    def through_row(self, parts: list, check: Callable[[], dict]) -> dict:
        """An agreement check's row: from the cache, else ``check()``ed and stored when it
        agrees. ``parts`` name everything the row is a function of (kept.row_parts)."""
        key = row_key(parts)
        with self._locked(key):
            got = self.lookup_row(key)
            if got is not None:
                self.stats["checks_cached"] += 1
                return got
            row = check()
            self.stats["checks_run"] += 1
            self.store_row(key, row)
            return row

    def entries(self) -> dict[str, list | dict]:
        """Every entry that verifies, key -> answers as stored (``[[status, units], ...]``)
        or a check's row (a dict): what a driver carries to the workers of a cluster
        (CarriedCache)."""
        out: dict[str, list | dict] = {}
        for folder in sorted(self.root.iterdir()):
            if len(folder.name) != 2 or folder.is_symlink() or not folder.is_dir():
                continue
            for path in sorted(folder.glob("*.json")):
                key = path.stem
                if not (HEX.match(key) and key.startswith(folder.name)):
                    continue
                got = self._verified(key, None)      # each entry read once, either kind
                if got is not None:
                    out[key] = got[1]
        return out


def open_cache(folder: str | None, key_file: str | None) -> VerdictCache:
    """The cache of ``folder`` (default_dir) sealed with ``key_file`` (default_key)."""
    return VerdictCache(Path(folder) if folder else default_dir(),
                        Path(key_file) if key_file else default_key())
