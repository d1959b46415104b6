"""A run's finished tasks, kept so that a driver killed mid-run resumes (``--resume DIR``).

``DIR/state.jsonl``: a first line naming the run (``run``: a digest of everything its
results depend on — options, code, plan — chosen by the caller), then one line per finished
task: its id, its result, and an HMAC-SHA256 of (format, run, id, result) under a *local
secret key* the caller passes (the proofs' cache key: 32 random bytes in a 0600 file outside
any folder handed around). Each line is written and flushed as its task finishes, so a
driver killed at any point loses at most the tasks still running.

A state file is never trusted: on resume a line whose MAC does not verify (edited, forged, or
written with another key), that is cut short, or that names a task outside the plan is
*refused*: its task runs again, and the count is reported. A state of another run (its
first line names another digest: the options, the code or the plan changed) is refused as a
whole, in one line, rather than mixed into this one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

FORMAT = "rtwo-vm fan-out state v1"
NAME = "state.jsonl"
LINE_BYTES = 1 << 22           # a task's result is a few kilobytes; longer lines are refused
FILE_BYTES = 1 << 30


def code_digest(*packages) -> str:
    """sha256 over the files of the imported ``packages`` (their .py, .toml and .json, by path
    under the package's parent, in order): the code and data a run's results are about, as
    installed. Part of a run's digest, so that a state of other code is refused."""
    digest = hashlib.sha256()
    for package in packages:
        root = Path(package.__file__).parent
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".toml", ".json") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root.parent)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


class StateError(ValueError):
    """A state folder that cannot be used (one line, for the CLI)."""


class State:
    def __init__(self, folder: str | os.PathLike[str], key: bytes, run: str):
        self.folder, self.key, self.run = Path(folder), key, run
        self.path = self.folder / NAME
        self.refused = 0
        if self.folder.is_symlink() or (self.folder.exists() and not self.folder.is_dir()):
            raise StateError(f"--resume {self.folder}: not a folder (or a link)")
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as err:
            raise StateError(f"--resume {self.folder}: {err.strerror or err}") from None
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_file()):
            raise StateError(f"--resume {self.path}: not a regular file (or a link)")

    def _mac(self, task: str, result: Any) -> str:
        blob = json.dumps([FORMAT, self.run, task, result], sort_keys=True,
                          separators=(",", ":")).encode()
        return hmac.new(self.key, blob, hashlib.sha256).hexdigest()

    def load(self, known: set[str]) -> dict[str, Any]:
        """The verified results of the tasks in ``known`` (task id -> result); a fresh state
        file is started when there is none."""
        if not self.path.exists():
            self._write_head()
            return {}
        if self.path.stat().st_size > FILE_BYTES:
            raise StateError(f"--resume {self.path}: larger than {FILE_BYTES >> 20} MiB")
        done: dict[str, Any] = {}
        with open(self.path, "rb") as f:
            head = f.readline(LINE_BYTES)
            try:
                doc = json.loads(head)
                ok = isinstance(doc, dict) and doc.get("format") == FORMAT and doc.get("run") == self.run
            except (ValueError, RecursionError):
                ok = False
            if not ok:
                raise StateError(f"--resume {self.folder}: the state of another run (other options, "
                                 "code or plan), or not a state file: use another folder")
            for raw in f:
                try:
                    if len(raw) >= LINE_BYTES or not raw.endswith(b"\n"):
                        raise ValueError("cut short")
                    line = json.loads(raw)
                    task, result, mac = line["task"], line["result"], line["mac"]
                    good = (isinstance(task, str) and task in known and isinstance(mac, str)
                            and hmac.compare_digest(mac, self._mac(task, result)))
                except (ValueError, TypeError, KeyError, RecursionError):
                    good = False
                if good:
                    done[task] = result
                else:
                    self.refused += 1
        return done

    def _write_head(self) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps({"format": FORMAT, "run": self.run}) + "\n")

    def record(self, task: str, result: Any) -> None:
        """Append ``task``'s result, sealed, flushed to the disk before the next task is shown."""
        result = json.loads(json.dumps(result, default=str))    # as it will be read back
        line = json.dumps({"task": task, "result": result, "mac": self._mac(task, result)},
                          sort_keys=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        with os.fdopen(fd, "a") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
