"""One adapter process, bounded in every direction (spec chapter 11.5.1, 11.6).

- It runs under a keeper (conformance.run.keeper), a child subreaper: every process the adapter
  starts stays the keeper's descendant whatever it does to its environment, session or
  process group, and killing the adapter (closing the keeper's lifeline, or the runner's
  death) kills and reaps that whole tree, so no process outlives the run. A per-process token
  in its environment is an extra net: ``kill`` also kills every process that still carries it.
- Its stdout is read in chunks into a buffer that never holds more than ``max_line`` bytes
  of one line: a longer line, or one that never ends, is an ``oversized`` failure as soon as
  the limit is passed, not when the line is complete.
- Its stderr is read from a pipe and only the last ``max_log`` bytes are kept (written to a
  log file when logs are kept, with a marker saying how much was dropped).
- Every live process is registered; ``kill_all`` (called at exit and from the CLI's signal
  handlers) ends them all.
"""

from __future__ import annotations

import atexit
import itertools
import os
import secrets
import selectors
import signal
import subprocess
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import spec
from conformance.run.keeper import KeeperError, start, sweep
from conformance.protocol import SHUTDOWN, ProtocolError, decode, encode, hello_problems, hello_request

READ_SIZE = 1 << 16
READ_BUDGET = 1 << 20     # bytes read from one pipe before the loop looks at everything else
EXIT_GRACE = 1.0          # seconds to wait for a process that closed its stdout to exit
KEEPER_GRACE = 10.0       # seconds the keeper has to kill and reap the adapter's tree
LOG_SUFFIX = ".adapter.log"
TOKEN_VARIABLE = "RTWO_CONFORMANCE_ADAPTER"
_LOG_SEQUENCE = itertools.count(1)
_LIVE: set["AdapterProcess"] = set()
_TOKENS: set[bytes] = set()          # tokens of processes started and not yet retired


# The largest response line a request with the default limits can need, in any version: the
# output of a full memory (hex, two characters a byte) plus 1 MiB for the rest of the result.
DEFAULT_MAX_LINE = max(2 * spec.load(v).limits["default"]["memory_pages"] * spec.load(v).schedule["memory"]["page_size"]
                       for v in spec.names()) + (1 << 20)
DEFAULT_MAX_LOG = 64 * 1024       # bytes of each process's stderr kept (the end of it)


@dataclass(frozen=True)
class Job:
    vector_id: str
    line: bytes               # the encoded execute request
    request_id: str | None = None     # the id inside ``line`` (default: vector_id)
    max_line: int | None = None       # the longest acceptable response (default: Settings.max_line)

    @property
    def rid(self) -> str:
        return self.request_id if self.request_id is not None else self.vector_id


@dataclass
class Reply:
    """What came back for one job: a protocol message, or a process-level failure."""

    vector_id: str
    message: dict[str, Any] | None
    failure: str | None = None       # crash, timeout, garbage, oversized, wrong_id, extra_output, protocol, unavailable
    detail: str = ""
    history: list[str] | None = field(default=None, repr=False)   # ids sent to the same process
    position: int = 0                # this vector's index in ``history``
    log_path: str | None = None      # the stderr log of the process that answered (when kept)
    seconds: float = 0.0             # how long the adapter was on this vector
    size: int = 0                    # bytes of the response line

    def preceded_by(self, limit: int = 64) -> tuple[list[str], int]:
        """The last ``limit`` vectors the same process received before this one, and how many
        it received in all: what an order-dependent fault depends on."""
        if not self.history:
            return [], 0
        return self.history[max(0, self.position - limit):self.position], self.position


class StartError(Exception):
    """The adapter did not start or did not complete the handshake."""


@dataclass
class Settings:
    spec_version: str                 # the version of every session (the runner's hello, chapter 11.5.3)
    timeout: float = 10.0             # seconds a vector may take once the adapter is on it
    handshake_timeout: float = 20.0
    window: int = 32                  # requests in flight per process
    workers: int = 2
    max_start_failures: int = 3       # consecutive failed starts before giving up on a process
    env: Mapping[str, str] | None = None
    cwd: str | None = None            # working directory of the adapter (default: the runner's)
    log_dir: Path | None = None       # keep the end of each process's stderr here (default: not kept)
    log_label: str = "adapter"        # prefix of the log file names
    max_line: int = DEFAULT_MAX_LINE  # bytes of one response line
    max_log: int = DEFAULT_MAX_LOG    # bytes of stderr kept per process (the last ones)
    max_failures: int = 3             # consecutive process failures before the rest is unavailable (0: never)
    max_logs: int = 64                # log files kept per pool run


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_exit(code: int | None) -> str:
    """An exit status as a reader wants it: "exit status 70", "killed by SIGSEGV (signal 11)"."""
    if code is None:
        return "still running"
    if code < 0:
        return f"killed by {signal_name(-code)} (signal {-code})"
    return f"exit status {code}"


