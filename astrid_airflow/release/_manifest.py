"""The manifest of a stored artefact version: what ``save`` wrote, and nothing else.

Every version directory written by :meth:`ArtefactStore.save
<astrid_airflow.release.ArtefactStore.save>` holds ``manifest.json``, written *last*:
the name, the version and the SHA-256 of every file saved with it (``artefact.json``
included), HMAC-SHA256 signed with the key in force, created on the first save if
there is none (:mod:`astrid_airflow.io._signing`). Reading a version verifies it: every listed file
must be there with exactly those bytes, and the name and version must be the
directory's (a signed version copied to another number or name is refused). An unsigned
manifest, one signed with another key, or any manifest when no key is configured to
check it, is refused too, unless unsigned stores are allowed explicitly.

An allowed unsigned manifest is a checksum: it catches a file edited, replaced or
deleted, and a version made by hand, by anyone who does not also rewrite the manifest.
A signed one catches them whoever did it, as long as they do not hold the key
(``docs/reliability.md``, threat model).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from astrid_airflow._errors import StoreError
from astrid_airflow.io import SIGNATURE, key_file, sign, signature_problem, unsigned_allowed

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
_MAX_MANIFEST_BYTES = 1 << 20  # thousands of file names; a bigger one is not ours


def manifest_bytes(name: str, version: str, files: Mapping[str, bytes],
                   key: bytes | None) -> bytes:
    """The manifest of version ``version`` of ``name`` holding ``files`` (signed with
    ``key`` if given)."""
    document: dict[str, Any] = {
        "manifest_format": MANIFEST_FORMAT, "name": name, "version": version,
        "files": {f: hashlib.sha256(files[f]).hexdigest() for f in sorted(files)},
    }
    if key is not None:
        document = sign(document, key)
    return _manifest_text(document)


def _manifest_text(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _check_signature(doc: Mapping[str, Any], key: bytes | None, shown: str) -> None:
    """Refuse a manifest no key in force signed, unless unsigned stores are allowed
    explicitly (then it is a checksum only)."""
    unsigned_ok = unsigned_allowed()
    if SIGNATURE in doc and not isinstance(doc[SIGNATURE], dict):
        raise StoreError(f"{shown}: a malformed signature; the version is refused.")
    if key is None:
        if not unsigned_ok:
            raise StoreError(
                f"{shown}: no signing key is configured here to verify the manifest "
                f"($ASTRID_SIGNING_KEY, the key file {str(key_file())!r} or the Airflow "
                "connection of the key the store was saved with); the version is refused. "
                "Pass --allow-unsigned (ASTRID_ALLOW_UNSIGNED=1) to trust its checksums "
                "only.")
        return
    problem = signature_problem(doc, key)
    if problem is None or (unsigned_ok and SIGNATURE not in doc):
        return
    hint = (" Pass --allow-unsigned (ASTRID_ALLOW_UNSIGNED=1) to read an unsigned store "
            "as checksummed only." if SIGNATURE not in doc else "")
    raise StoreError(f"{shown}: the manifest's signature does not hold: {problem}. "
                     "The version is refused (not written by a saver holding the "
                     f"signing key, or changed since).{hint}")


def verify_manifest(raw: bytes, *, name: str, version: str,
                    read: Callable[[str], bytes], key: bytes | None,
                    shown: str) -> dict[str, bytes]:
    """Check a version against its manifest; return the verified bytes of every file.

    ``read(filename)`` gives a file's bytes (``FileNotFoundError`` if absent). The
    bytes returned are the ones hashed, so a caller parses exactly what was verified.
    """
    from astrid_airflow.io import load_json

    if len(raw) > _MAX_MANIFEST_BYTES:
        raise StoreError(f"{shown}: the manifest is {len(raw)} bytes, not one the store "
                         "wrote; the version is refused.")
    try:
        doc = load_json(raw, f"manifest {shown}", error=StoreError)
    except StoreError as exc:
        raise StoreError(f"{exc} The version is refused (tampered or damaged).") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict) or doc.get("manifest_format") != MANIFEST_FORMAT or \
            not all(isinstance(v, str) for v in files.values()):
        raise StoreError(f"{shown}: not a manifest the store wrote (format "
                         f"{MANIFEST_FORMAT}); the version is refused.")
    if doc.get("name") != name or doc.get("version") != version:
        raise StoreError(f"{shown}: the manifest is for {str(doc.get('name'))[:80]}@"
                         f"{str(doc.get('version'))[:20]}, not {name}@{version} (a version "
                         "copied from elsewhere); the version is refused.")
    _check_signature(doc, key, shown)
    if raw != _manifest_text(doc):
        # the signature covers the parsed document: a re-formatted manifest (a byte of
        # whitespace) would otherwise pass as the one the store wrote
        raise StoreError(f"{shown}: the manifest is not byte for byte as the store writes "
                         "it (re-formatted or edited); the version is refused.")
    out = {}
    for fname, digest in sorted(files.items()):
        try:
            data = read(fname)
        except FileNotFoundError:
            raise StoreError(f"{shown}: {fname} is listed but missing; the version is "
                             "refused (a file was deleted).") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise StoreError(f"{shown}: {fname} does not match its digest in the manifest "
                             f"(recorded {digest[:12]}…, found "
                             f"{hashlib.sha256(data).hexdigest()[:12]}…); the version is "
                             "refused (the file was changed after it was saved).")
        out[fname] = data
    return out


def read_store_file(fs: Any, inner: str, *, local: bool, shown: str) -> bytes:
    """Bytes of a file of a version, refusing what no ``save`` makes: on a local store a
    symbolic link, a non-regular file (FIFO, device) or a file with other hard links
    (one written through another name, e.g. ``ln other/artefact.json``).

    ``FileNotFoundError`` propagates (the caller says what is missing).
    """
    if not local:
        return fs.cat_file(inner)
    import os
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(inner, flags)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if os.path.islink(inner):  # O_NOFOLLOW: ELOOP on a link
            raise StoreError(f"Refusing {shown!r}: a symbolic link inside the artefact "
                             "store (the store never follows links under its root).") from None
        raise StoreError(f"Cannot read {shown!r}: {exc.strerror or exc}.") from None
    try:
        st = os.fstat(fd)  # of the file opened, so no swap between check and read
        if not stat.S_ISREG(st.st_mode):
            raise StoreError(f"Refusing {shown!r}: not a regular file (a directory, pipe "
                             "or device) inside the artefact store.")
        if st.st_nlink > 1:
            raise StoreError(f"Refusing {shown!r}: it has {st.st_nlink} hard links; a file "
                             "the store saved has one (another name can change it).")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
