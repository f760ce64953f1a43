"""PostgreSQL tables in and out: naming a table, connecting, and the errors.

A database table is named by a SQLAlchemy URL plus the table or a query, either in
the URL (``postgresql://user@host:5432/db?table=public.patients`` or
``...?query=SELECT%20...``) or as keyword arguments; the Airflow operators build the
URL from a connection instead. The library talks to the server through psycopg 3
whatever driver the URL names (``postgresql+psycopg2://`` works too), and never imports
Airflow.

Reading is :mod:`._sql_read`, the column types (PostgreSQL to Arrow and back, and the
SQL types a published table may have) :mod:`._sql_types`, atomic publication
:mod:`._sql_publish`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from astrid_airflow._errors import DataError, ParameterError, StoreError

#: Rows fetched (and written as one Parquet row group / one COPY batch) at a time.
CHUNK_ROWS = 50_000

_URL = re.compile(r"^(postgres|postgresql)(\+[A-Za-z0-9_]+)?://", re.IGNORECASE)
IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_TABLE = re.compile(rf"^\s*({IDENT})(?:\s*\.\s*({IDENT}))?\s*$")


class SqlConnectionError(DataError):
    """The database could not be reached or refused the login.

    ``transient`` is True when waiting may help (connection refused, timeout), False for
    wrong credentials or an unknown database.
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class SqlPublishError(StoreError):
    """Publishing a table failed; the published table is unchanged.

    ``transient`` is True when a retry may succeed (the lock wait timed out behind a
    long-running reader, a serialisation failure, a lost connection).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


# ------------------------------------------------------------------------------ naming

def is_sql_url(source: object) -> bool:
    """True for a PostgreSQL SQLAlchemy URL string (``postgresql[+driver]://...``)."""
    return isinstance(source, str) and bool(_URL.match(source.strip()))


@dataclass(frozen=True)
class SqlSource:
    """A PostgreSQL database plus a table (``schema``, ``name``) or a query."""

    url: Any  # sqlalchemy.engine.URL without the table/query parameters
    schema: str | None = None
    name: str | None = None
    query: str | None = None

    @property
    def table(self) -> str | None:
        """The table as ``schema.name`` (or ``name``), unquoted."""
        if self.name is None:
            return None
        return f"{self.schema}.{self.name}" if self.schema else self.name

    @property
    def shown(self) -> str:
        """The URL without its password, with the table or query: safe for messages."""
        base = self.url.render_as_string(hide_password=True)
        if self.name is not None:
            return f"{base}?table={self.table}"
        if self.query is not None:
            text = " ".join(self.query.split())
            return f"{base}?query={quote(text[:80] + ('…' if len(text) > 80 else ''))}"
        return base


def _split_table(text: object) -> tuple[str | None, str]:
    """``"schema.name"`` → ``("schema", "name")``; double quotes keep dots and case."""
    match = _TABLE.match(text) if isinstance(text, str) else None
    if not match:
        raise ParameterError(f"Invalid table name {text!r}: expected NAME or SCHEMA.NAME "
                             '(double-quote parts holding dots or spaces: "my.schema".t).')
    parts = [p[1:-1].replace('""', '"') if p.startswith('"') else p
             for p in match.groups() if p is not None]
    return (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def sql_source(source: Any, *, table: str | None = None, query: str | None = None,
               need: str | None = "table or query") -> SqlSource:
    """Parse a URL (string, SQLAlchemy URL or :class:`SqlSource`) and a table or query.

    ``table``/``query`` arguments win over ``?table=``/``?query=`` in the URL. ``need``
    is ``"table or query"`` (reading), ``"table"`` (publishing) or None (just the
    database).
    """
    from sqlalchemy.engine import URL, make_url
    from sqlalchemy.exc import ArgumentError

    if isinstance(source, SqlSource):
        url, table = source.url, table or source.table
        query = query or source.query
    elif isinstance(source, URL) or is_sql_url(source):
        try:
            url = make_url(source.strip() if isinstance(source, str) else source)
        except (ArgumentError, ValueError) as exc:
            raise ParameterError(f"Invalid database URL: {exc}") from None
        params = dict(url.query)
        table = table or _one(params.get("table"), "table")
        query = query or _one(params.get("query"), "query")
        url = url.difference_update_query(["table", "query"])
        backend, plus, driver = url.drivername.partition("+")
        if backend.lower() == "postgres":  # libpq's spelling; SQLAlchemy wants postgresql
            url = url.set(drivername="postgresql" + plus + driver)
    else:
        raise ParameterError(f"Invalid database URL {str(source)[:60]!r}: expected "
                             "postgresql://[user[:password]@]host[:port]/database?table=NAME.")
    if url.get_backend_name() != "postgresql":
        raise ParameterError(f"Unsupported database {url.get_backend_name()!r}: only "
                             "PostgreSQL (postgresql://...) is supported.")
    if not url.database:
        raise ParameterError(f"Invalid database URL {url.render_as_string()!r}: no "
                             "database name (postgresql://host/DATABASE?table=...).")
    if table and query:
        raise ParameterError("Give a table or a query, not both.")
    if need == "table" and query:
        raise ParameterError("Publishing needs a table name (?table=NAME), not a query.")
    if not table and not query:
        if need is None:
            return SqlSource(url=url)
        shown = url.render_as_string(hide_password=True)
        raise ParameterError(f"No {need} for {shown}: add ?table=NAME"
                             + (" or ?query=SELECT ..." if need != "table" else ""))
    if query is not None:
        query = str(query).strip().rstrip(";").strip()
        if not query:
            raise ParameterError("Empty query.")
        return SqlSource(url=url, query=query)
    schema, name = _split_table(table)
    return SqlSource(url=url, schema=schema, name=name)


def _one(value: Any, key: str) -> str | None:
    if isinstance(value, tuple):  # ?table=a&table=b
        raise ParameterError(f"The URL names more than one {key}: {list(value)!r}.")
    return value


# -------------------------------------------------------------------------- connecting

def load_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - installed with the postgres extra
        raise ParameterError("PostgreSQL access needs psycopg 3: pip install "
                             "'psycopg[binary]' (or astrid-airflow[postgres]).") from None
    return psycopg


def connect(source: Any) -> Any:
    """A psycopg 3 connection to the database of ``source`` (``SqlConnectionError`` if not)."""
    return _connect(source if isinstance(source, SqlSource) else
                    sql_source(source, need=None))


def _connect(src: SqlSource) -> Any:
    psycopg = load_psycopg()
    args: dict[str, Any] = {k: v for k, v in dict(src.url.query).items()}
    args.update(src.url.translate_connect_args(username="user", database="dbname"))
    args.setdefault("connect_timeout", 10)
    args.setdefault("application_name", "astrid-airflow")
    try:
        return psycopg.connect(**args)
    except psycopg.Error as exc:
        message = first_line(exc)
        transient = any(s in message for s in (
            "Connection refused", "timeout expired", "the database system is starting up",
            "the database system is shutting down", "too many clients"))
        raise SqlConnectionError(f"Cannot connect to {src.url.render_as_string(hide_password=True)}"
                                 f": {message}", transient=transient) from None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    text = text.removeprefix("connection failed: ")
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__


def qualified_name(src: SqlSource) -> Any:
    from psycopg import sql

    parts = (src.schema, src.name) if src.schema else (src.name,)
    return sql.Identifier(*parts)


def check_chunk_rows(chunk_rows: object) -> int:
    from astrid_airflow._validation import check_positive_int

    return check_positive_int(chunk_rows, "chunk_rows")
