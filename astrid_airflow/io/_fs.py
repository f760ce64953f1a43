"""Which fsspec filesystem opens a URL: a caller's own, or fsspec's default.

The artefact store, artefact references and the gate's files beside an artefact are
URLs in the library. By default fsspec opens them with its own credential chain
(environment, instance profile). A caller that already holds an authenticated
filesystem (Airflow's ``ObjectStoragePath.fs``, built from a connection) passes it as
``fs=`` to ``ArtefactStore``, ``load_artefact`` or ``validate_surrogate``; for the
duration of that call every URL of the filesystem's protocol is opened with it, down to
the suite written beside the artefact, instead of threading the object through each
helper. ``url_to_fs`` here is the one place the library resolves store URLs.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

from astrid_airflow._errors import StoreError

# innermost first; a tuple so a nested call never mutates an outer one's view
_ACTIVE: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "astrid_airflow_filesystems", default=())


def protocols(fs: Any) -> tuple[str, ...]:
    """The URL schemes a filesystem answers to (``("s3", "s3a")``, ``("memory",)``)."""
    proto = fs.protocol
    return (proto,) if isinstance(proto, str) else tuple(proto)


def _scheme(url: str) -> str:
    from fsspec.utils import get_protocol

    return get_protocol(url)


def url_to_fs(url: str, fs: Any = None, **storage_options: Any) -> tuple[Any, str]:
    """``(filesystem, path inside it)`` for ``url``.

    Parameters
    ----------
    url : str
        Local path or fsspec URL.
    fs : fsspec.AbstractFileSystem, optional
        Use this filesystem (its protocol must match the URL's).
    **storage_options
        Passed to fsspec when no given or active filesystem serves the URL.
    """
    import fsspec

    scheme = _scheme(url)
    for candidate in ((fs,) if fs is not None else ()) + _ACTIVE.get():
        if scheme in protocols(candidate):
            return candidate, candidate._strip_protocol(url)
    if fs is not None:
        raise ValueError(f"the filesystem given ({'/'.join(protocols(fs))}://) cannot open "
                         f"{url!r}")
    return fsspec.core.url_to_fs(url, **storage_options)


@contextlib.contextmanager
def using(fs: Any = None) -> Iterator[None]:
    """Within the block, URLs of ``fs``'s protocol open with ``fs`` (None: no change)."""
    if fs is None:
        yield
        return
    token = _ACTIVE.set((fs, *_ACTIVE.get()))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def split_url(path: str | os.PathLike) -> tuple[object, str, bool]:
    """``(filesystem, path inside it, is_local)`` for a local path or fsspec URL."""
    from fsspec.implementations.local import LocalFileSystem

    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        raise StoreError(f"Invalid path {path!r}: expected a non-empty path or URL.")
    try:
        fs, inner = url_to_fs(text)
    except (ImportError, ValueError) as exc:  # unknown protocol, missing backend
        raise StoreError(f"Cannot open {text!r}: {exc}") from None
    local = isinstance(fs, LocalFileSystem)
    return fs, (os.path.abspath(inner) if local else inner), local


def is_local(path: str | os.PathLike) -> bool:
    """True if ``path`` is on the local filesystem (a plain path or ``file://`` URL)."""
    return split_url(path)[2]
