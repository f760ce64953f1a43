"""File modes of what the library writes: the process umask decides, as for ``open(2)``.

Temporary files (``mkstemp``, ``mkdtemp``) are private (0600/0700) whatever the umask,
so a file or directory renamed into place from one keeps that mode unless it is set.
Release files (published surrogates, manifests, archives, Data Docs, reports) get
``0o666 & ~umask`` and directories ``0o777 & ~umask``, so a release is as readable as
any file the user's shell would create. The artefact store is stricter on purpose
(``docs/reliability.md``): its versions are read-only and its folders private.
"""

from __future__ import annotations

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


def file_mode() -> int:
    """The mode a new file gets from ``open(2)``: ``0o666`` minus the umask."""
    return 0o666 & ~current_umask()


def dir_mode() -> int:
    """The mode a new directory gets from ``mkdir(2)``: ``0o777`` minus the umask."""
    return 0o777 & ~current_umask()
