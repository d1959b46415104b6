"""The JSON-lines file sink: one canonical line per event, fsynced before it is acknowledged.

The sink appends to its file by design (it is not replaced atomically), so its target is
checked instead: a symbolic link, a FIFO, a device or anything under /proc, /sys or /dev is
refused when the sink is made (sink-add, deliver --jsonl) and again each time the file is
opened, with O_NOFOLLOW (a link planted later is not followed) and O_NONBLOCK (a FIFO planted
later never blocks the delivery pass) and a check that what was opened is a regular file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Sequence

from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.records import InvalidInput
from rtwo_vm.runtime.sinks import SinkUnavailable, canonical_line, send_each
from spec.files import FileRefused, refuse_link

_SPECIAL_ROOTS = ("/proc", "/sys", "/dev")


def _check_target(path: Path) -> None:
    """FileRefused when ``path`` is a link, a FIFO, a device or a socket, or lies under /proc,
    /sys or /dev (a missing file is created on open; a folder fails there, as it did)."""
    refuse_link(path, "event log")
    real = os.path.realpath(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    except OSError as err:
        raise FileRefused(f"cannot open {path}: {err.strerror}") from None
    if (any(real == r or real.startswith(r + "/") for r in _SPECIAL_ROOTS)
            or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))):
        raise FileRefused(f"{path}: not a regular file (the event log is appended only to a "
                          "regular file)")


_OPEN_FLAGS = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
               | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))


class JsonLinesSink:
    kind = "jsonl"
    OPTIONS: dict[str, Any] = {}

    def __init__(self, target: str | Path, options: dict[str, Any] | None = None):
        # The folder is resolved, the file itself is not: a link there is refused, not followed.
        given = Path(os.path.abspath(target))
        self.path = given.parent.resolve() / given.name
        self.name = f"jsonl:{self.path}"
        self._target = str(self.path)
        self.options = options or {}

    @property
    def target(self) -> str:
        """The path as registered. It is read when the sink is added (Publisher.add_sink, inside
        its transaction), so a link, a FIFO or a device there is refused then, in one line
        (InvalidInput, exit 2); a sink made from its database row is not checked until it is
        opened (a file replaced later makes that delivery fail, not the database unreadable)."""
        try:
            _check_target(self.path)
        except FileRefused as err:
            raise InvalidInput(str(err)) from None
        return self._target

    @target.setter
    def target(self, value: str) -> None:
        self._target = value

    def open(self, deadline: float) -> "_Session":
        try:
            # O_APPEND, one write() per line: a killed process leaves whole lines.
            _check_target(self.path)
            fd = os.open(self.path, _OPEN_FLAGS, 0o644)
        except FileRefused as err:
            raise SinkUnavailable(str(err)) from None
        except OSError as err:   # ELOOP: a link; ENXIO: a FIFO without a reader
            raise SinkUnavailable(f"cannot open {self.path}: {err.strerror}") from None
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError as err:
            os.close(fd)
            raise SinkUnavailable(f"cannot open {self.path}: {err.strerror}") from None
        if not regular:
            os.close(fd)
            raise SinkUnavailable(f"{self.path}: not a regular file (the event log is "
                                  "appended only to a regular file)")
        os.set_blocking(fd, True)
        return _Session(self.path, fd)

    def deliver(self, event: VMEvent) -> None:
        """Append one event now (outside a delivery pass)."""
        session = self.open(0)
        try:
            session.write(event)
            session.flush()
        finally:
            session.close()


class _Session:
    def __init__(self, path: Path, fd: int):
        self.path, self.fd = path, fd

    def write(self, event: VMEvent) -> None:
        """Append one whole line or nothing: a short write (a full disk, a file size limit)
        is continued, and a line that cannot be finished is cut off again, so the file never
        keeps half a line that the next line would be glued to."""
        data = canonical_line(event) + b"\n"
        try:
            start = os.fstat(self.fd).st_size
        except OSError as err:
            raise SinkUnavailable(f"cannot write {self.path}: {err.strerror}") from None
        done = 0
        try:
            while done < len(data):
                written = os.write(self.fd, data[done:])
                if written <= 0:
                    raise OSError(0, "no progress")
                done += written
        except OSError as err:
            if done:
                try:
                    os.ftruncate(self.fd, start)
                except OSError:
                    pass
            raise SinkUnavailable(f"cannot write {self.path}: {err.strerror} "
                                  f"({done} of {len(data)} bytes written, undone)") from None

    def send(self, events: Sequence[VMEvent], deadline: float) -> list[BaseException | None]:
        return send_each(events, deadline, self.write)

    def flush(self) -> None:
        try:
            os.fsync(self.fd)
        except OSError as err:
            raise SinkUnavailable(f"cannot sync {self.path}: {err.strerror}") from None

    def close(self) -> None:
        os.close(self.fd)
