"""Atomic writes: a reader sees the old state or the complete new file, never a part.

Local paths are written to a temporary file in the destination's directory, flushed
and ``fsync``-ed, then moved into place with one ``rename``-family system call; the
directory is ``fsync``-ed after it so the new name survives a power cut. Without
``overwrite`` the move is ``link(2)``, which fails if the destination exists, so two
writers can never silently replace each other's output.

Other fsspec URLs (``s3://``, ``gs://``, ``memory://``...) are written to a temporary
key beside the destination and then moved. Object stores publish a key in one step, so a
reader still never sees a half-written object; the no-overwrite check there is
check-then-move (object stores have no portable create-if-absent), which is documented
in ``docs/artefacts.md``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from astrid_airflow._errors import StoreError

from ._fs import split_url
from ._modes import file_mode, make_dirs, strip_others_write
from ._store_layout import check_outside_store


def _tmp_name(dest: str) -> str:
    # Hidden and unique, in the destination's directory so the final move is a rename.
    head, tail = os.path.split(dest.rstrip("/"))
    return os.path.join(head, f".{tail}.{uuid.uuid4().hex[:12]}.tmp")


def fsync_dir(directory: str) -> None:
    """``fsync`` a directory so a rename inside it survives a power cut (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms/filesystems cannot open a directory
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: str) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _os_error(exc: OSError, dest: str) -> StoreError:
    if isinstance(exc, PermissionError):
        return StoreError(f"Cannot write {dest!r}: permission denied.")
    return StoreError(f"Cannot write {dest!r}: {exc.strerror or exc}.")


def _exists_error(dest: str) -> StoreError:
    return StoreError(f"Refusing to overwrite existing {dest!r} (pass overwrite=True to "
                      "replace it).")


def _publish_local(tmp: str, dest: str, overwrite: bool) -> None:
    """Move the complete file ``tmp`` to ``dest`` in one step (``tmp`` is consumed)."""
    if overwrite:
        if os.path.isdir(dest):
            raise StoreError(f"Cannot write {dest!r}: it is a directory.")
        os.replace(tmp, dest)
    else:
        try:
            os.link(tmp, dest)  # atomic create-if-absent
        except FileExistsError:
            raise _exists_error(dest) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            # No hard links here (some FUSE/SMB mounts): check, then rename.
            if os.path.lexists(dest):
                raise _exists_error(dest) from None
            os.rename(tmp, dest)
        else:
            os.unlink(tmp)
    fsync_dir(os.path.dirname(dest))


