"""HMAC-SHA256 signatures of small JSON documents (store manifests, gate receipts).

A digest alone proves nothing to whoever can rewrite it: a user who can write the store
or the staging area can recompute every SHA-256. A *signature* needs the key, which
only the pipeline's service identity holds. The key comes, in this order, from the
``key`` argument, the innermost :func:`signing` block (an operator reads it from an
Airflow connection and opens one), the environment variable ``ASTRID_SIGNING_KEY``, or
the key file (``$ASTRID_KEY_FILE``, else ``~/.config/astrid-airflow/signing.key``),
outside every store and readable by its owner only. Signing is the default: the first
save with no key creates that file (:func:`signing_key_or_new`). A reader refuses an
unsigned store unless unsigned stores are allowed explicitly (:func:`allowing_unsigned`,
``--allow-unsigned``, ``$ASTRID_ALLOW_UNSIGNED=1``): without that, whoever can write a
store could rewrite its digests (``docs/reliability.md``, threat model).

What is signed is the canonical JSON of the document without its ``signature`` field
(sorted keys, no spaces, ASCII, no NaN), so the signature does not depend on how the
document was pretty-printed.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from astrid_airflow._errors import ParameterError

ENV_KEY = "ASTRID_SIGNING_KEY"
ENV_KEY_FILE = "ASTRID_KEY_FILE"
ENV_ALLOW_UNSIGNED = "ASTRID_ALLOW_UNSIGNED"
SIGNATURE = "signature"
ALGORITHM = "hmac-sha256"
MIN_KEY_BYTES = 16  # 128 bits: a shorter secret can be guessed offline from one document

_ACTIVE: contextvars.ContextVar[bytes | None] = contextvars.ContextVar(
    "astrid_signing_key", default=None)
_UNSIGNED_OK: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "astrid_allow_unsigned", default=False)


def _as_key(key: object, what: str) -> bytes:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray)):
        raise ParameterError(f"Invalid signing key ({what}): expected text or bytes, got "
                             f"{type(key).__name__}.")
    if len(key) < MIN_KEY_BYTES:
        raise ParameterError(f"Invalid signing key ({what}): {len(key)} bytes, at least "
                             f"{MIN_KEY_BYTES} are needed (e.g. `openssl rand -hex 32`).")
    return bytes(key)


def signing_key(key: bytes | str | None = None) -> bytes | None:
    """The key in force: ``key``, else the innermost :func:`signing` block's, else
    ``$ASTRID_SIGNING_KEY``, else the key file's if it exists, else None."""
    if key is not None:
        return _as_key(key, "argument")
    active = _ACTIVE.get()
    if active is not None:
        return active
    env = os.environ.get(ENV_KEY)
    if env:
        return _as_key(env, f"${ENV_KEY}")
    return _read_key_file(key_file())


def key_file() -> Path:
    """Where the default key lives: ``$ASTRID_KEY_FILE``, else
    ``$XDG_CONFIG_HOME/astrid-airflow/signing.key`` (``~/.config`` by default)."""
    named = os.environ.get(ENV_KEY_FILE)
    if named:
        return Path(named).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"),
                                                               ".config")
    return Path(config) / "astrid-airflow" / "signing.key"


def _read_key_file(path: Path) -> bytes | None:
    """The key ``path`` holds (None if there is no file); refused if others can read or
    write it, or it is not its reader's own regular file: a key anyone can read signs
    for anyone."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ParameterError(f"Cannot read the signing key file {str(path)!r}: "
                             f"{exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() \
                or info.st_mode & 0o077:
            raise ParameterError(
                f"Refusing the signing key file {str(path)!r}: it must be a regular file "
                f"of this user with owner-only permissions (mode "
                f"{stat.S_IMODE(info.st_mode):o}; `chmod 600` it).")
        text = handle.read(4096).strip()
    return _as_key(text, f"key file {str(path)!r}")


def signing_key_or_new(key: bytes | str | None = None) -> bytes:
    """:func:`signing_key`, creating the key file first if no key is configured at all
    (a saver signs by default). Concurrent first savers agree on one key: the file is
    written whole under a temporary name and linked into place, never overwritten."""
    found = signing_key(key)
    if found is not None:
        return found
    path = key_file()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)  # whatever the umask
            handle.write(secrets.token_hex(32).encode("ascii") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:  # another saver was first: its key is the key
            pass
    finally:
        tmp.unlink(missing_ok=True)
    made = _read_key_file(path)
    assert made is not None
    return made


def unsigned_allowed() -> bool:
    """Whether readers accept a store or receipt that no key in force signed: inside
    :func:`allowing_unsigned` (True), or with ``$ASTRID_ALLOW_UNSIGNED=1``."""
    return _UNSIGNED_OK.get() or os.environ.get(ENV_ALLOW_UNSIGNED, "") in ("1", "true")


@contextlib.contextmanager
def allowing_unsigned(allowed: bool = True) -> Iterator[None]:
    """Within the block, unsigned stores are read as checksummed only (``allowed``
    False: no change)."""
    if not allowed:
        yield
        return
    token = _UNSIGNED_OK.set(True)
    try:
        yield
    finally:
        _UNSIGNED_OK.reset(token)


@contextlib.contextmanager
def signing(key: bytes | str | None) -> Iterator[None]:
    """Within the block, :func:`signing_key` returns ``key`` (None: no change)."""
    if key is None:
        yield
        return
    token = _ACTIVE.set(_as_key(key, "signing block"))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def canonical_json(document: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: ``document`` without ``signature``, canonically."""
    body = {k: v for k, v in document.items() if k != SIGNATURE}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def sign(document: Mapping[str, Any], key: bytes) -> dict[str, Any]:
    """``document`` with a ``signature`` (``{"algorithm", "key_id", "value"}``).

    ``key_id`` is a short digest of the key, so a reader with another key says "signed
    with another key" instead of "forged" (it reveals nothing usable about the key).
    """
    value = hmac.new(key, canonical_json(document), hashlib.sha256).hexdigest()
    return {**{k: v for k, v in document.items() if k != SIGNATURE},
            SIGNATURE: {"algorithm": ALGORITHM, "key_id": key_id(key), "value": value}}


def key_id(key: bytes) -> str:
    """First 16 hex digits of SHA-256("astrid key id" + key): names a key, not usable
    to check or make signatures."""
    return hashlib.sha256(b"astrid key id\0" + key).hexdigest()[:16]


def signature_problem(document: Mapping[str, Any], key: bytes) -> str | None:
    """Why ``document``'s signature does not hold under ``key`` (None: it holds)."""
    sig = document.get(SIGNATURE)
    if not isinstance(sig, Mapping):
        return "it is not signed"
    if sig.get("algorithm") != ALGORITHM:
        return f"unknown signature algorithm {str(sig.get('algorithm'))[:40]!r}"
    if sig.get("key_id") != key_id(key):
        return (f"it was signed with another key (key id {str(sig.get('key_id'))[:16]!r}, "
                f"the key configured here is {key_id(key)!r})")
    try:
        expected = hmac.new(key, canonical_json(document), hashlib.sha256).hexdigest()
    except (TypeError, ValueError):  # a value JSON cannot carry: not what was signed
        return "its content cannot be what was signed"
    value = sig.get("value")
    if not isinstance(value, str) or not hmac.compare_digest(value, expected):
        return "its signature does not match its content (it was changed after signing)"
    return None
