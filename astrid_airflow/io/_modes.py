"""File modes of what the library writes: the process umask decides, as for ``open(2)``.

Temporary files (``mkstemp``, ``mkdtemp``) are private (0600/0700) whatever the umask,
so a file or directory renamed into place from one keeps that mode unless it is set.
Release files (published surrogates, manifests, archives, Data Docs, reports) get
``0o666 & ~umask`` and directories ``0o777 & ~umask``, so a release is as readable as
any file the user's shell would create, but never writable by others, whatever the
umask (umask 000 would let anyone replace an archived release). The artefact store is
stricter on purpose (``docs/reliability.md``): its versions are read-only and its folders private.
"""

from __future__ import annotations

import errno
import os
import threading

_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the kernel says it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _LOCK:  # elsewhere: set and restore (os.umask has no read-only form)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


#: Never granted, whatever the umask: writing by others.
_NOT_OTHERS = ~0o002


def file_mode() -> int:
    """``0o666`` minus the umask, as ``open(2)`` gives, never writable by others."""
    return 0o666 & ~current_umask() & _NOT_OTHERS


def dir_mode() -> int:
    """``0o777`` minus the umask, as ``mkdir(2)`` gives, never writable by others."""
    return 0o777 & ~current_umask() & _NOT_OTHERS


def make_dirs(path: str) -> None:
    """``os.makedirs(path, exist_ok=True)`` with every new level at :func:`dir_mode`
    (``makedirs`` leaves intermediate levels to the umask alone)."""
    path = os.path.abspath(path)
    missing = []
    while not os.path.isdir(path):
        # a file where a folder must be; a folder made meanwhile by a concurrent writer
        # (between the two looks) is what was wanted
        if os.path.lexists(path) and not os.path.isdir(path):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
        missing.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    for level in reversed(missing):
        try:
            os.mkdir(level, dir_mode())
        except FileExistsError:
            if not os.path.isdir(level):
                raise
            continue
        os.chmod(level, dir_mode())  # mkdir's mode passes through the umask


def strip_others_write(folder: str) -> None:
    """Take writing by others off every file and folder under ``folder`` (files a
    writer created there with ``open``, whose mode the umask alone decided)."""
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if mode & 0o002 and not os.path.islink(path):
                os.chmod(path, mode & 0o7777 & _NOT_OTHERS)