def _remove_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *,
                       overwrite: bool = False, into_store: bool = False) -> str:
    """Write ``data`` to ``path`` atomically and return the path written.

    Parameters
    ----------
    path : str or path-like
        Local path or fsspec URL. Missing parent directories are created.
    data : bytes
        The complete content.
    overwrite : bool, default False
        Replace an existing file. Without it an existing destination raises
        ``StoreError`` and is left untouched.
    into_store : bool, default False
        Only for :class:`~astrid_airflow.release._store.ArtefactStore`: allow a destination
        inside an artefact store (see :func:`atomic_path`).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    with atomic_path(path, overwrite=overwrite, into_store=into_store) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return os.fspath(path)


def atomic_write_text(path: str | os.PathLike, text: str, *, encoding: str = "utf-8",
                      overwrite: bool = False) -> str:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    return atomic_write_bytes(path, text.encode(encoding), overwrite=overwrite)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, overwrite: bool = False,
                into_store: bool = False) -> Iterator[str]:
    """Yield a temporary local filename; on success move it to ``path`` atomically.

    For writers that want a filename (``pyarrow.parquet.write_table``,
    ``DataFrame.to_csv``). The temporary file is in the destination's directory for a
    local ``path`` (so the final move is a rename) and in the system temp directory for
    a remote URL (it is uploaded to a temporary key, then moved). If the body raises,
    the temporary file is removed and ``path`` is untouched; an ``OSError`` of the body
    (disk full while writing) becomes a one-line ``StoreError``.

    A destination inside an artefact store's name or version directory is refused
    (``StoreError``) unless ``into_store`` (the store's own writes): versions are
    immutable.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "out.txt") as tmp:
    ...     _ = pathlib.Path(tmp).write_text("done")
    >>> (d / "out.txt").read_text()
    'done'
    """
    fs, dest, local = split_url(path)
    if not into_store:
        check_outside_store(path)
    if local:
        parent = os.path.dirname(dest)
        if os.path.isdir(dest):
            raise StoreError(f"Cannot write {dest!r}: it is a directory.")
        if not overwrite and os.path.lexists(dest):
            raise _exists_error(dest)  # fail before the caller does the expensive work
        try:
            make_dirs(parent)
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(dest)}.",
                                       suffix=".tmp")
            os.close(fd)
        except OSError as exc:
            raise _os_error(exc, dest) from None
        try:
            yield tmp
        except OSError as exc:  # e.g. ENOSPC while writing: nothing left, one line
            _remove_quietly(tmp)
            raise _os_error(exc, dest) from None
        except BaseException:  # the writer failed: leave nothing behind
            _remove_quietly(tmp)
            raise
        try:
            if not os.path.isfile(tmp):
                raise StoreError(f"Nothing was written to the temporary file for {dest!r}.")
            if not into_store:  # mkstemp's 0600 would outlive the rename: the umask decides
                os.chmod(tmp, file_mode())
            _fsync_file(tmp)
            _publish_local(tmp, dest, overwrite)
        except OSError as exc:
            _remove_quietly(tmp)
            raise _os_error(exc, dest) from None
        except BaseException:
            _remove_quietly(tmp)
            raise
        return
    # Remote: write locally, upload to a temporary key, move into place.
    if not overwrite and fs.exists(dest):
        raise _exists_error(path)
    with tempfile.TemporaryDirectory(prefix="astrid-atomic-") as scratch:
        tmp = os.path.join(scratch, Path(dest).name or "data")
        try:
            yield tmp
        except OSError as exc:  # e.g. the local scratch disk is full: one line
            raise _os_error(exc, os.fspath(path)) from None
        if not os.path.isfile(tmp):
            raise StoreError(f"Nothing was written to the temporary file for {path!r}.")
        _put_remote(fs, tmp, dest, overwrite, path)


def fs_write_bytes(fs: object, path: str, data: bytes, *, overwrite: bool = False,
                   into_store: bool = False) -> None:
    """Atomically write ``data`` to ``path`` inside an fsspec filesystem ``fs``.

    For stores opened with storage options (credentials, endpoints): the caller keeps
    one filesystem object. A local filesystem goes through :func:`atomic_write_bytes`.
    """
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(fs, LocalFileSystem):
        atomic_write_bytes(path, data, overwrite=overwrite, into_store=into_store)
        return
    if not overwrite and fs.exists(path):
        raise _exists_error(fs.unstrip_protocol(path))
    _put_remote(fs, bytes(data), path, overwrite, fs.unstrip_protocol(path))


def fs_put_file(fs: object, local: str, dest: str, *, overwrite: bool = False) -> None:
    """Upload the complete local file ``local`` to ``dest`` in ``fs`` atomically.

    Written to a temporary key beside ``dest`` and then moved onto it (an object store
    publishes a key in one step); a local ``fs`` goes through :func:`atomic_path`.
    """
    from fsspec.implementations.local import LocalFileSystem

    if isinstance(fs, LocalFileSystem):
        with atomic_path(dest, overwrite=overwrite) as tmp, open(local, "rb") as fin, \
                open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, length=1 << 20)
        return
    if not overwrite and fs.exists(dest):
        raise _exists_error(fs.unstrip_protocol(dest))
    _put_remote(fs, local, dest, overwrite, fs.unstrip_protocol(dest))


def _put_remote(fs, source: str | bytes, dest: str, overwrite: bool, shown: object) -> None:
    """Upload ``source`` (a local file or bytes) to a temporary key, then move it."""
    key = _tmp_name(dest)
    try:
        parent = dest.rsplit("/", 1)[0] if "/" in dest else ""
        if parent:
            fs.makedirs(parent, exist_ok=True)
        if isinstance(source, bytes):
            fs.pipe_file(key, source)
        else:
            fs.put_file(source, key)
        if not overwrite and fs.exists(dest):
            raise _exists_error(shown)
        fs.mv(key, dest)
    except StoreError:
        _rm_remote(fs, key)
        raise
    except OSError as exc:
        _rm_remote(fs, key)
        raise _os_error(exc, os.fspath(shown)) from None
    except BaseException:
        _rm_remote(fs, key)
        raise


def _rm_remote(fs, key: str) -> None:
    with contextlib.suppress(Exception):
        if fs.exists(key):
            fs.rm(key, recursive=True)


def refuse_overwriting_inputs(outputs: list[str | os.PathLike],
                              inputs: list[str | os.PathLike]) -> None:
    """Raise ``StoreError`` if an output is one of the inputs, or holds one.

    Compared after resolving links, and by device and inode for existing local files,
    so ``--out`` through a symlink or a hard link to the input is caught too; an input
    inside an output directory (a report directory, replaced whole) counts as well.
    Called before any work, so an input is never replaced by its own output. Entries
    that are not paths (DataFrames, database URLs) are skipped.
    """
    def where(path: object) -> tuple[object, str, bool] | None:
        if not isinstance(path, (str, os.PathLike)):
            return None
        try:
            return split_url(path)
        except StoreError:  # e.g. postgresql://: not a file
            return None

    for out in outputs:
        if (o := where(out)) is None:
            continue
        _fs, dest, local = o
        for src in inputs:
            if (i := where(src)) is None:
                continue
            sfs, source, slocal = i
            if local != slocal:
                continue
            inside = False
            if local:
                real, real_src = os.path.realpath(dest), os.path.realpath(source)
                inside = real_src.startswith(real.rstrip(os.sep) + os.sep)
                same = real == real_src
                if not same and os.path.exists(dest) and os.path.exists(source):
                    with contextlib.suppress(OSError):
                        same = os.path.samefile(dest, source)
            else:
                same = type(_fs) is type(sfs) and dest.rstrip("/") == source.rstrip("/")
            if same or inside:
                raise StoreError(f"Refusing to write {os.fspath(out)!r}: it "
                                 f"{'holds' if inside else 'is'} the input "
                                 f"{os.fspath(src)!r} (an output never replaces an input; "
                                 "choose another path).")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary local directory; on success move it to ``path`` in one rename.

    Local paths only (object stores have no directory rename; the store uses a
    commit-marker protocol there instead). The destination must not exist: ``rename(2)``
    of a directory onto a non-empty one fails, which is what makes claiming a version
    number race-free; an existing destination raises ``FileExistsError`` (so a caller can
    retry with another name) and the temporary directory is removed.
    """
    _fs, dest, local = split_url(path)
    if not local:
        raise StoreError(f"atomic_dir needs a local path, got {os.fspath(path)!r}.")
    parent = os.path.dirname(dest)
    try:
        make_dirs(parent)
        tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(dest)}.",
                               suffix=".tmp")
    except OSError as exc:
        raise _os_error(exc, dest) from None
    try:
        yield tmp
        strip_others_write(tmp)
        for entry in os.scandir(tmp):
            if entry.is_file(follow_symlinks=False):
                _fsync_file(entry.path)
        fsync_dir(tmp)
        if os.path.lexists(dest):  # an existing *empty* directory would be replaced
            raise FileExistsError(errno.EEXIST, "destination exists", dest)
        try:
            os.rename(tmp, dest)
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(errno.EEXIST, "destination exists", dest) from None
            raise
        fsync_dir(parent)
    except BaseException:
        _remove_quietly(tmp)
        raise


