"""The one progress display of the ``rtwo-vm`` commands (prove, conformance run, fuzz, ...).

It draws a single line on a terminal and nothing at all otherwise: a log file or a pipe never
receives carriage-return updates. The tools below the CLI (``proofs``, ``conformance``) report
progress through plain callbacks and never import this module; the commands connect the two.

A display is drawn at once (so a long first item never leaves the terminal blank), then
throttled (at most ten redraws a second), and always ends its line when finished. With a known
total it shows a bar, the rate, the time spent and an estimate of the time left; with an
unknown total (``total=None``) a count and a rate, which is what an open-ended campaign needs;
``status`` carries any extra text (coverage, buckets, ...).

Every long-running command takes the same option (:func:`add_option`): ``--progress`` and
``--no-progress`` force the display on or off; without either it is on exactly when stderr is
a terminal, and off for a command's quiet or machine-readable modes (:func:`wanted`).

Why it is drawn here rather than with rich.progress (rich 15.0). Measured under load (two
cores shared with three other jobs' test runs), A and B interleaved in one process, medians and
[spread]: per finished item, 20,000 items, 7 rounds, off (a pipe) 0.56 us [0.14 .. 0.89]
against rich's 3.26 us [2.16 .. 5.25] (disabled, it still takes its lock and updates the
task), on a pseudo-terminal 0.63 us [0.20 .. 0.83] against 4.40 us [3.72 .. 6.09]; importing
it 6 ms against rich.progress's 35 ms, in every command that shows progress; and
``rtwo-vm conformance run --repeat 0 --fresh 0 --progress`` over the 3,138 vectors on a
pseudo-terminal, 3 rounds: 8.75 s [8.47 .. 11.10] against 8.66 s [7.62 .. 9.45], no
difference the noise does not cover. rich draws from a refresh thread and, unless disabled,
prints its last state into a file or a pipe; to keep this module's behaviour (nothing at all
off a terminal, the same line, the same tests) it would need as many lines of configuration
as this module has, for no speed. The tables the commands print stay hand-drawn too
(proofs/report.py: ``table``).
"""

from __future__ import annotations

import argparse
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


def add_option(parser, what: str = "progress line") -> None:
    """``--progress`` / ``--no-progress`` (dest ``progress``: True, False or None when neither)."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help=f"{what} on stderr (default: when stderr is a terminal)")


def wanted(flag: bool | None, quiet: bool = False) -> bool | None:
    """The ``enabled`` of a display: the flag when given, else off in a quiet mode, else None
    (on exactly when the stream is a terminal)."""
    if flag is not None:
        return flag
    return False if quiet else None


def clock(seconds: float) -> str:
    """1:05, 12:00, 1:02:03."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    """One line of progress on ``stream`` (default: stderr), shown only on a terminal.

    ``enabled`` forces the display on or off; by default it is on exactly when ``stream`` is a
    terminal. Use as a context manager or call :meth:`finish`.
    """

    def __init__(self, total: int | None, label: str = "", stream: TextIO | None = None,
                 enabled: bool | None = None, unit: str = "/s", failed_label: str = "failed"):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = on_terminal(self.stream) if enabled is None else bool(enabled)
        self.total, self.label, self.unit, self.failed_label = total, label, unit, failed_label
        self.done = 0
        self.failed = 0
        self.status = ""
        self.started = time.perf_counter()
        self._shown = float("-inf")       # the first draw is never throttled
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
        per_second = self.done / elapsed
        rate = f"{per_second:,.1f}{self.unit}" if per_second < 10 else f"{per_second:,.0f}{self.unit}"
        head = f"{self.label} " if self.label else ""
        times = f"  {clock(elapsed)}"
        if self.total:
            filled = min(BAR_WIDTH, BAR_WIDTH * self.done // self.total)
            head += f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self.done}/{self.total}"
            if 0 < self.done < self.total:
                times += f", ~{clock(elapsed * (self.total - self.done) / self.done)} left"
        else:
            head += f"{self.done:,}"
        tail = f"  {self.failed_label} {self.failed}" if self.failed else ""
        status = f"  {self.status}" if self.status else ""
        return f"{head}  {rate}{times}{tail}{status}"

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
        self._draw(final=False)          # at once: the command has started
        return self

    def __exit__(self, *exc) -> None:
        self.finish()
