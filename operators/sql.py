"""Database tables in the ASTRID operators, through Airflow connections.

Every table argument of the operators (``reference``, ``table``, ``original``,
``destination``) takes a file path or URL as before, or a table behind an Airflow
connection::

    conn://astrid_pg/public.patients          a table (NAME or SCHEMA.NAME)
    conn://astrid_pg?query=SELECT%20...        a query (URL-encoded; or sql_query())

:func:`sql_table` and :func:`sql_query` build these references. They name no secret,
so they are what XCom, gate receipts, manifests and Asset events carry; the operator
resolves the connection with Airflow's hooks (the postgres provider's ``PostgresHook``:
host, port, login, password, database, ``sqlalchemy_query`` extras) into a SQLAlchemy
URL that it hands to the library (:mod:`astrid_airflow.io`). A plain
``postgresql://user@host/db?table=...`` URL works too, but not with a password in it:
that would be written to XCom.

Inputs are streamed into a temporary Parquet file (chunked, with the SQL column types
in its metadata), so everything after that is the file path the operators already
had. Staging stays a file; only ``PublishSurrogateOperator`` writes to the database.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from ._common import as_path, local_input
from ._compat import AirflowException, AirflowFailException

__all__ = [
    "CONN_SCHEME",
    "TableRef",
    "as_table",
    "database_source",
    "dbapi_hook",
    "hook_dialect",
    "is_table_ref",
    "local_table",
    "publish_to_table",
    "sql_errors",
    "sql_query",
    "sql_table",
]

CONN_SCHEME = "conn"
_CONN_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
_SQL_URL = re.compile(r"^(postgres|postgresql)(\+[A-Za-z0-9_]+)?://", re.IGNORECASE)


@dataclass(frozen=True)
class TableRef:
    """A table or query in a database: by Airflow connection id, or by a plain URL."""

    text: str                 # the reference as given (no secrets): XCom, receipts, events
    conn_id: str | None = None
    table: str | None = None
    query: str | None = None

    def __str__(self) -> str:
        return self.text


def sql_table(conn_id: str, table: str) -> str:
    """``conn://CONN_ID/TABLE``: a table behind an Airflow connection."""
    return f"{CONN_SCHEME}://{_check_conn_id(conn_id)}/{table}"


def sql_query(conn_id: str, query: str) -> str:
    """``conn://CONN_ID?query=...``: a query behind an Airflow connection (URL-encoded)."""
    return f"{CONN_SCHEME}://{_check_conn_id(conn_id)}?query={quote(' '.join(query.split()))}"


def _check_conn_id(conn_id: object) -> str:
    if not isinstance(conn_id, str) or not _CONN_ID.match(conn_id):
        raise AirflowFailException(f"Invalid connection id {conn_id!r}: use letters, digits, "
                                   "'_', '-' and '.'.")
    return conn_id


