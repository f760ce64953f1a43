"""Bounded reads of small inputs: a policy, a metrics or receipt JSON, never unbounded.

Unbounded, ``--policy /dev/zero`` would read until the out-of-memory killer stopped the
machine, and a FIFO given as ``--policy`` or ``--surrogate-metrics`` would block for
ever. Every small
file input goes through :func:`read_bounded`: a regular file only (no pipe, socket or
device), and at most ``limit`` bytes, read as ``limit + 1`` so a larger file is refused
without reading it whole (docs/reliability.md).
"""

from __future__ import annotations

import os
from typing import Any

from astrid_airflow._errors import AstridError, DataError, os_error_message

from ._jsonable import MAX_JSON_BYTES, MAX_JSON_DEPTH, load_json

#: Largest gate policy file accepted (a policy is ~1 KB; 64 KiB leaves room for a
#: classifier's settings).
MAX_POLICY_BYTES = 64 << 10


def read_bounded(path: str | os.PathLike, what: str, *, limit: int = MAX_JSON_BYTES,
                 error: type[AstridError] = DataError) -> bytes:
    """The bytes of regular file ``path`` (local or fsspec URL), at most ``limit``.

    Parameters
    ----------
    path : str or path-like
    what : str
        How a message names the input, e.g. ``"--policy"``.
    limit : int
        Largest size accepted, in bytes.
    error : AstridError subclass, default DataError
        Raised (one line) for a missing, unreadable, non-regular or too large file.
    """
    from ._io import check_regular_file, filesystem

    text = os.fspath(path)
    try:
        check_regular_file(text, f"Invalid {what}")
    except DataError as exc:
        raise error(str(exc)) from None
    fs, inner = filesystem(text)
    try:
        with (fs.open(inner, "rb") if fs is not None else open(inner, "rb")) as fh:
            data = fh.read(limit + 1)
    except FileNotFoundError:
        raise error(f"Invalid {what} {text!r}: no such file.") from None
    except IsADirectoryError:
        raise error(f"Invalid {what} {text!r}: it is a directory.") from None
    except OSError as exc:
        raise error(f"Invalid {what} {text!r}: {os_error_message(exc)}") from None
    if len(data) > limit:
        raise error(f"Invalid {what} {text!r}: larger than {_size(limit)}; it cannot be "
                    "a valid input.")
    return data


def load_json_file(path: str | os.PathLike, what: str, *, limit: int = MAX_JSON_BYTES,
                   error: type[AstridError] = DataError, max_depth: int | None = None) -> Any:
    """:func:`read_bounded` then :func:`~astrid_airflow.io.load_json` (depth bounded)."""
    data = read_bounded(path, what, limit=limit, error=error)
    return load_json(data, f"{what} {os.fspath(path)!r}", error=error,
                     max_depth=MAX_JSON_DEPTH if max_depth is None else max_depth,
                     max_bytes=limit)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else \
        f"{n >> 10} KiB" if n >= 1 << 10 and not n % (1 << 10) else f"{n} bytes"
