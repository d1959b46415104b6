"""Sinks from a database are data: a sink is delivered to only when the operator of this
machine confirmed its exact target (chapter 10.8).

A ``--db`` file may come from someone else, and its ``sinks`` rows with it: a row could name
any file to append to or any URL to post to. So a row is only a request: the dispatcher
delivers to a sink when its ``confirmation`` column holds the HMAC-SHA256, keyed with the
*sink key* of this machine, of exactly what the row says (name, kind, target and options).
The key is 32 random bytes in a file outside every database, readable by its owner only:

- ``$RTWO_VM_SINK_KEY_FILE`` when set, else ``$XDG_CONFIG_HOME/rtwo-vm/sink.key``, else
  ``~/.config/rtwo-vm/sink.key``;
- created (mode 0600, in a folder of mode 0700, atomically: two processes creating it at
  once end with one key) by ``events sink-add`` and ``events sink-confirm``, the only
  commands that confirm; read, never created, by a delivery pass.

``events sink-add`` confirms the sink it adds (a user adding a sink and delivering at once is
the normal path), ``events sink-confirm NAME`` confirms a sink someone else's database holds
after the operator read its target. A row written anywhere else (another machine, another
key, a hand edit of its target or options) does not verify: it is listed as unconfirmed and
skipped by every delivery pass, whatever it holds.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import stat
from pathlib import Path
from typing import Any

KEY_ENV = "RTWO_VM_SINK_KEY_FILE"
KEY_BYTES = 32
_KEY_TEXT = re.compile(r"[0-9a-f]{64}\n?\Z")
_HMAC = re.compile(r"[0-9a-f]{64}\Z")
_DOMAIN = "rtwo-vm sink confirmation v1"


class SinkKeyError(Exception):
    """The sink key file cannot be used (not a regular file, readable by others, damaged)."""


def key_path() -> Path:
    given = os.environ.get(KEY_ENV)
    if given:
        return Path(given)
    config = os.environ.get("XDG_CONFIG_HOME")
    base = Path(config) if config else Path.home() / ".config"
    return base / "rtwo-vm" / "sink.key"


def who() -> str:
    """Who confirms, as shown beside a sink (``user@host``): a note, not evidence."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "?"
    return f"{user}@{socket.gethostname()}"[:200]


def message(name: Any, kind: Any, target: Any, config: Any) -> bytes:
    """What a confirmation binds: the row's name, kind, target and options, as stored."""
    return json.dumps([_DOMAIN, name, kind, target, config], ensure_ascii=True,
                      separators=(",", ":")).encode()


class SinkKey:
    """The sink key of this machine (see the module docstring)."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path is not None else key_path()

    def _read(self) -> bytes | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError as err:
            raise SinkKeyError(f"sink key {self.path}: {err.strerror} (a regular file, not a "
                               "link)") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise SinkKeyError(f"sink key {self.path}: not a regular file")
            if os.name == "posix" and info.st_mode & 0o077:
                raise SinkKeyError(f"sink key {self.path}: readable or writable by others "
                                   f"(chmod 600 {self.path})")
            data = os.read(fd, 200)
        finally:
            os.close(fd)
        text = data.decode("ascii", "replace")
        if not _KEY_TEXT.match(text):
            raise SinkKeyError(f"sink key {self.path}: not 64 hex digits (remove it to make "
                               "a new one; every sink is then confirmed again)")
        return bytes.fromhex(text[:64])

    def load(self, *, create: bool = False) -> bytes | None:
        """The key; None when there is none and ``create`` is off."""
        key = self._read()
        if key is not None or not create:
            return key
        folder = self.path.parent
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            temp = folder / f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, (secrets.token_hex(KEY_BYTES) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(temp, self.path)   # fails if another process made the key first
            except FileExistsError:
                pass
            finally:
                os.unlink(temp)
        except OSError as err:
            raise SinkKeyError(f"cannot create the sink key {self.path}: {err.strerror} "
                               f"(set {KEY_ENV} to a file of your own)") from None
        key = self._read()
        assert key is not None  # just made, by this process or another
        return key

    @staticmethod
    def seal(key: bytes, name: Any, kind: Any, target: Any, config: Any) -> str:
        return hmac.new(key, message(name, kind, target, config), hashlib.sha256).hexdigest()

    @staticmethod
    def confirms(key: bytes | None, row: Any) -> bool:
        """Whether ``row`` (a sinks row) carries this key's confirmation of what it holds."""
        if key is None:
            return False
        given = row["confirmation"]
        if not (isinstance(given, str) and _HMAC.match(given)):
            return False
        wanted = SinkKey.seal(key, row["name"], row["kind"], row["target"], row["config"])
        return hmac.compare_digest(given, wanted)
