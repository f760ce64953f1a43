"""Artefact references: resolving a path to an ``artefact.json``, a version directory or
``ROOT/NAME[@VERSION]`` to its location, and loading (and validating) the artefact there.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from astrid_airflow._errors import ParameterError, StoreError
from astrid_airflow.io import ARTEFACT_FILE, STORE_NAME, STORE_VERSION_DIR

from ._artefact import GroupingArtefact
from ._store import ArtefactLocation, ArtefactStore, parse_artefact, read_error
from ._store_names import split_artefact_ref

# The layout's names (and the guard that keeps other writers out) live in io.
_NAME, _VERSION_DIR = STORE_NAME, STORE_VERSION_DIR


class LoadedArtefact(NamedTuple):
    """An artefact and where it was read from (unpacks as ``artefact, location``)."""

    artefact: GroupingArtefact
    location: ArtefactLocation


def _read_artefact(fs: Any, inner: str, shown: str) -> GroupingArtefact:
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(fs, LocalFileSystem):  # a FIFO or device would block or never end
        import stat

        try:
            mode = os.stat(inner).st_mode
        except OSError:
            mode = stat.S_IFREG  # missing, ELOOP...: reported by the read below
        if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) \
                or stat.S_ISSOCK(mode):
            raise StoreError(f"{shown!r} is not a regular file (a pipe, socket or "
                             "device).")
    try:
        data = fs.cat_file(inner)
    except FileNotFoundError:
        raise StoreError(f"No artefact at {shown!r}.") from None
    except IsADirectoryError:
        raise StoreError(f"{shown!r} is a directory, not an artefact file.") from None
    except OSError as exc:  # permission, ELOOP, I/O error...
        raise read_error(exc, shown) from None
    return parse_artefact(data, shown)


def parse_artefact_ref(ref: str | os.PathLike, *, fs: Any = None) -> ArtefactLocation:
    """Resolve an artefact reference to its location (without reading the artefact).

    Accepted forms (local paths or fsspec URLs):

    * a path to an ``artefact.json``;
    * a version directory holding one (``ROOT/NAME/v0003``);
    * ``ROOT/NAME`` or ``ROOT/NAME@VERSION`` with VERSION ``v0003``, ``3`` or
      ``latest`` (the default).

    ``fs``: an authenticated filesystem for the reference's protocol (see
    :class:`ArtefactStore`).
    """
    from fsspec.implementations.local import LocalFileSystem

    from astrid_airflow.io import url_to_fs, using

    text = os.fspath(ref) if isinstance(ref, (str, os.PathLike)) else None
    if not text or not text.strip():
        raise ParameterError(f"Invalid artefact reference {ref!r}: expected a path to an "
                             "artefact.json, a version directory or ROOT/NAME[@VERSION].")
    text, version = split_artefact_ref(text)
    try:
        fs, inner = url_to_fs(text, fs)
    except (ImportError, ValueError) as exc:
        raise StoreError(f"Cannot open {text!r}: {exc}") from None
    local = isinstance(fs, LocalFileSystem)
    inner = os.path.abspath(inner) if local else inner.rstrip("/")

    def url(p: str) -> str:
        return p if local else fs.unstrip_protocol(p)

    def split(p: str) -> tuple[str, str]:
        if local:
            return os.path.split(p)
        head, _, tail = p.rpartition("/")
        return head, tail

    with using(None if local else fs):  # the nested store opens use the same filesystem
        if version is None and fs.isfile(inner):
            directory = split(inner)[0]
            return _outside_or_in_store(url, split, directory, url(inner))
        candidate = (os.path.join(inner, ARTEFACT_FILE) if local
                     else f"{inner}/{ARTEFACT_FILE}")
        if version is None and fs.isfile(candidate):
            return _outside_or_in_store(url, split, inner, url(candidate))
        root, name = split(inner)
        if not root or not _NAME.fullmatch(name or ""):
            raise StoreError(f"No artefact at {url(inner)!r}: not an artefact.json, a "
                             "version directory or ROOT/NAME.")
        store = ArtefactStore(url(root))
        return store.location(name, version or "latest")


def _outside_or_in_store(url, split, directory: str, path: str) -> ArtefactLocation:
    parent, vdir = split(directory)
    root, name = split(parent)
    if _VERSION_DIR.fullmatch(vdir) and _NAME.fullmatch(name or "") and root:
        # in a store layout: the same no-links rule as the store's own reads and writes
        ArtefactStore(url(root)).refuse_links(name, vdir, ARTEFACT_FILE)
        return ArtefactLocation(root=url(root), name=name, version=vdir,
                                directory=url(directory), path=path)
    return ArtefactLocation(root=None, name=None, version=None, directory=url(directory),
                            path=path)


def load_artefact(ref: str | os.PathLike, *, fs: Any = None) -> LoadedArtefact:
    """Load and validate the artefact ``ref`` points to (see :func:`parse_artefact_ref`).

    ``fs``: an authenticated filesystem for the reference's protocol (Airflow's
    ``ObjectStoragePath.fs``) instead of fsspec's own credential chain.

    Returns
    -------
    LoadedArtefact
        ``(artefact, location)``; write files beside the artefact in
        ``location.directory``.
    """
    from astrid_airflow.io import url_to_fs

    loc = parse_artefact_ref(ref, fs=fs)
    if loc.root is not None:  # in a store: verified against the version's manifest
        from astrid_airflow.io import using

        with using(fs):
            return LoadedArtefact(ArtefactStore(loc.root).load(loc.name, loc.version), loc)
    opened, inner = url_to_fs(loc.path, fs)
    return LoadedArtefact(_read_artefact(opened, inner, loc.path), loc)
