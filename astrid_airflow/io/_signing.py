"""HMAC-SHA256 signatures of small JSON documents (store manifests, gate receipts).

A digest alone proves nothing to whoever can rewrite it: a user who can write the store
or the staging area can recompute every SHA-256. A *signature* needs the key, which
only the pipeline's service identity holds. The key comes, in this order, from the
``key`` argument, the innermost :func:`signing` block (an operator reads it from an
Airflow connection and opens one), or the environment variable ``ASTRID_SIGNING_KEY``;
with none of them, nothing is signed and readers that need trust fall back to
re-checking (``docs/gate.md``, threat model).

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
from collections.abc import Iterator, Mapping
from typing import Any

from astrid_airflow._errors import ParameterError

ENV_KEY = "ASTRID_SIGNING_KEY"
SIGNATURE = "signature"
ALGORITHM = "hmac-sha256"
MIN_KEY_BYTES = 16  # 128 bits: a shorter secret can be guessed offline from one document

_ACTIVE: contextvars.ContextVar[bytes | None] = contextvars.ContextVar(
    "astrid_signing_key", default=None)


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
    ``$ASTRID_SIGNING_KEY``, else None (no key configured)."""
    if key is not None:
        return _as_key(key, "argument")
    active = _ACTIVE.get()
    if active is not None:
        return active
    env = os.environ.get(ENV_KEY)
    return _as_key(env, f"${ENV_KEY}") if env else None


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