def staged_dir(parent: str, prefix: str, files: dict[str, bytes], *,
               file_mode: int | None = None, last: str | None = None) -> str:
    """A new hidden temporary directory in ``parent`` holding ``files``, all durable.

    Each file is written, flushed and ``fsync``-ed (``last`` is written after the
    others, so a directory that holds it is complete), then the directory itself; the
    caller renames it into place (:func:`replace_dir`, or a rename that claims a name).
    ``OSError`` propagates, with nothing left behind.
    """
    make_dirs(parent)
    tmp = tempfile.mkdtemp(dir=parent, prefix=prefix, suffix=".tmp")
    try:
        for name in sorted(files, key=lambda f: f == last):
            path = os.path.join(tmp, name)
            with open(path, "wb") as fh:
                fh.write(files[name])
                fh.flush()
                os.fsync(fh.fileno())
            if file_mode is not None:
                os.chmod(path, file_mode)
        strip_others_write(tmp)
        fsync_dir(tmp)
    except BaseException:
        _remove_quietly(tmp)
        raise
    return tmp


def replace_dir(tmp: str, dest: str) -> None:
    """Move the complete directory ``tmp`` to ``dest``, swapping out an existing one.

    The old directory is renamed aside, the new one renamed in (the old one is put back
    if that fails), then the old one is removed: a reader sees the old or the new
    directory, never a mix. ``tmp`` is consumed on success.
    """
    parent = os.path.dirname(dest) or "."
    old = None
    if os.path.lexists(dest):
        old = os.path.join(parent, f".{os.path.basename(dest)}.{uuid.uuid4().hex[:8]}.old")
        os.rename(dest, old)
        try:
            os.rename(tmp, dest)
        except OSError:
            os.rename(old, dest)
            raise
    else:
        os.rename(tmp, dest)
    fsync_dir(parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
