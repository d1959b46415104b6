"""The keeper of one adapter process: its child subreaper, so that nothing it starts survives.

The runner does not start an adapter directly: it starts this small program (the Python
standard library only, run with ``-I -S``), which

1. makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``, through ctypes):
   every process the adapter starts, at any depth, that loses its parent is re-parented to the
   keeper instead of to init, whatever it does to its environment, session or process group
   (a daemon that double-forks, calls ``setsid`` and re-executes itself with an empty
   environment included): the adapter's whole tree stays the keeper's descendants;
2. starts the adapter on its own standard streams (the runner's pipes), in a session of its
   own (a ``killpg`` of its own group does not reach the keeper), with ``PR_SET_PDEATHSIG``
   so that the adapter dies if the keeper does; it reports the adapter's pid (or why it could
   not start it) on a status pipe, then lets go of the streams (``/dev/null`` in their place),
   so the runner still sees the adapter's end of output;
3. waits for either the adapter's exit or the end of its *lifeline* (a pipe whose write end
   only the runner holds: closed by ``AdapterProcess.kill``, or by the kernel when the runner
   dies, however it dies); then it kills every descendant (SIGKILL, by walking the ``/proc``
   parent links down from itself, again until none is left), reaps them all (no zombie), and
   exits with the adapter's own status (the same exit code, or killed by the same signal), so
   the runner's verdicts ("exit status 70", "killed by SIGSEGV") are the adapter's.

Used as ``python -I -S keeper.py LIFELINE_FD STATUS_FD -- ARGV...``. Without ``prctl`` (not
Linux) it still kills the adapter and the descendants it can find, but an orphan escapes it.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
KILL_SECONDS = 5.0        # how long the keeper keeps killing and reaping before it gives up


def _prctl():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError, ImportError):
        return None


def _children_map() -> dict[int, list[int]]:
    """parent pid -> child pids of every process visible in /proc."""
    out: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so cut at the last ")".
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            out.setdefault(int(fields[1]), []).append(int(name))
    return out


def descendants(root: int) -> list[int]:
    """Every process whose chain of parents leads to ``root`` (Linux /proc; else none)."""
    children = _children_map()
    found, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _reap(statuses: dict[int, int]) -> bool:
    """Reap every child that has exited (recording its status); False when none is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        except InterruptedError:
            continue
        if pid == 0:
            return True
        statuses[pid] = status


def kill_tree(adapter: int, statuses: dict[int, int], wake: int) -> None:
    """SIGKILL every descendant and reap it, again until no child is left (bounded)."""
    deadline = time.monotonic() + KILL_SECONDS
    while time.monotonic() < deadline:
        found = descendants(os.getpid()) or ([adapter] if adapter not in statuses else [])
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not _reap(statuses):
            return
        select.select([wake], [], [], 0.02)
        _drain(wake)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except OSError:
        pass


def _exit_as(status: int | None) -> None:
    """End this process as the adapter ended: the same exit code, or the same signal."""
    if status is None:
        os._exit(125)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))   # the adapter's crash, not a core of ours
        except (ImportError, OSError, ValueError):
            pass
        try:
            if number != signal.SIGKILL:
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
            os.kill(os.getpid(), number)
        except (OSError, ValueError):
            pass
        os._exit(128 + number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 125)


def main(argv: list[str]) -> None:
    lifeline, status_fd = int(argv[1]), int(argv[2])
    command = argv[4:]
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    for fd in (wake_r, wake_w):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_w)
    stop = []
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, lambda n, f: stop.append(n))
    signal.signal(signal.SIGCHLD, lambda n, f: None)     # wakes the select below
    me = os.getpid()

    def bind_to_keeper() -> None:          # in the adapter, before exec
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != me:
            os._exit(125)

    try:
        adapter = subprocess.Popen(command, start_new_session=True, close_fds=True, preexec_fn=bind_to_keeper)
    except (OSError, ValueError, subprocess.SubprocessError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        os.write(status_fd, b"E" + reason.encode("utf-8", "replace")[:400] + b"\n")
        os._exit(127)
    try:
        os.write(status_fd, b"P%d\n" % adapter.pid)
        os.close(status_fd)
    except OSError:
        pass                       # the runner is gone: the lifeline says so below
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):           # the streams are the adapter's alone now
        os.dup2(null, fd)
    os.close(null)
    statuses: dict[int, int] = {}
    while adapter.pid not in statuses and not stop:
        ready, _, _ = select.select([lifeline, wake_r], [], [], 1.0)
        if lifeline in ready:
            break                  # the runner closed it, or died
        _drain(wake_r)
        _reap(statuses)
    adapter.returncode = 0         # reaped here, by waitpid(-1): Popen must not wait for it again
    kill_tree(adapter.pid, statuses, wake_r)
    _exit_as(statuses.get(adapter.pid, signal.SIGKILL))


# -- the runner's side ---------------------------------------------------------------------------
KEEPER = os.path.abspath(__file__)
START_SECONDS = 30.0      # how long the runner waits for the keeper to report the adapter's start


class KeeperError(Exception):
    """The adapter could not be started (the reason, as the operating system gave it)."""


def start(argv: list[str], env: dict[str, str], cwd: str | None,
          timeout: float = START_SECONDS) -> tuple[subprocess.Popen, int, int]:
    """Start ``argv`` under a keeper on three pipes: (the keeper's Popen, the adapter's pid,
    the lifeline: the write end the caller closes to have the keeper kill the whole tree)."""
    lifeline_r, lifeline_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-S", KEEPER, str(lifeline_r), str(status_w), "--", *argv],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                cwd=cwd, start_new_session=True, pass_fds=(lifeline_r, status_w))
    except BaseException:
        for fd in (lifeline_r, lifeline_w, status_r, status_w):
            os.close(fd)
        raise
    os.close(lifeline_r)
    os.close(status_w)
    try:
        line = _status_line(status_r, timeout)
    except BaseException:          # interrupted: the keeper kills what it started
        os.close(lifeline_w)
        raise
    finally:
        os.close(status_r)
    if line.startswith(b"P") and line[1:].isdigit():
        return proc, int(line[1:]), lifeline_w
    os.close(lifeline_w)
    try:
        proc.wait(timeout=KILL_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    if line.startswith(b"E"):
        raise KeeperError(line[1:].decode("utf-8", "replace"))
    raise KeeperError(f"its keeper did not report a start (exit status {proc.returncode})")


def sweep(tokens: set[bytes]) -> None:
    """SIGKILL every process whose environment carries one of ``tokens`` (an extra net)."""
    for token in tokens:
        for pid in _tagged(token):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _tagged(token: bytes) -> list[int]:
    """Processes of this user whose environment carries ``token`` (Linux /proc; else none)."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if token in f.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def _status_line(fd: int, timeout: float) -> bytes:
    """The keeper's one status line ("P<pid>" or "E<reason>"); b"" at its exit or the deadline."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n") and len(data) < 1024:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b""
        chunk = os.read(fd, 1024)
        if not chunk:
            return b""
        data += chunk
    return data.strip()


if __name__ == "__main__":
    main(sys.argv)