def is_table_ref(value: object) -> bool:
    """True for ``conn://...`` references and ``postgresql://...`` URLs."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text.lower().startswith(f"{CONN_SCHEME}://") or bool(_SQL_URL.match(text))


def _parse(text: str, name: str) -> TableRef:
    if _SQL_URL.match(text):
        from sqlalchemy.engine import make_url

        try:
            password = make_url(text).password
        except Exception:
            password = None
        if password:
            raise AirflowFailException(
                f"Invalid {name}: the database URL holds a password, which would be stored "
                "in XCom and logs. Define an Airflow connection and use "
                "conn://CONN_ID/SCHEMA.TABLE (or astrid_airflow.operators.sql.sql_table).")
        return TableRef(text=text)
    parts = urlsplit(text)
    conn_id = _check_conn_id(parts.netloc)
    table = parts.path.lstrip("/") or None
    queries = parse_qs(parts.query).get("query", [])
    query = queries[0] if len(queries) == 1 else None
    if bool(table) == bool(query) or len(queries) > 1:
        raise AirflowFailException(
            f"Invalid {name}: {text!r}. Expected conn://CONN_ID/SCHEMA.TABLE or "
            "conn://CONN_ID?query=SELECT... (one table or one query).")
    return TableRef(text=text, conn_id=conn_id, table=table, query=query)


_QUERY = re.compile(r"^\s*(select|with)\s", re.IGNORECASE)


def as_table(value: object, name: str, conn_id: str | None = None) -> Any:
    """A :class:`TableRef` for a database reference, else an ``ObjectStoragePath``.

    With ``conn_id`` (the operators' ``<argument>_conn_id``): a URL is a file opened
    through that object-storage connection; anything else is a table name
    (``[SCHEMA.]TABLE``) or a ``SELECT``/``WITH`` query in that database connection,
    the same reference as the legacy ``conn://CONN_ID/TABLE`` string.
    """
    if conn_id and isinstance(value, str) and "://" not in value:
        text = value.strip()
        if not text:
            raise AirflowFailException(f"Invalid {name}: empty (a table name or query in "
                                       f"connection {conn_id!r}).")
        ref = sql_query(conn_id, text) if _QUERY.match(text) else sql_table(conn_id, text)
        return _parse(ref, name)
    if is_table_ref(value):
        return _parse(str(value).strip(), name)
    return as_path(value, name, conn_id)


# conn_type -> the library's dialect name, where the two differ
_DIALECTS = {"postgres": "postgresql", "gcpbigquery": "bigquery", "google_cloud_platform":
             "bigquery"}


def _connection(ref: TableRef) -> Any:
    from airflow.sdk import BaseHook

    from ._compat import AirflowNotFoundException

    try:
        return BaseHook.get_connection(ref.conn_id)
    except AirflowNotFoundException:
        raise AirflowFailException(f"Airflow connection {ref.conn_id!r} is not defined "
                                   f"(needed by {ref}).") from None


def dbapi_hook(ref: TableRef) -> Any:
    """The connection's common.sql ``DbApiHook`` when it is not PostgreSQL, else None.

    PostgreSQL keeps the library's psycopg path (typed columns, ``COPY``, grants, table
    comment: what the DB-API cannot carry); every other engine with a ``DbApiHook``
    (SQLite, MySQL, Snowflake, BigQuery, Trino...) goes through the hook's connection.
    """
    if ref.conn_id is None:  # a plain postgresql:// URL
        return None
    connection = _connection(ref)
    if connection.conn_type in ("postgres", "postgresql", "astrid_postgres"):
        return None
    from airflow.providers.common.sql.hooks.sql import DbApiHook

    try:
        hook = connection.get_hook()
    except AirflowException as exc:  # no provider installed for this connection type
        raise AirflowFailException(
            f"Connection {ref.conn_id!r} ({connection.conn_type}) has no common.sql "
            f"DbApiHook ({exc}): install the engine's provider.") from None
    if not isinstance(hook, DbApiHook):
        raise AirflowFailException(
            f"Connection {ref.conn_id!r} ({connection.conn_type}) has no common.sql "
            f"DbApiHook ({type(hook).__name__}): it cannot be a table source or release.")
    return hook


def hook_dialect(hook: Any) -> str:
    """The library's dialect name of a hook's connection (``sqlite``, ``mysql``...)."""
    conn_type = getattr(hook, "conn_type", None) or ""
    return _DIALECTS.get(conn_type, conn_type)


def database_source(ref: TableRef) -> Any:
    """The library's ``SqlSource`` for ``ref`` (the connection resolved through its hook)."""
    from astrid_airflow.io import sql_source

    if ref.conn_id is None:
        return sql_source(ref.text)
    hook = _connection(ref).get_hook()
    url = getattr(hook, "sqlalchemy_url", None)
    if url is None:
        from sqlalchemy.engine import make_url

        url = make_url(hook.get_uri())
    return sql_source(url, table=ref.table, query=ref.query)


@contextlib.contextmanager
def local_table(value: Any, *, chunk_rows: int | None = None) -> Iterator[str]:
    """A local file holding the table: the file itself, a download, or a database dump.

    A :class:`TableRef` is streamed into a temporary Parquet file (one row group per
    chunk; the SQL column types in its metadata), removed afterwards.
    """
    if not isinstance(value, TableRef):
        with local_input(value) as path:
            yield path
        return
    from astrid_airflow import sql_to_parquet
    from astrid_airflow.io import CHUNK_ROWS

    hook = dbapi_hook(value)
    with tempfile.TemporaryDirectory(prefix="astrid_sql_") as tmp:
        path = os.path.join(tmp, "table.parquet")
        if hook is not None:
            from astrid_airflow.io import read_dbapi_to_parquet

            read_dbapi_to_parquet(hook.get_conn, path, table=value.table, query=value.query,
                                  dialect=hook_dialect(hook),
                                  chunk_rows=chunk_rows or CHUNK_ROWS)
        else:
            sql_to_parquet(database_source(value), path, chunk_rows=chunk_rows or CHUNK_ROWS)
        yield path


def publish_to_table(local: str, destination: TableRef, *, comment: Any,
                     lock_timeout: float | None, guard: Any,
                     types_from: str | None = None) -> dict[str, Any]:
    """Publish the gated file ``local`` as ``destination`` with the engine's atomic swap.

    PostgreSQL: the library's one-transaction staging + rename (``_sql_publish.publish_table``),
    with the SQL column types recorded in ``types_from`` (the staged file).
    Other engines: ``_dbapi.publish_dbapi`` through the connection's ``DbApiHook``, which
    refuses (``SqlPublishError``) an engine without a transactional swap.
    """
    hook = dbapi_hook(destination)
    if hook is None:
        from astrid_airflow import publish_table

        return publish_table(local, database_source(destination), comment=comment,
                             lock_timeout=lock_timeout, guard=guard, types_from=types_from)
    from astrid_airflow.io import publish_dbapi

    if not destination.table:
        raise AirflowFailException(f"Cannot publish to {destination}: name a table, not a "
                                   "query.")
    return publish_dbapi(local, hook.get_conn, destination.table,
                         dialect=hook_dialect(hook), comment=comment, guard=guard)


@contextlib.contextmanager
def sql_errors(what: str) -> Iterator[None]:
    """Database errors a retry may fix (server down, lock timeout) stay retryable.

    Everything else falls through to ``translate_errors`` (no retries).
    """
    from astrid_airflow.io import SqlConnectionError, SqlPublishError

    try:
        yield
    except (SqlConnectionError, SqlPublishError) as exc:
        if getattr(exc, "transient", False):
            raise AirflowException(f"{what}: {type(exc).__name__}: {exc} (will retry)") from exc
        raise
