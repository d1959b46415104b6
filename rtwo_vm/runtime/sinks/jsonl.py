"""The JSON-lines file sink: one canonical line per event, fsynced before it is acknowledged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Sequence

from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.sinks import SinkUnavailable, canonical_line, send_each


class JsonLinesSink:
    kind = "jsonl"
    OPTIONS: dict[str, Any] = {}

    def __init__(self, target: str | Path, options: dict[str, Any] | None = None):
        self.path = Path(target).resolve()
        self.name = f"jsonl:{self.path}"
        self.target = str(self.path)
        self.options = options or {}

    def open(self, deadline: float) -> "_Session":
        try:
            # O_APPEND, one write() per line: a killed process leaves whole lines.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as err:
            raise SinkUnavailable(f"cannot open {self.path}: {err.strerror}") from None
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
