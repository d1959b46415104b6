"""The one progress display of the ``rtwo-vm`` commands (prove, conformance run, fuzz, ...).

It draws a single line on a terminal and nothing at all otherwise: a log file or a pipe never
receives carriage-return updates. The tools below the CLI (``proofs``, ``conformance``) report
progress through plain callbacks and never import this module; the commands connect the two.

A display is throttled (at most ten redraws a second) and always ends its line when finished.
With an unknown total (``total=None``) it shows a count and a rate instead of a bar, which is
what an open-ended campaign needs; ``status`` carries any extra text (coverage, buckets, ...).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30
REDRAW_SECONDS = 0.1


def on_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (False for files, pipes and closed streams)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Progress:
    """One line of progress on ``stream`` (default: stderr), shown only on a terminal.

    ``enabled`` forces the display on or off; by default it is on exactly when ``stream`` is a
    terminal. Use as a context manager or call :meth:`finish`.
    """

    def __init__(self, total: int | None, label: str = "", stream: TextIO | None = None,
                 enabled: bool | None = None, unit: str = "/s"):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = on_terminal(self.stream) if enabled is None else bool(enabled)
        self.total, self.label, self.unit = total, label, unit
        self.done = 0
        self.failed = 0
        self.status = ""
        self.started = self._shown = time.perf_counter()
        self._drawn = False

    def advance(self, count: int = 1, *, failed: bool = False, status: str | None = None) -> None:
        """Record ``count`` more finished items (``failed`` counts them as failures)."""
        self.done += count
        self.failed += count if failed else 0
        if status is not None:
            self.status = status
        self._draw(final=self.total is not None and self.done >= self.total)

    def update(self, done: int | None = None, status: str | None = None) -> None:
        """Set the finished count and/or the status text outright."""
        if done is not None:
            self.done = done
        if status is not None:
            self.status = status
        self._draw(final=False)

    def line(self) -> str:
        """The text of the display as it stands (without the carriage return)."""
        elapsed = max(1e-9, time.perf_counter() - self.started)
        rate = f"{self.done / elapsed:,.0f}{self.unit}"
        head = f"{self.label} " if self.label else ""
        if self.total:
            filled = min(BAR_WIDTH, BAR_WIDTH * self.done // self.total)
            head += f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total}"
        else:
            head += f"{self.done:,}"
        tail = f"  failed {self.failed}" if self.failed else ""
        status = f"  {self.status}" if self.status else ""
        return f"{head}  {rate}{tail}{status}"

    def _draw(self, final: bool) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not final and now - self._shown < REDRAW_SECONDS:
            return
        self._shown = now
        text = self.line()
        try:
            self.stream.write("\r" + text[:160].ljust(80))
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False
            return
        self._drawn = True

    def finish(self) -> None:
        """Draw the last state and end the line (only if anything was drawn)."""
        if not self.enabled:
            return
        self._shown = 0.0
        self._draw(final=True)
        if self._drawn:
            try:
                self.stream.write("\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self.enabled = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.finish()