def _read_chunk(fd: int) -> bytes | None:
    """One read of a non-blocking pipe: None when nothing is waiting, b"" at its end (or
    when reading it failed, which ends it as well)."""
    try:
        return os.read(fd, READ_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


class AdapterProcess:
    """One running adapter: pipes, buffers, the requests in flight."""

    def __init__(self, argv: list[str], settings: Settings, log_dir: Path | None, index: int, keep_log: bool = True):
        self.argv, self.settings = argv, settings
        self.log_path = (Path(log_dir) / f"{settings.log_label}-w{index}-{next(_LOG_SEQUENCE):04d}{LOG_SUFFIX}"
                         if log_dir is not None else None)
        self.keep_log = keep_log and settings.log_dir is not None and self.log_path is not None
        if settings.cwd is not None and not Path(settings.cwd).is_dir():
            raise StartError(f"cannot start {argv[0]!r}: working directory {settings.cwd} does not exist")
        self.token = f"{TOKEN_VARIABLE}={os.getpid()}-{secrets.token_hex(8)}"
        env = dict(os.environ if settings.env is None else settings.env)
        env[TOKEN_VARIABLE] = self.token.split("=", 1)[1]
        # Known before the process exists: a signal between its start and its registration
        # still finds it (kill_all sweeps every token not yet retired).
        _TOKENS.add(self.token.encode())
        try:
            self.proc, self.adapter_pid, self.lifeline = start(argv, env, settings.cwd, settings.handshake_timeout)
        except (OSError, KeeperError) as err:
            _TOKENS.discard(self.token.encode())
            where = f" (in {settings.cwd})" if settings.cwd else ""
            reason = (err.strerror or err) if isinstance(err, OSError) else err
            raise StartError(f"cannot start {argv[0]!r}{where}: {reason}") from None
        _LIVE.add(self)
        stdin, stdout, stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None, "keeper.start opens three pipes"
        self.out_fd, self.in_fd, self.err_fd = stdout.fileno(), stdin.fileno(), stderr.fileno()
        for fd in (self.out_fd, self.in_fd, self.err_fd):
            os.set_blocking(fd, False)
        self.inbuf = bytearray()
        self.partial = 0                     # bytes of the unfinished last line in inbuf
        self.oversized = False               # a line passed its limit; nothing more is read
        self.errbuf = bytearray()
        self.err_dropped = 0
        self.err_eof = False
        self.outbuf = bytearray()
        self.in_flight: deque[Job] = deque()
        self.sent: list[str] = []            # every vector id sent, in order
        self.head_since = time.monotonic()
        self.answered: deque[str] = deque(maxlen=256)     # request ids answered
        self.answered_vectors: deque[str] = deque(maxlen=256)
        self.eof = False
        self.hello: dict[str, Any] | None = None
        self.closed = False
        self._sel: selectors.BaseSelector | None = None
        self._hello_sent = self._shutdown_sent = False

    # -- raw I/O -----------------------------------------------------------------------------
    def line_limit(self) -> int:
        """The bound of the next complete line: the head's response."""
        if self.in_flight and self.in_flight[0].max_line is not None:
            return self.in_flight[0].max_line
        return self.settings.max_line

    def partial_limit(self) -> int:
        """The bound of an unfinished line, which may answer any request in flight (complete
        lines before it may not be consumed yet): the largest of their bounds."""
        if not self.in_flight:
            return self.settings.max_line
        return max(self.settings.max_line if j.max_line is None else j.max_line for j in self.in_flight)

    def read_available(self, budget: int = READ_BUDGET) -> None:
        """Read what the pipe holds, at most ``budget`` bytes per call: a flood of lines is
        consumed (and judged) between reads instead of piling up in the buffer."""
        limit = self.partial_limit()
        while not self.oversized and budget > 0:
            chunk = _read_chunk(self.out_fd)
            if chunk is None:
                return
            if not chunk:
                self.eof = True
                return
            budget -= len(chunk)
            end = chunk.rfind(b"\n")
            self.partial = self.partial + len(chunk) if end < 0 else len(chunk) - end - 1
            self.inbuf += chunk
            if self.partial > limit:          # keep the complete lines before it, drop the rest
                self.oversized = True
                del self.inbuf[len(self.inbuf) - self.partial:]

    def read_stderr(self, budget: int = READ_BUDGET) -> None:
        while budget > 0:
            chunk = _read_chunk(self.err_fd)
            if chunk is None:
                return
            if not chunk:
                self.err_eof = True
                return
            budget -= len(chunk)
            self.errbuf += chunk
            if len(self.errbuf) > 2 * self.settings.max_log:
                cut = len(self.errbuf) - self.settings.max_log
                del self.errbuf[:cut]
                self.err_dropped += cut

    def lines(self) -> Iterable[bytes]:
        """The complete non-blank lines in the buffer, each removed as it is taken (the buffer
        is shifted once, when the caller stops, not once per line)."""
        buf, start = self.inbuf, 0
        try:
            while True:
                end = buf.find(b"\n", start)
                if end < 0:
                    return
                if end + 1 - start > self.line_limit():
                    self.oversized = True
                    buf.clear()
                    start = 0
                    return
                line = bytes(buf[start:end + 1])
                start = end + 1
                if not line.isspace():
                    yield line
        finally:
            del buf[:start]

    def flush(self) -> bool:
        """Write what the pipe takes now; False when the adapter closed its stdin."""
        while self.outbuf:
            try:
                written = os.write(self.in_fd, self.outbuf)
            except BlockingIOError:
                return True
            except (BrokenPipeError, OSError):
                self.outbuf.clear()
                return False
            del self.outbuf[:written]
        return True

    def send(self, data: bytes) -> None:
        self.outbuf += data

    # -- lifecycle ---------------------------------------------------------------------------
    def _selector(self) -> selectors.BaseSelector:
        """The process's own selector on its stdout and stderr, made once (not once per line)
        and closed with the process."""
        sel = self._sel
        if sel is None:
            sel = self._sel = selectors.DefaultSelector()
            sel.register(self.out_fd, selectors.EVENT_READ, "out")
            if not self.err_eof:
                sel.register(self.err_fd, selectors.EVENT_READ, "err")
        return sel

    def wait_line(self, deadline: float) -> bytes | None:
        """Block (with the selector) until one line arrives, or None at EOF, at an oversized
        line or at the deadline."""
        for line in self.lines():
            return line
        sel = self._selector()
        while True:
            if self.eof or self.oversized:
                return None
            self.flush()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            for key, _ in sel.select(min(left, 0.05)):
                if key.data == "out":
                    self.read_available()
                else:
                    self.read_stderr()
                    if self.err_eof:
                        sel.unregister(self.err_fd)
            for line in self.lines():
                return line

    def begin_handshake(self) -> None:
        """Send the hello without waiting (``handshake`` then reads the answer)."""
        if not self._hello_sent:
            self._hello_sent = True
            self.send(encode(hello_request(self.settings.spec_version)))
            self.flush()

    def hello_reply(self) -> dict[str, Any]:
        """The adapter's answer to the hello, a message of any type (else StartError)."""
        self.begin_handshake()
        line = self.wait_line(time.monotonic() + self.settings.handshake_timeout)
        if line is None:
            why = (f"wrote a line longer than {self.settings.max_line} bytes" if self.oversized
                   else f"exited ({self.exit_description()})" if self.eof
                   else f"did not answer within {self.settings.handshake_timeout:g} s")
            raise StartError(f"no hello: the adapter {why}{self.stderr_tail()}")
        try:
            return decode(line)
        except ProtocolError as err:
            raise StartError(f"bad hello: {err}") from None

    def handshake(self) -> dict[str, Any]:
        hello = self.hello_reply()
        if hello.get("type") == "error":
            raise StartError(f"the adapter refused the hello of spec {self.settings.spec_version}: "
                             f"{str(hello.get('code'))[:40]}: {str(hello.get('message'))[:200]}")
        problems = hello_problems(hello, self.settings.spec_version)
        if problems:
            raise StartError("bad hello: " + "; ".join(problems)[:500])
        self.hello = hello
        self.head_since = time.monotonic()
        return hello

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def exit_description(self, grace: float = EXIT_GRACE) -> str:
        """How the process ended, after waiting up to ``grace`` seconds for it to exit: a
        process usually closes its stdout a moment before the kernel reports its exit."""
        try:
            code = self.wait_exit(grace)
        except subprocess.TimeoutExpired:
            return f"closed its stdout but was still running after {grace:g} s"
        return describe_exit(code)

    def take_head(self, message: dict[str, Any] | None, failure: str | None = None, detail: str = "",
                  size: int = 0) -> Reply:
        """Remove the oldest request in flight and make the reply to it."""
        position = len(self.sent) - len(self.in_flight)
        job = self.in_flight.popleft()
        kept = str(self.log_path) if self.keep_log else None
        return Reply(job.vector_id, message, failure, detail, self.sent, position, kept,
                     time.monotonic() - self.head_since, size)

    def stderr_text(self) -> str:
        if not self.err_eof and not self.closed:
            self.read_stderr()
        text = self.errbuf.decode("utf-8", "replace")
        return (f"[... {self.err_dropped} earlier bytes of stderr dropped ...]\n" if self.err_dropped else "") + text

    def stderr_tail(self, lines: int = 5) -> str:
        if not self.err_eof and not self.closed:
            self.read_stderr()         # what is in the pipe now: a crash report comes last
        text = self.errbuf[-4096:].decode("utf-8", "replace").strip().splitlines()
        return ("; stderr: " + " | ".join(t[:200] for t in text[-lines:])) if text else ""

    def kill(self) -> None:
        """Kill the process and every process it started (its keeper kills and reaps the whole
        tree when its lifeline closes), then every process carrying its token; reap; close."""
        if self.closed:
            return
        if self.lifeline >= 0:
            os.close(self.lifeline)
            self.lifeline = -1
        try:
            self.proc.wait(timeout=KEEPER_GRACE)
        except subprocess.TimeoutExpired:          # a keeper that does not end: the net below
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
        sweep({self.token.encode()})
        self._reap()
        _TOKENS.discard(self.token.encode())

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if not self.err_eof:
            self.read_stderr()
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.closed = True
        _LIVE.discard(self)
        if self.keep_log:
            self._write_log()

    def _write_log(self) -> None:
        """The kept stderr, written never through a link: the log folder must be a folder (not
        a link to one), a link planted at the log's name (the runner's own name in its own log
        folder: the adapter may have put it there) is removed, and the log is written to a fresh
        temporary file (O_EXCL) that is renamed over the name (``spec.files.atomic_write``). A
        log that cannot be written so is not written; the run goes on."""
        from spec.files import FileRefused, atomic_write, output_dir
        path = self.log_path
        if path is None:
            return
        try:
            output_dir(path.parent, "log folder")
            if path.is_symlink():
                path.unlink()
            atomic_write(path, self.stderr_text().encode("utf-8", "replace"))
        except (OSError, FileRefused):
            pass

    def begin_shutdown(self) -> None:
        """Send the shutdown without waiting (``shutdown`` then reads the bye)."""
        if not self._shutdown_sent:
            self._shutdown_sent = True
            self.send(encode(SHUTDOWN))
            self.flush()

    def wait_exit(self, timeout: float) -> int:
        """The exit status, waiting up to ``timeout`` seconds (on a pidfd where there is one,
        not by polling); subprocess.TimeoutExpired if it is still running."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        fd = None
        if hasattr(os, "pidfd_open"):
            try:
                fd = os.pidfd_open(self.proc.pid)
            except OSError:
                fd = None
        if fd is None:
            return self.proc.wait(timeout=timeout)
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(fd, selectors.EVENT_READ)
                sel.select(max(0.0, timeout))
        finally:
            os.close(fd)
        code = self.proc.poll()
        if code is None:
            raise subprocess.TimeoutExpired(self.argv, timeout)
        return code

    def shutdown(self, timeout: float) -> tuple[list[bytes], str | None]:
        """Ask the adapter to stop; returns stray lines before its bye and an exit problem."""
        self.begin_shutdown()
        deadline = time.monotonic() + timeout
        stray: list[bytes] = []
        problem: str | None = None
        while True:
            line = self.wait_line(deadline)
            if line is None:
                problem = "no bye after shutdown" + ("" if self.eof else f" within {timeout:g} s")
                break
            try:
                if decode(line).get("type") == "bye":
                    break
            except ProtocolError:
                pass
            if len(stray) < 16:
                stray.append(line[:200])
        try:
            code = self.wait_exit(max(0.1, deadline - time.monotonic()))
            if code != 0 and problem is None:
                problem = f"{describe_exit(code)} after shutdown (must be exit status 0)"
        except subprocess.TimeoutExpired:
            problem = problem or f"did not exit within {timeout:g} s of its bye"
        self.kill()
        return stray, problem


def kill_all() -> None:
    """Kill every adapter process still alive (at exit, on a signal, after an internal error)."""
    for proc in list(_LIVE):
        try:
            proc.kill()
        except Exception:  # noqa: BLE001 - best effort on the way out
            pass
    if _TOKENS:                      # started but never registered (interrupted in between)
        sweep(set(_TOKENS))
        _TOKENS.clear()


atexit.register(kill_all)
