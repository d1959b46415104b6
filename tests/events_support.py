"""Helpers for the event-delivery tests (no tests here): misbehaving receivers run as their own
processes (tests/events_fixtures/), each stopped and waited for on exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "events_fixtures"


class _Process:
    def __init__(self, args: list[str]):
        self.process = subprocess.Popen([sys.executable, *args], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None     # stdout=PIPE
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"{args[0]} did not start")
        self.port = int(line)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class HttpReceiver(_Process):
    """tests/events_fixtures/http_sink.py in MODE; ``requests()`` is what it read, in order."""

    def __init__(self, log: Path, mode: str, *args: str):
        self.log = Path(log)
        super().__init__([str(FIXTURES / "http_sink.py"), str(self.log), mode, *args])
        self.url = f"http://127.0.0.1:{self.port}/events"

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


class SlowAckProxy(_Process):
    """tests/events_fixtures/slow_proxy.py before a NATS server; ``delay(seconds)``."""

    def __init__(self, target_port: int, control: Path):
        self.control = Path(control)
        self.control.write_text("0")
        super().__init__([str(FIXTURES / "slow_proxy.py"), str(target_port), str(self.control)])
        self.url = f"nats://127.0.0.1:{self.port}"

    def delay(self, seconds: float) -> None:
        self.control.write_text(str(seconds))

    def hold_after(self, acks: int) -> None:
        """Let ``acks`` acknowledgements through, then hold the rest until delay()."""
        self.control.write_text(f"hold {acks}")
