"""Files from outside and files we write: one bounded reader, one atomic writer.

Every file a user hands the tools (a replay bundle, a campaign's state, a report, a manifest,
a theorem file, a database path) is hostile until checked, and every file the tools write must
survive a full disk or a kill without losing the previous one. Both live here, in the lowest
package, so that ``conformance``, ``proofs`` and ``rtwo_vm`` read and write through the same
code (chapter 11.8's rules for files).

Reading (:func:`read_bounded`, :func:`read_json`):

- only regular files: a FIFO, a device, a socket or a file under ``/proc``, ``/sys`` or ``/dev``
  is refused before a byte is read (the file is opened non-blocking, so opening a FIFO never
  waits for a writer);
- the size cap is counted while reading, never taken from ``st_size`` (0 for ``/proc`` files);
- JSON is parsed with a nesting cap, and numbers from it are checked with :func:`check_int`.

Writing (:func:`atomic_write`, :func:`atomic_writer`, :func:`output_dir`):

- no output path follows a symbolic link: a link where an output file or folder should be
  is refused in one line (a user who wants the output elsewhere names that place);
- a file is written to a fresh temporary name in the same folder (created exclusively, so
  it cannot be a planted link), flushed to disk and renamed over the old one: a full disk or
  a kill leaves the previous file whole and no temporary file behind.

Every refusal is a :class:`FileRefused` (a ``ValueError``) with a one-line message naming the
path; the CLI prints it and exits 2.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Any, Iterator

_CHUNK = 1 << 20
_SPECIAL_ROOTS = ("/proc", "/sys", "/dev")


class FileRefused(ValueError):
    """A file that is not read or not written, with the one-line reason."""


def _special(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root + "/") for root in _SPECIAL_ROOTS)


def _open_regular(name: str, what: str) -> int:
    """A descriptor of the regular file ``name``, opened without waiting (a FIFO never
    blocks the open); FileRefused for anything else."""
    try:
        if _special(name):
            raise FileRefused(f"{name}: not a regular file (a {what} is read only from a regular file)")
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except FileRefused:
        raise
    except (OSError, ValueError) as err:   # ValueError: a NUL byte in the path
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise FileRefused(f"cannot read {name!r}: {reason}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(f"{name}: not a regular file (a {what} is read only from a regular file)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int, name: str, count: int) -> bytes:
    """Up to ``count`` bytes from ``fd`` (fewer at the end of the file); the fd is closed."""
    try:
        parts, total = [], 0
        while total < count:
            chunk = os.read(fd, min(_CHUNK, count - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
        return b"".join(parts)
    except OSError as err:
        raise FileRefused(f"cannot read {name}: {err.strerror or err}") from None
    finally:
        os.close(fd)


def read_bounded(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (counted while
    reading); FileRefused for anything else: missing, unreadable, not a regular file, larger."""
    name = os.fspath(path)
    blob = _read_fd(_open_regular(name, what), name, limit + 1)
    if len(blob) > limit:
        raise FileRefused(f"{name}: larger than the {limit} bytes a {what} may hold")
    return blob


def depth_of(value: Any) -> int:
    """The nesting depth of a parsed JSON value (a scalar is 0), without recursion."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values())
            deepest = max(deepest, depth + 1)
        elif isinstance(item, list):
            todo.extend((v, depth + 1) for v in item)
            deepest = max(deepest, depth + 1)
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_json(blob: bytes, max_depth: int, name: str, what: str = "file") -> Any:
    """Parse JSON text with a nesting cap; NaN and Infinity are refused (not JSON)."""
    try:
        value = json.loads(blob, parse_constant=_no_constant)
    except RecursionError:
        raise FileRefused(f"{name}: nested too deeply (at most {max_depth} levels in a {what})") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise FileRefused(f"{name}: not a JSON {what} ({str(err).splitlines()[0][:120]})") from None
    if depth_of(value) > max_depth:
        raise FileRefused(f"{name}: nested too deeply (at most {max_depth} levels in a {what})")
    return value


def read_json(path: str | os.PathLike[str], limit: int, max_depth: int = 64, what: str = "file") -> Any:
    """The JSON value in the regular file ``path``, read through :func:`read_bounded`."""
    return loads_json(read_bounded(path, limit, what), max_depth, os.fspath(path), what)


def check_int(value: Any, low: int, high: int, what: str) -> int:
    """``value`` when it is an integer (not a bool, not a float) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FileRefused(f"{what} must be an integer, not {type(value).__name__}")
    if not low <= value <= high:
        raise FileRefused(f"{what} must be between {low} and {high}, not {value}")
    return value


def refuse_link(path: str | os.PathLike[str], what: str = "output") -> Path:
    """``path`` unless it is a symbolic link (an output path never follows one)."""
    p = Path(path)
    if p.is_symlink():
        raise FileRefused(f"{p}: is a symbolic link; the {what} is not written through it")
    return p


def output_dir(path: str | os.PathLike[str], what: str = "output folder") -> Path:
    """The folder ``path``, created if missing; refused when it is a link or not a folder."""
    p = refuse_link(path, what)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise FileRefused(f"{p}: exists and is not a folder") from None
    except OSError as err:
        raise FileRefused(f"cannot create {p}: {err.strerror or err}") from None
    if not p.is_dir():
        raise FileRefused(f"{p}: exists and is not a folder")
    return p


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` only when the block ends without error:
    written to a fresh temporary name beside it, flushed, synced and renamed. On any error
    (a full disk included) the temporary file is removed and ``path`` is left as it was."""
    target = output_file(path)    # never a link, a device, a FIFO or a file under /proc, /sys, /dev
    directory = target.parent
    if not directory.is_dir():
        raise FileRefused(f"{directory}: no such folder")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~_umask())
        output_file(target)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Replace ``path`` with ``data`` atomically (see :func:`atomic_writer`)."""
    blob = data.encode() if isinstance(data, str) else data
    with atomic_writer(path) as f:
        f.write(blob)


def read_prefix(path: str | os.PathLike[str], count: int, what: str = "file") -> bytes:
    """The first ``count`` bytes (fewer if the file is shorter) of the regular file ``path``,
    whatever its size; FileRefused for anything else, as :func:`read_bounded` refuses it
    (a FIFO or a device is never read, and opening one never waits)."""
    name = os.fspath(path)
    return _read_fd(_open_regular(name, what), name, count)


def output_file(path: str | os.PathLike[str], what: str = "output") -> Path:
    """``path`` as the target of :func:`atomic_writer`, refused when it is a symbolic link or
    names something other than a regular file (a FIFO, a device, anything under ``/proc``,
    ``/sys`` or ``/dev``): renaming a temporary file over a device would replace the device
    itself, and a user writing to ``/dev/null`` or a pipe wants a stream, not a file."""
    p = refuse_link(path, what)
    name = os.fspath(p)
    if _special(name):
        raise FileRefused(f"{name}: not a regular file (the {what} is written only as a regular file)")
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        return p
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise FileRefused(f"cannot write {name!r}: {reason}") from None
    if not stat.S_ISREG(mode):
        raise FileRefused(f"{name}: not a regular file (the {what} is written only as a regular file)")
    return p
