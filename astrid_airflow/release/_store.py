"""A versioned, immutable, atomic store of grouping artefacts on any fsspec filesystem.

Layout::

    <root>/<name>/v0001/artefact.json
    <root>/<name>/v0001/<other files>     (e.g. the gate's suite.json)
    <root>/<name>/v0002/...

A version is *visible* once its ``artefact.json`` exists, and a visible version is
complete: on a local filesystem the whole directory is written under a hidden temporary
name and renamed into place in one ``rename(2)`` (which fails if the target exists, so
two savers can never take the same number); on object stores a saver first claims the
number with a marker, writes the other files, and writes ``artefact.json`` last. A
crash or exception mid-write therefore leaves no visible version. ``docs/artefacts.md``
gives the details.

Valid names and version ids live in ``_store_names``; resolving and loading an artefact
reference (``load_artefact``) in ``_artefact_ref``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import shutil
import time
import uuid
from dataclasses import dataclass
from typing import Any

from astrid_airflow._errors import ArtefactError, AstridError, ParameterError, StoreError
from astrid_airflow.io import (
    ARTEFACT_FILE,
    STORE_CLAIM,
    STORE_VERSION_DIR,
    fs_write_bytes,
    fsync_dir,
    refuse_inside_store,
    staged_dir,
)

from ._artefact import GroupingArtefact
from ._manifest import MANIFEST_FILE, manifest_bytes, read_store_file, verify_manifest
from ._store_names import (
    check_artefact_name,
    check_file_name,
    valid_name,
    version_id,
    version_number,
)

# The layout's names (and the guard that keeps other writers out) live in io.
_VERSION_DIR, _CLAIM = STORE_VERSION_DIR, STORE_CLAIM
_MAX_ATTEMPTS = 200


@dataclass(frozen=True)
class ArtefactLocation:
    """Where an artefact lives.

    ``root``, ``name`` and ``version`` are ``None`` when the artefact was read from a
    path outside a store layout. ``directory`` is the version directory (write files
    beside the artefact there) and ``path`` the ``artefact.json`` itself; both are local
    paths or fsspec URLs.
    """

    root: str | None
    name: str | None
    version: str | None
    directory: str
    path: str


class ArtefactStore:
    """Versioned, immutable artefacts under ``root`` (a local path or fsspec URL).

    Parameters
    ----------
    root : str or path-like
        Local directory or any fsspec URL (``memory://store``, ``s3://bucket/prefix``,
        the paths Airflow's ``ObjectStoragePath`` takes). Created on the first save.
    storage_options : dict, optional
        Passed to fsspec (credentials, endpoint...).
    fs : fsspec.AbstractFileSystem, optional
        An already authenticated filesystem for ``root``'s protocol (Airflow's
        ``ObjectStoragePath.fs``, built from a connection) instead of fsspec's own
        credential chain.
    signing_key : bytes or str, optional
        Key of the HMAC-SHA256 signature of each version's manifest (``save`` signs,
        reading verifies). Default: the key in force (:func:`astrid_airflow.io.signing`
        block, else ``$ASTRID_SIGNING_KEY``, else the key file outside the store, which
        the first save creates), looked up at each save and read.

    Examples
    --------
    >>> store = ArtefactStore("memory://doc-example")          # doctest: +SKIP
    >>> version = store.save("credit", artefact)               # doctest: +SKIP
    >>> store.load("credit") == artefact                       # doctest: +SKIP
    True
    """

    def __init__(self, root: str | os.PathLike, *,
                 storage_options: dict[str, Any] | None = None, fs: Any = None,
                 signing_key: bytes | str | None = None):
        from fsspec.implementations.local import LocalFileSystem

        from astrid_airflow.io import url_to_fs

        text = os.fspath(root) if isinstance(root, (str, os.PathLike)) else None
        if not text:
            raise ParameterError(f"Invalid store root {root!r}: expected a path or URL.")
        try:
            fs, inner = url_to_fs(text, fs, **(storage_options or {}))
        except (ImportError, ValueError, TypeError) as exc:
            raise StoreError(f"Cannot open store {text!r}: {exc}") from None
        self._fs = fs
        self._signing_key = signing_key
        self._local = isinstance(fs, LocalFileSystem)
        self._root = os.path.abspath(inner) if self._local else inner.rstrip("/")
        self.root = self._url(self._root)

    def __repr__(self) -> str:
        return f"ArtefactStore({self.root!r})"

    # ------------------------------------------------------------------- paths
    def _join(self, *parts: str) -> str:
        if self._local:
            return os.path.join(*parts)
        return "/".join(p.rstrip("/") for p in parts)

    def _url(self, inner: str) -> str:
        return inner if self._local else self._fs.unstrip_protocol(inner)

    def _ls_names(self, inner: str) -> list[str]:
        """Base names of the entries of directory ``inner`` ([] if it does not exist)."""
        try:
            if self._local:
                return os.listdir(inner)
            entries = self._fs.ls(inner, detail=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:  # permission, symlink loop (ELOOP), I/O error...
            raise read_error(exc, self._url(inner)) from None
        out = []
        for e in entries:
            base = e.rstrip("/").rsplit("/", 1)[-1]
            if e.rstrip("/") != inner.rstrip("/"):  # some backends list the path itself
                out.append(base)
        return out

    def _isfile(self, inner: str) -> bool:
        if self._local:  # a link is never a store file (see refuse_links)
            return os.path.isfile(inner) and not os.path.islink(inner)
        return self._fs.isfile(inner)

    def _islink(self, inner: str) -> bool:
        return self._local and os.path.islink(inner)

    def refuse_links(self, *parts: str) -> None:
        """Raise ``StoreError`` if ``root/parts[0]``, ``root/parts[0]/parts[1]``... is a
        symbolic link.

        The store never reads or writes through a link inside it, which could lead
        outside the store (the root itself may be a link). Modules that read files of a
        version by path (the gate's suite) call this first. A no-op on object stores.
        """
        if not self._local:
            return
        inner = self._root
        for part in parts:
            inner = os.path.join(inner, part)
            if os.path.islink(inner):
                raise StoreError(f"Refusing {inner!r}: a symbolic link inside the artefact "
                                 "store (the store never follows links under its root).")

    def _check_root(self) -> None:
        if self._local:
            try:
                ok = os.path.isdir(os.path.realpath(self._root, strict=True))
            except FileNotFoundError:
                ok = False
            except OSError as exc:  # e.g. ELOOP: the root is a symlink loop
                raise read_error(exc, self.root) from None
        else:
            ok = self._fs.isdir(self._root) or self._fs.exists(self._root)
        if not ok:
            raise StoreError(f"No artefact store at {self.root!r}: no such directory.")

    def _numbers(self, name: str, *, complete: bool) -> list[int]:
        """Version numbers under ``name``: every entry named like a version when claiming
        a number, only complete non-link version directories (their manifest, written
        last, is there) when reading."""
        return self._numbers_with(name, MANIFEST_FILE if complete else None)

    def _numbers_with(self, name: str, marker: str | None) -> list[int]:
        out = []
        base = self._join(self._root, name)
        for entry in self._ls_names(base):
            m = _VERSION_DIR.fullmatch(entry)
            if m and (marker is None or (not self._islink(self._join(base, entry)) and
                                         self._isfile(self._join(base, entry, marker)))):
                out.append(int(m.group(1)))
        return sorted(out)

    def _listed(self, name: str, versions: list[str]) -> list[str]:
        """``versions`` and the version directories with an artefact but no manifest."""
        found = {int(v[1:]) for v in versions} | set(self._numbers_with(name, ARTEFACT_FILE))
        return [version_id(n) for n in sorted(found)]

    def _key(self) -> bytes | None:
        from astrid_airflow.io import signing_key

        return signing_key(self._signing_key)

    def _saving_key(self) -> bytes:
        """The key a save signs with: the one in force, else a new key file's."""
        from astrid_airflow.io import signing_key_or_new

        return signing_key_or_new(self._signing_key)

    def check_signing_key(self) -> None:
        """Raise ``ParameterError`` now if the key the next save would sign with is bad
        (too short, not text), so a stage refuses it before its work, not after."""
        self._saving_key()

    def _unsaved(self, name: str, numbers: list[int]) -> str:
        """Why versions with an ``artefact.json`` but no manifest are refused."""
        shown = ", ".join(version_id(n) for n in numbers[-5:])
        return (f"version(s) {shown} of {name!r} in {self.root!r} have an {ARTEFACT_FILE} "
                f"but no {MANIFEST_FILE}: they were not written by ArtefactStore.save (made "
                "or copied by hand), or by a release before manifests; they are refused. "
                "Re-learn, or check one and save it again as a new version with "
                "ArtefactStore.resave_unverified(name, version).")

    # ------------------------------------------------------------------- reading
    def names(self) -> list[str]:
        """Names with at least one complete version, sorted."""
        self._check_root()
        return sorted(n for n in self._ls_names(self._root)
                      if valid_name(n) and not self._islink(self._join(self._root, n))
                      and self._numbers(n, complete=True))

    def versions(self, name: str) -> list[str]:
        """Complete versions of ``name``, oldest first (``StoreError`` if none)."""
        check_artefact_name(name)
        self._check_root()
        self.refuse_links(name)
        numbers = self._numbers(name, complete=True)
        if not numbers:
            unsaved = self._numbers_with(name, ARTEFACT_FILE)
            if unsaved:
                raise StoreError(f"No verifiable version: {self._unsaved(name, unsaved)}")
            known = self.names()
            raise StoreError(f"No artefact named {name!r} in {self.root!r}; "
                             f"names there: {known[:20]!r}.")
        return [version_id(n) for n in numbers]

    def latest(self, name: str) -> str:
        """The newest version id of ``name``."""
        return self.versions(name)[-1]

    def resolve(self, name: str, version: str | int = "latest") -> str:
        """The version id ``version`` refers to (``"latest"``, ``"v0003"``, ``"3"``, 3)."""
        number = version_number(version)
        versions = self.versions(name)
        if number is None:
            return versions[-1]
        vid = version_id(number)
        if vid not in versions:
            self.refuse_links(name, vid)
            if number in self._numbers_with(name, ARTEFACT_FILE):
                raise StoreError("The " + self._unsaved(name, [number]))
            raise StoreError(f"No version {vid} of {name!r} in {self.root!r}; "
                             f"versions: {versions[-20:]!r}.")
        return vid

    def path_of(self, name: str, version: str | int = "latest") -> str:
        """The version directory of ``name`` (local path or URL)."""
        vid = self.resolve(name, version)
        return self._url(self._join(self._root, name, vid))

    def location(self, name: str, version: str | int = "latest") -> ArtefactLocation:
        """Where version ``version`` of ``name`` lives."""
        vid = self.resolve(name, version)
        directory = self._join(self._root, name, vid)
        return ArtefactLocation(root=self.root, name=name, version=vid,
                                directory=self._url(directory),
                                path=self._url(self._join(directory, ARTEFACT_FILE)))

    def load(self, name: str, version: str | int = "latest") -> GroupingArtefact:
        """Read and validate an artefact (``ArtefactError`` if it is corrupt)."""
        loc = self.location(name, version)
        return parse_artefact(self.verified_files(name, loc.version)[ARTEFACT_FILE],
                              loc.path)

    def verified_files(self, name: str, version: str | int = "latest") -> dict[str, bytes]:
        """The bytes of every file the version's manifest lists, each verified against it
        (and the manifest's signature with a key configured); ``StoreError`` otherwise.

        ``artefact.json`` is always among them.
        """
        vid = self.resolve(name, version)
        self.refuse_links(name, vid)
        shown = self._url(self._join(self._root, name, vid))

        def read(fname: str) -> bytes:
            inner = self._join(self._root, name, vid, fname)
            try:
                return read_store_file(self._fs, inner, local=self._local,
                                       shown=self._url(inner))
            except (FileNotFoundError, StoreError):
                raise
            except OSError as exc:
                raise read_error(exc, self._url(inner)) from None

        try:
            raw = read(MANIFEST_FILE)
        except FileNotFoundError:
            raise StoreError(f"{shown}: no {MANIFEST_FILE} (removed after it was saved); "
                             "the version is refused.") from None
        files = verify_manifest(raw, name=name, version=vid, read=read, key=self._key(),
                                shown=shown)
        if ARTEFACT_FILE not in files:
            raise StoreError(f"{shown}: the manifest lists no {ARTEFACT_FILE}; the version "
                             "is refused.")
        return files

    def read_file(self, name: str, version: str | int, filename: str) -> bytes:
        """Bytes of a file stored beside the artefact."""
        loc = self.location(name, version)
        inner = self._join(self._root, name, loc.version, check_file_name(filename))
        self.refuse_links(name, loc.version, filename)
        verified = self.verified_files(name, loc.version)
        if filename in verified:
            return verified[filename]
        try:  # added after the save (add_file): its users check it (e.g. verify_suite)
            return read_store_file(self._fs, inner, local=self._local,
                                   shown=self._url(inner))
        except FileNotFoundError:
            raise StoreError(f"No file {filename!r} in {loc.directory!r}.") from None
        except OSError as exc:
            raise read_error(exc, self._url(inner)) from None

    def list(self, name: str | None = None) -> list[dict[str, Any]]:
        """One row per version: name, version, created_at, k, target, fingerprint, path.

        A version whose artefact cannot be read or verified (also one with an
        ``artefact.json`` but no manifest: not written by ``save``) gets ``error`` set (and
        ``None`` in the artefact fields) instead of hiding the other versions; a name
        directory that cannot be read gets one row with ``version`` ``None`` and
        ``error`` set.
        """
        if name is not None:
            vids = {name: self._listed(name, self.versions(name))}
        else:
            self._check_root()
            vids = {}
            for n in sorted(self._ls_names(self._root)):
                if not valid_name(n) or self._islink(self._join(self._root, n)):
                    continue
                try:
                    numbers = self._numbers(n, complete=True)
                    listed = self._listed(n, [version_id(v) for v in numbers])
                except AstridError as exc:  # one unreadable name never hides the others
                    vids[n] = exc
                    continue
                if listed:
                    vids[n] = listed
        rows = []
        for n, found in vids.items():
            if isinstance(found, Exception):
                rows.append({"name": n, "version": None, "created_at": None, "k": None,
                             "target": None, "fingerprint": None,
                             "path": self._url(self._join(self._root, n)),
                             "error": str(found)})
                continue
            for vid in found:
                inner = self._join(self._root, n, vid, ARTEFACT_FILE)
                row: dict[str, Any] = {"name": n, "version": vid, "created_at": None,
                                       "k": None, "target": None, "fingerprint": None,
                                       "path": self._url(self._join(self._root, n, vid)),
                                       "error": None}
                try:
                    a = parse_artefact(self.verified_files(n, vid)[ARTEFACT_FILE],
                                       self._url(inner))
                except AstridError as exc:  # one bad version never hides the others
                    row["error"] = str(exc)
                else:
                    row.update(created_at=a.created_at, k=a.k, target=a.target,
                               fingerprint=dict(a.fingerprint))
                rows.append(row)
        return rows

    # ------------------------------------------------------------------- writing
    def save(self, name: str, artefact: GroupingArtefact, *,
             extra_files: dict[str, bytes] | None = None) -> str:
        """Write ``artefact`` (and ``extra_files``) as a new version; return its id.

        Versions are numbered ``v0001``, ``v0002``... and never overwritten; the SHA-256
        of each extra file is recorded in ``artefact.json`` (``files``). The write is
        atomic: until it completes no new version is visible, and a failure leaves
        none behind. Concurrent savers to one name get distinct versions.
        """
        check_artefact_name(name)
        # a store nested inside another store's version is a write there
        target = self._join(self._root, name)
        refuse_inside_store(self._fs, target, self._local, self._url(target))
        if not isinstance(artefact, GroupingArtefact):
            raise ParameterError(f"Expected a GroupingArtefact, got {type(artefact).__name__}.")
        files: dict[str, bytes] = {}
        for fname, data in (extra_files or {}).items():
            if not isinstance(data, (bytes, bytearray)):
                raise ParameterError(f"extra_files[{fname!r}] must be bytes, "
                                     f"got {type(data).__name__}.")
            files[check_file_name(fname)] = bytes(data)
        if files:
            # artefact.json records the digest of every file saved with it, so a file
            # edited or deleted later (e.g. a weakened suite.json) is detected on use
            artefact = dataclasses.replace(artefact, files={
                f: hashlib.sha256(d).hexdigest() for f, d in sorted(files.items())})
        files[ARTEFACT_FILE] = artefact.to_json().encode("utf-8")
        if self._local:
            return self._save_local(name, files)
        return self._save_remote(name, files)

    def add_file(self, name: str, version: str | int, filename: str, data: bytes, *,
                 overwrite: bool = False) -> str:
        """Atomically add a file beside an existing artefact (never ``artefact.json``).

        For files other modules keep with a version (e.g. the gate's suite). Returns the
        file's path or URL.
        """
        loc = self.location(name, version)
        inner = self._join(self._root, name, loc.version, check_file_name(filename))
        self.refuse_links(name, loc.version, filename)
        fs_write_bytes(self._fs, inner, bytes(data), overwrite=overwrite, into_store=True)
        return self._url(inner)

    def resave_unverified(self, name: str, version: str | int) -> str:
        """Save a version that has no manifest again, as a new version that has one.

        For versions written before manifests (or copied in by hand) that a person has
        checked: the store cannot tell either from a tampered one, so it never reads
        them on its own. The files its ``artefact.json`` records are carried over only
        with the recorded digests. Returns the new version id.
        """
        number = version_number(version)
        if number is None or number not in self._numbers_with(check_artefact_name(name),
                                                              ARTEFACT_FILE):
            raise StoreError(f"No version {version!r} of {name!r} with an {ARTEFACT_FILE} "
                             f"in {self.root!r}.")
        vid = version_id(number)
        self.refuse_links(name, vid)

        def read(fname: str) -> bytes:
            inner = self._join(self._root, name, vid, fname)
            return read_store_file(self._fs, inner, local=self._local, shown=self._url(inner))

        artefact = parse_artefact(read(ARTEFACT_FILE), f"{name}@{vid}")
        extra = {}
        for fname, digest in (artefact.files or {}).items():
            data = read(check_file_name(fname))
            if hashlib.sha256(data).hexdigest() != digest:
                raise StoreError(f"{name}@{vid}: {fname} does not match the digest its "
                                 f"{ARTEFACT_FILE} records; not re-saved.")
            extra[fname] = data
        return self.save(name, dataclasses.replace(artefact, files=None), extra_files=extra)

    def _save_local(self, name: str, files: dict[str, bytes]) -> str:
        base = os.path.join(self._root, name)
        self.refuse_links(name)
        key = self._saving_key()
        stamped = max(self._numbers(name, complete=False), default=0) + 1
        try:
            # the manifest last, so that even the temporary directory is complete
            # whenever it holds one; versions are immutable (read-only files).
            tmp = staged_dir(base, ".saving-", {**files, MANIFEST_FILE: manifest_bytes(
                name, version_id(stamped), files, key)}, file_mode=0o444, last=MANIFEST_FILE)
        except OSError as exc:
            raise _write_error(exc, self.root) from None
        try:
            for _ in range(_MAX_ATTEMPTS):
                number = max(self._numbers(name, complete=False), default=0) + 1
                dest = os.path.join(base, version_id(number))
                if os.path.lexists(dest):  # rename would replace an *empty* directory
                    continue
                if number != stamped:  # the manifest names its version: re-stamp it
                    _restamp(tmp, manifest_bytes(name, version_id(number), files, key))
                    stamped = number
                try:
                    os.rename(tmp, dest)  # fails if dest appeared meanwhile
                except OSError as exc:
                    if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                        continue  # another saver took this number: take the next one
                    raise
                fsync_dir(base)
                return version_id(number)
            raise StoreError(f"Could not claim a version number for {name!r} in "
                             f"{self.root!r} after {_MAX_ATTEMPTS} attempts.")
        except OSError as exc:
            raise _write_error(exc, self.root) from None
        finally:
            if os.path.isdir(tmp):
                shutil.rmtree(tmp, ignore_errors=True)

    def _save_remote(self, name: str, files: dict[str, bytes]) -> str:
        fs = self._fs
        base = self._join(self._root, name)
        me = f"{_CLAIM}{uuid.uuid4().hex}"
        for attempt in range(_MAX_ATTEMPTS):
            number = max(self._numbers(name, complete=False), default=0) + 1
            vdir = self._join(base, version_id(number))
            claim = self._join(vdir, me)
            try:
                # No makedirs: on object stores a prefix exists only while a key is in it,
                # so a number whose savers all back off is free again.
                fs.pipe_file(claim, b"")
                entries = self._ls_names(vdir)
            except OSError as exc:
                raise _write_error(exc, self.root) from None
            # Won only if ours is the sole entry: a rival that wrote its claim before
            # our listing is seen by us; one that wrote after sees ours and backs off.
            if entries != [me]:
                with contextlib.suppress(Exception):
                    fs.rm(claim)
                time.sleep(0.001 * (1 + attempt % 10) * (1 + uuid.uuid4().int % 7))
                continue
            try:
                for fname in sorted(files, key=lambda f: f == ARTEFACT_FILE):
                    fs_write_bytes(fs, self._join(vdir, fname), files[fname],
                                   into_store=True)
                # last: its presence makes the version visible (and verifiable)
                fs_write_bytes(fs, self._join(vdir, MANIFEST_FILE), manifest_bytes(
                    name, version_id(number), files, self._saving_key()), into_store=True)
                with contextlib.suppress(Exception):
                    fs.rm(claim)
            except BaseException as exc:
                with contextlib.suppress(Exception):  # leave no partial version
                    fs.rm(vdir, recursive=True)
                if isinstance(exc, OSError):
                    raise _write_error(exc, self.root) from None
                raise
            return version_id(number)
        raise StoreError(f"Could not claim a version number for {name!r} in {self.root!r} "
                         f"after {_MAX_ATTEMPTS} attempts.")


# --------------------------------------------------------------------------- helpers

def read_error(exc: OSError, shown: str) -> StoreError:
    if isinstance(exc, PermissionError):
        return StoreError(f"Cannot read {shown!r}: permission denied.")
    return StoreError(f"Cannot read {shown!r}: {exc.strerror or exc}.")


def _write_error(exc: OSError, root: str) -> StoreError:
    if isinstance(exc, PermissionError):
        return StoreError(f"Cannot write to store {root!r}: permission denied.")
    return StoreError(f"Cannot write to store {root!r}: {exc.strerror or exc}.")


def _restamp(tmp: str, data: bytes) -> None:
    """Replace the manifest in the private temporary directory ``tmp`` (durably)."""
    path = os.path.join(tmp, MANIFEST_FILE)
    os.unlink(path)
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, 0o444)
    fsync_dir(tmp)


def parse_artefact(data: bytes, shown: str) -> GroupingArtefact:
    try:
        return GroupingArtefact.from_json(data)
    except ArtefactError as exc:
        raise type(exc)(f"{shown}: {exc}") from None
