"""The artefact store's directory layout, and the guard that keeps every other writer out.

``<root>/<name>/v0001/artefact.json``: the store itself (release layer) writes it; every
atomic write of io asks :func:`check_outside_store` first, so io owns the layout's
names and the guard, and never imports the release layer.
"""

from __future__ import annotations

import os
import re
from typing import Any

from astrid_airflow._errors import StoreError

from ._fs import split_url

ARTEFACT_FILE = "artefact.json"
# Always used with fullmatch: ``$`` would also match before a trailing newline, and
# ``\d`` (without re.ASCII) would accept non-ASCII digits such as U+0660.
STORE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}", re.ASCII)
STORE_VERSION_DIR = re.compile(r"v([0-9]{4,})", re.ASCII)
#: Prefix of the marker a saver claims a version number with on object stores.
STORE_CLAIM = ".claim-"
_NAME, _VERSION_DIR, _CLAIM = STORE_NAME, STORE_VERSION_DIR, STORE_CLAIM


def _store_directory_kind(directory: str) -> str | None:
    """``"version"``/``"name"`` if local ``directory`` is one of a store's, else None."""
    base = os.path.basename(directory)
    parent = os.path.basename(os.path.dirname(directory))
    try:  # scandir + any(): stops at the first hit, even in a huge directory
        if _VERSION_DIR.fullmatch(base) and _NAME.fullmatch(parent) and (
                os.path.lexists(os.path.join(directory, ARTEFACT_FILE))
                or any(e.name.startswith(_CLAIM) for e in os.scandir(directory))):
            return "version"
        if _NAME.fullmatch(base) and any(
                _VERSION_DIR.fullmatch(e.name)
                and os.path.lexists(os.path.join(e.path, ARTEFACT_FILE))
                for e in os.scandir(directory)):
            return "name"
    except OSError:  # unreadable or vanished: not provably a store directory
        return None
    return None


def check_outside_store(path: str | os.PathLike) -> None:
    """Raise ``StoreError`` if writing ``path`` would put a file inside an artefact
    store's name or version directory.

    Versions are immutable: nothing but the release layer's ``ArtefactStore`` writes
    there. Every atomic write (:func:`~astrid_airflow.io.atomic_path`, hence every
    command's outputs) calls this. Links are resolved, so a directory linking into a
    store is caught. Object-store URLs (``s3://``, ``gs://``, ``memory://``...) are
    checked the same way through their fsspec filesystem, one prefix at a time up to
    the bucket (a listing and an existence check per prefix).
    """
    fs, dest, local = split_url(path)
    refuse_inside_store(fs, dest, local, os.fspath(path))


def refuse_inside_store(fs: Any, dest: str, local: bool, shown_path: str) -> None:
    """:func:`check_outside_store` on a path ``dest`` inside filesystem ``fs``."""
    if local:
        directory, kind_of, parent_of = (os.path.realpath(os.path.dirname(dest)),
                                         _store_directory_kind, os.path.dirname)
    else:
        directory = dest.rstrip("/").rpartition("/")[0]
        kind_of = (lambda d: _remote_store_directory_kind(fs, d))  # noqa: E731
        parent_of = (lambda d: d.rstrip("/").rpartition("/")[0])  # noqa: E731
    while directory and directory.strip("/"):
        kind = kind_of(directory)
        if kind is not None:
            shown = directory if local else fs.unstrip_protocol(directory)
            raise StoreError(f"Refusing to write {shown_path!r}: it is inside the "
                             f"artefact store {kind} directory {shown!r}; store "
                             "versions are immutable, write outputs elsewhere.")
        parent = parent_of(directory)
        if parent == directory:
            return
        directory = parent


def _remote_store_directory_kind(fs: Any, directory: str) -> str | None:
    """:func:`_store_directory_kind` for a prefix of an fsspec filesystem."""
    base = directory.rstrip("/").rpartition("/")[2]
    parent = directory.rstrip("/").rpartition("/")[0].rpartition("/")[2]
    try:
        if _VERSION_DIR.fullmatch(base) and _NAME.fullmatch(parent) and fs.exists(
                f"{directory}/{ARTEFACT_FILE}"):
            return "version"
        if _NAME.fullmatch(base) and fs.isdir(directory):
            for entry in fs.ls(directory, detail=False):
                child = entry.rstrip("/").rpartition("/")[2]
                if _VERSION_DIR.fullmatch(child) and fs.exists(
                        f"{entry.rstrip('/')}/{ARTEFACT_FILE}"):
                    return "name"
    except Exception:
        return None     # provably a store directory
    return None
