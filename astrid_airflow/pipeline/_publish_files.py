"""Publish's bytes in and out: paths of any filesystem, their digests and atomic
writes, and the release manifest beside the published file (read, parsed, written, and
the current file put back in line with it)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from astrid_airflow._errors import ReleaseError


def read_manifest(path: Any) -> dict[str, Any] | None:
    """The current release's manifest, None before the first release."""
    if not path.exists():
        return None
    return parse_manifest(read_bytes(path), path)


def parse_manifest(data: bytes, path: Any) -> dict[str, Any]:
    """A manifest's JSON object; ``ReleaseError`` naming ``path`` if it is corrupt."""
    from astrid_airflow.io import load_json

    try:
        manifest = load_json(data, f"release manifest {path}")
    except ValueError as exc:  # DataError: not JSON, not UTF-8, nested too deep
        raise ReleaseError(f"Refusing to publish: the current release's manifest {path} "
                           f"is corrupt ({exc}); repair or remove it.") from None
    if not isinstance(manifest, dict):
        raise ReleaseError(f"Refusing to publish: the current release's manifest {path} "
                           "is not a JSON object.")
    return manifest


def repair_current(destination: Any, manifest: Mapping[str, Any] | None) -> bool:
    """Make the current file hold the manifest's release again, from its archive.

    After a publisher died between the current file and the manifest, they disagree; a
    retry that finds nothing to publish puts the archived bytes back. True if it did.
    """
    if not manifest or not manifest.get("archived") or not manifest.get("sha256"):
        return False
    if destination.exists() and sha256_of(destination) == manifest["sha256"]:
        return False
    archived = type(destination)(str(manifest["archived"]))
    if not archived.exists() or sha256_of(archived) != manifest["sha256"]:
        return False  # nothing trustworthy to restore from
    copy_atomic(archived, destination)
    return True


# ---------------------------------------------------------------- bytes in and out

def manifest_text(obj: Any) -> str:
    """JSON of a manifest or receipt: native values, paths and dates as text."""
    from astrid_airflow.io import plain

    return json.dumps(plain(obj), indent=2, default=_as_text, allow_nan=False) + "\n"


def _as_text(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def where(path: Any) -> tuple[Any, str]:
    """``(fsspec filesystem, path inside it)`` of a path object or string."""
    if not isinstance(path, (str, PurePath)) and hasattr(path, "fs") and \
            hasattr(path, "path"):
        return path.fs, path.path  # ObjectStoragePath / UPath: its connection's fs
    from astrid_airflow.io import split_url

    fs, inner, _local = split_url(path)
    return fs, inner


def read_bytes(path: Any) -> bytes:
    fs, inner = where(path)
    return fs.cat_file(inner)


def sha256_of(path: Any) -> str:
    """Hex SHA-256 of a file's bytes (:func:`~astrid_airflow.io.file_sha256`)."""
    from astrid_airflow.io import file_sha256

    return file_sha256(path)


def is_local_fs(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def copy_atomic(src: Any, dst: Any, *, overwrite: bool = True) -> None:
    """Copy so that a reader of ``dst`` sees the old or the complete new file."""
    from astrid_airflow.io import atomic_path, fs_put_file

    sfs, sin = where(src)
    dfs, din = where(dst)
    if is_local_fs(dfs):
        with atomic_path(din, overwrite=overwrite) as tmp, sfs.open(sin, "rb") as fin, \
                open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, length=1 << 20)
        return
    with tempfile.TemporaryDirectory(prefix="astrid_copy_") as scratch:
        local = os.path.join(scratch, "data")
        with sfs.open(sin, "rb") as fin, open(local, "wb") as fout:
            shutil.copyfileobj(fin, fout, length=1 << 20)
        fs_put_file(dfs, local, din, overwrite=overwrite)


def write_text_atomic(dst: Any, text: str, *, overwrite: bool = True) -> None:
    """Write ``text`` (UTF-8) to ``dst`` atomically."""
    write_bytes_atomic(dst, text.encode("utf-8"), overwrite=overwrite)


def write_bytes_atomic(dst: Any, data: bytes, *, overwrite: bool = True) -> None:
    """Write ``data`` to ``dst`` atomically."""
    from astrid_airflow.io import fs_write_bytes

    fs, inner = where(dst)
    fs_write_bytes(fs, inner, data, overwrite=overwrite)


def listing(folder: Any) -> list[Any]:
    """The entries of ``folder`` (a path object of any store); none if it is missing or
    cannot be listed."""
    try:
        return list(folder.iterdir()) if folder.exists() else []
    except (OSError, NotImplementedError):
        return []
