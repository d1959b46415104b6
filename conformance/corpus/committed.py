"""Whether a corpus folder holds the committed corpus: what ``rtwo-vm vectors release`` checks
before it packs a corpus under the version of the checkout (conformance/corpus/release.py), so that
one version never names two corpora.

The bytes compared are the very bytes the release packs (``manifest.json`` and the group
files ``*.jsonl``); other files of the folder are not part of a release and not compared.

- In a git work tree (a ``.git`` in the folder or above it, the folder not ignored by it):
  every corpus file must be exactly as in ``HEAD`` — nothing added, changed or removed, staged
  or not. git runs as a child process (``git -C FOLDER``) with a bounded time and output, a
  clean environment (no user or system configuration, no prompt, no optional locks) and
  ``core.fsmonitor`` off; it is asked only for ``HEAD``'s tree and blobs (``ls-tree``,
  ``cat-file``) and whether the folder is ignored (``check-ignore``, which reads the ignore
  files), never to look at the work tree, so no filter or hook of a repository someone hands
  over ever runs. The files' object ids are computed here from the bytes read (the
  repository's object format, sha1 or sha256).
- Outside any git work tree (or in a folder it ignores, such as a virtual environment's
  site-packages inside a checkout), the committed corpus is the one installed with the running
  ``conformance`` package (no rtwo-vm command writes an installed package): that folder itself
  is accepted, and any other folder only when it is byte for byte that corpus (which must
  then pass this same check). A checkout without git cannot tell what was committed, so its
  corpus is refused.

A refusal is :class:`NotCommitted` with a one-line reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Mapping

GIT_SECONDS = 20.0          # per git call (a loaded machine; the calls are small)
MAX_LISTING = 1 << 20       # bytes of git output read (a tree listing, the committed manifest)


class NotCommitted(ValueError):
    """The corpus is not the committed one, or that cannot be told (the message says which)."""


SCENARIOS = "scenarios/"      # the corpus's scenario folder (chapter 11.9.5), packed with it


def corpus_files(names) -> list[str]:
    """The names of a folder listing (paths relative to it) that a release packs: the manifest
    and group files, and those of the scenario folder."""
    def packed(name: str) -> bool:
        name = name.removeprefix(SCENARIOS)
        return "/" not in name and (name == "manifest.json" or name.endswith(".jsonl"))
    return sorted(n for n in names if packed(n))


def check(directory: Path, files: Mapping[str, bytes], version: str) -> None:
    """Refuse (NotCommitted) unless ``files`` (name -> bytes of the corpus of spec ``version`` in
    ``directory``, as packed) are the committed corpus of that version."""
    from conformance.constants import PACKAGE_DIR, corpus_dir, project_root
    if in_git(directory) and not _ignored(directory):
        _check_git(directory, files)
        return
    installed = corpus_dir(version)
    if _same_folder(directory, installed):
        home = PACKAGE_DIR.parent.resolve()
        if project_root(home) == home:    # the package is a checkout's own, not an installed copy
            raise NotCommitted(f"{directory} is in a checkout without git: what was committed cannot be told")
        return
    theirs = _installed_files(installed)
    differing = _differing(files, theirs)
    if differing:
        raise NotCommitted(f"{directory} is not in a git repository and is not the corpus installed with "
                           f"rtwo-vm ({installed}): {_names(differing)} differ")
    check(installed, theirs, version)


def in_git(directory: Path) -> bool:
    here = directory.resolve()
    return any((folder / ".git").exists() for folder in (here, *here.parents))


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    except OSError:
        return False


def _installed_files(directory: Path) -> dict[str, bytes]:
    from conformance.corpus import store
    try:
        listing = [p.name for p in directory.iterdir()]
        if (directory / SCENARIOS).is_dir():
            listing += [SCENARIOS + p.name for p in (directory / SCENARIOS).iterdir()]
        return {name: store.read_group(directory, name) for name in corpus_files(listing)}
    except (OSError, ValueError) as err:
        raise NotCommitted(f"cannot read the corpus installed with rtwo-vm ({directory}): "
                           f"{str(err).splitlines()[0][:160] if str(err) else type(err).__name__}") from None


def _differing(ours: Mapping[str, bytes | str], theirs: Mapping[str, bytes | str]) -> list[str]:
    """The file names whose contents (or blob ids) differ, or that only one side has."""
    return sorted(n for n in set(ours) | set(theirs) if ours.get(n) != theirs.get(n))


def _names(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


# -- git ------------------------------------------------------------------------------------

def _ignored(directory: Path) -> bool:
    """Whether git ignores the folder (an installed package in a virtual environment inside a
    checkout, say): then it is not part of the repository, and the rule outside git applies."""
    code, _ = _run_git(directory, "check-ignore", "-q", ".")
    if code not in (0, 1):
        _git(directory, "rev-parse", "--show-object-format")     # raises with git's own reason
        raise NotCommitted(f"git check-ignore in {directory}: exit status {code}")
    return code == 0


def _check_git(directory: Path, files: Mapping[str, bytes]) -> None:
    fmt = _git(directory, "rev-parse", "--show-object-format").decode(errors="replace").strip()
    if fmt not in ("sha1", "sha256"):
        raise NotCommitted(f"git: unknown object format {fmt[:40]!r} of the repository holding {directory}")
    committed = _committed_ids(directory)
    ours = {name: _object_id(fmt, data) for name, data in files.items()}
    differing = _differing(ours, committed)
    if not differing:
        return
    what = (f"{_names(differing)} differ from the last commit" if committed
            else "no corpus is committed in that folder")
    raise NotCommitted(f"the corpus in {directory} is not the committed one: {what}"
                       + _digests(directory, files))


def _committed_ids(directory: Path) -> dict[str, str]:
    """Corpus file name -> blob id in HEAD's tree of the folder ({} when none is committed)."""
    try:
        listing = _git(directory, "ls-tree", "-r", "-z", "--full-tree", "HEAD:./")
    except _GitFailed:                 # no commit yet, or the folder is not in HEAD
        return {}
    out = {}
    for entry in listing.split(b"\0"):
        head, _, name = entry.partition(b"\t")
        fields = head.split()
        if len(fields) == 3 and fields[1] == b"blob":
            out[name.decode(errors="replace")] = fields[2].decode()
    return {name: out[name] for name in corpus_files(out)}


