"""The SHA-256 of a file's bytes: what a gate receipt and a release manifest name.

One function for every file the release protocol identifies (the staged surrogate, the
published file, an archived release), whatever opens it: a local path, an fsspec URL or
a path object carrying its own filesystem (Airflow's ``ObjectStoragePath``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import PurePath
from typing import Any

_BLOCK = 1 << 20  # bytes read at a time from a local file


def file_sha256(path: Any) -> str:
    """Hex SHA-256 of the bytes of the file at ``path``.

    A local file is streamed in blocks; a remote one is read in one request, so the
    digest is of one snapshot even while another writer replaces the object.
    ``FileNotFoundError`` if there is no such file.
    """
    from fsspec.implementations.local import LocalFileSystem

    if not isinstance(path, (str, PurePath)) and hasattr(path, "fs") and \
            hasattr(path, "path"):
        fs, inner = path.fs, path.path  # ObjectStoragePath / UPath: its connection's fs
    else:
        from ._fs import url_to_fs

        fs, inner = url_to_fs(os.fspath(path))
    if not isinstance(fs, LocalFileSystem):
        return hashlib.sha256(fs.cat_file(inner)).hexdigest()
    digest = hashlib.sha256()
    with fs.open(inner, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()
