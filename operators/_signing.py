"""The signing key of store manifests and gate receipts, from an Airflow connection.

The library takes the key as bytes (``astrid_airflow.io.signing``); the operators fetch
it. A connection (default id ``astrid_signing``, any type) holds the key in its
password, or in its extra as ``{"key": "..."}``. Without that connection the library's
own default applies (``$ASTRID_SIGNING_KEY``, else the worker's key file, created by the
first save: one key per machine). Only the workers' service identity should be able to
read the connection (``docs/gate.md``, threat model).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

DEFAULT_CONN_ID = "astrid_signing"


def signing_key_from_connection(conn_id: str | None = DEFAULT_CONN_ID) -> bytes | None:
    """The key the connection ``conn_id`` holds; None if there is no such connection."""
    if not conn_id:
        return None
    from airflow.sdk import BaseHook

    from ._compat import AirflowFailException, AirflowNotFoundException

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        return None
    extra = conn.extra_dejson if isinstance(getattr(conn, "extra_dejson", None), dict) \
        else {}
    key = conn.password or extra.get("key")
    if not key:
        raise AirflowFailException(f"The signing connection {conn_id!r} holds no key (set "
                                   "its password, or extra {\"key\": ...}).")
    return key.encode("utf-8") if isinstance(key, str) else bytes(key)


@contextlib.contextmanager
def signing_from(conn_id: Any, allow_unsigned: Any = False) -> Iterator[bytes | None]:
    """Within the block the library signs and verifies with the connection's key (or
    its own default when there is no such connection), and reads unsigned stores only
    with ``allow_unsigned`` (a bool or its text); yields the key in force."""
    from astrid_airflow.io import allowing_unsigned, signing, signing_key

    from ._common import to_bool

    with signing(signing_key_from_connection(conn_id)), \
            allowing_unsigned(to_bool(allow_unsigned, "allow_unsigned")):
        yield signing_key()


def signed(method):
    """Decorate an operator's ``execute``: it runs inside :func:`signing_from` of the
    operator's ``signing_conn_id`` (default :data:`DEFAULT_CONN_ID`), so the artefacts it
    saves are signed, and those it reads verified, with the pipeline's key."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with signing_from(getattr(self, "signing_conn_id", DEFAULT_CONN_ID),
                          getattr(self, "allow_unsigned", False)):
            return method(self, *args, **kwargs)
    return wrapper