def _object_id(fmt: str, data: bytes) -> str:
    h = hashlib.new(fmt)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _digests(directory: Path, files: Mapping[str, bytes]) -> str:
    """'' or '; digest X, committed Y' from the two manifests (best effort: a readable reason)."""
    from spec.files import loads_json

    def digest_of(blob: bytes | None) -> str:
        try:
            value = loads_json(blob or b"", 8, "manifest", "corpus manifest").get("digest")
        except (ValueError, AttributeError):
            return "none"
        return value[:12] if isinstance(value, str) else "none"
    try:
        committed = _git(directory, "cat-file", "blob", "HEAD:./manifest.json")
    except _GitFailed:
        committed = None
    return f" (digest {digest_of(files.get('manifest.json'))}, committed {digest_of(committed)})"


class _GitFailed(NotCommitted):
    """A git command answered with a failure (its first line of stderr)."""


def _git(directory: Path, *args: str) -> bytes:
    """The stdout of ``git -C directory ARGS``, bounded in time and size; NotCommitted when git
    is missing, too slow or too talkative, _GitFailed when it answers with a failure."""
    code, out, said = _run_git_said(directory, *args)
    if code != 0:
        line = (said.decode(errors="replace").strip().splitlines() or [f"exit status {code}"])[0][:200]
        raise _GitFailed(f"git {args[0]} in {directory}: {line}")
    return out


def _run_git(directory: Path, *args: str) -> tuple[int, bytes]:
    code, out, _ = _run_git_said(directory, *args)
    return code, out


def _run_git_said(directory: Path, *args: str) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, the start of stderr) of ``git -C directory ARGS``."""
    env = {"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
           "GIT_ATTR_NOSYSTEM": "1", "HOME": os.devnull}
    git = shutil.which("git", path=env["PATH"])
    if git is None:
        raise NotCommitted(f"{directory} is in a git repository, but git is not available to tell "
                           "whether the corpus is the committed one")
    try:
        proc = subprocess.Popen([git, "-c", "core.fsmonitor=false", "-C", str(directory), *args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, close_fds=True)
    except OSError as err:
        raise NotCommitted(f"cannot run git: {err.strerror or err}") from None
    timer = threading.Timer(GIT_SECONDS, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None and proc.stderr is not None
        out = proc.stdout.read(MAX_LISTING + 1)
        if len(out) > MAX_LISTING:
            proc.kill()
        said = proc.stderr.read(4096)
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):    # both pipes, opened above
            if stream is not None:
                stream.close()
    if len(out) > MAX_LISTING:
        raise NotCommitted(f"git {args[0]} in {directory}: more than {MAX_LISTING} bytes of output")
    if code < 0:
        raise NotCommitted(f"git {args[0]} in {directory}: no answer within {GIT_SECONDS:.0f} s")
    return code, out, said
