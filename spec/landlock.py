"""Kernel restrictions of a confined child (spec/confined.py), through Linux system calls.

- :func:`restrict` makes the calling process (and everything it starts) unable to write any
  file outside ``writable`` folders — creating, writing, truncating, removing, renaming and
  linking included — with Landlock (Linux 5.13+, unprivileged); from Landlock ABI 4 on it
  cannot open or accept TCP connections either, and from ABI 6 on it cannot send a signal to
  any process outside its own tree nor connect to an abstract Unix socket. Landlock also
  keeps it from tracing (ptrace) or reading the memory of processes outside its domain.
  The restriction cannot be lifted by the process, and it holds for root too.
- :func:`drop_privileges`: no capability left (a child of root could otherwise raise its
  own resource limits), and no new privilege through ``execve`` (set-user-id programs).
- :func:`subreaper`: orphans of the process's descendants are re-parented to it instead of
  to init, so it can find and kill every one of them (``prctl(PR_SET_CHILD_SUBREAPER)``).

Each returns whether it took effect; nothing here raises on a kernel without the feature.
"""

from __future__ import annotations

import ctypes
import os

PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
_CREATE, _ADD_RULE, _RESTRICT = 444, 445, 446    # the same number on every architecture
_VERSION = 1                                      # LANDLOCK_CREATE_RULESET_VERSION
_PATH_BENEATH = 1                                 # LANDLOCK_RULE_PATH_BENEATH
_CAPABILITY_VERSION_3 = 0x20080522

# LANDLOCK_ACCESS_FS_* that change the file system, by the ABI version that added them.
_WRITES = {1: (1 << 1) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 9)
           | (1 << 10) | (1 << 11) | (1 << 12),      # write, remove, make dir/reg/sym/...
           2: 1 << 13,                                # refer (rename or link across folders)
           3: 1 << 14,                                # truncate
           5: 1 << 15}                                # ioctl on a device opened later
_FILE_ONLY = (1 << 1) | (1 << 14) | (1 << 15)    # write, truncate, ioctl: a file's own rights
_DISCARD = "/dev/null"                            # always writable: writes there go nowhere
_TCP = (1 << 0) | (1 << 1)                            # bind, connect (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)                         # abstract Unix sockets, signals (ABI 6)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


def _syscall(number: int, *args) -> int:
    libc = _libc()
    if libc is None:
        return -1
    return int(libc.syscall(ctypes.c_long(number), *args))


def _prctl(option: int, value: int) -> bool:
    libc = _libc()
    if libc is None or not hasattr(libc, "prctl"):
        return False
    return libc.prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0),
                      ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0


def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 without Landlock."""
    if not os.uname().sysname == "Linux":
        return 0
    version = _syscall(_CREATE, ctypes.c_void_p(None), ctypes.c_size_t(0), ctypes.c_uint32(_VERSION))
    return max(0, version)


def subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux 3.4+)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def drop_privileges() -> bool:
    """No capability (effective, permitted, inheritable, hence ambient) and no new privilege
    through execve; False when either could not be done."""
    no_new = _prctl(PR_SET_NO_NEW_PRIVS, 1)
    libc = _libc()
    if libc is None or not hasattr(libc, "capset"):
        return False
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    return no_new and libc.capset(ctypes.byref(header), data) == 0


def restrict(writable: tuple[str, ...] = (), version: int | None = None) -> bool:
    """Landlock this process: no file-system change outside ``writable`` folders (every
    change beneath them allowed) but writing to /dev/null, no TCP, no signal or abstract socket outside its tree (as
    far as the ABI ``version`` offers). False when the kernel has no Landlock; OSError when a
    rule could not be added or the restriction not applied."""
    version = abi() if version is None else version
    if version < 1:
        return False
    fs = 0
    for since, bits in _WRITES.items():
        if version >= since:
            fs |= bits
    attr = _RulesetAttr(fs, _TCP if version >= 4 else 0, _SCOPES if version >= 6 else 0)
    ruleset = _syscall(_CREATE, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                       ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for folder in (*writable, _DISCARD):
            is_file = folder == _DISCARD
            flags = os.O_PATH | os.O_CLOEXEC | (0 if is_file else os.O_DIRECTORY)
            try:
                fd = os.open(folder, flags)
            except FileNotFoundError:
                if is_file:
                    continue
                raise
            try:
                rule = _PathBeneath(fs & _FILE_ONLY if is_file else fs, fd)
                if _syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_PATH_BENEATH),
                            ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {folder} failed")
            finally:
                os.close(fd)
        if not _prctl(PR_SET_NO_NEW_PRIVS, 1):
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if _syscall(_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return True
