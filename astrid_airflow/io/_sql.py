"""PostgreSQL tables in and out: typed, chunked reads and atomic publication of surrogates.

A database table is named by a SQLAlchemy URL plus the table or a query, either in
the URL (``postgresql://user@host:5432/db?table=public.patients`` or
``...?query=SELECT%20...``) or as keyword arguments; the Airflow operators build the
URL from a connection instead. The library talks to the server through psycopg 3
whatever driver the URL names (``postgresql+psycopg2://`` works too), and never imports
Airflow.

Reading streams the result through a server-side cursor in chunks of ``chunk_rows``
rows, inside one read-only REPEATABLE READ transaction (one snapshot). Column types
come from the server (type OID and modifier of every result column, domains resolved
to their base type) and map to Arrow types:

=========================================  ==========================================
PostgreSQL                                 Arrow (pandas)
=========================================  ==========================================
boolean                                    bool
smallint, integer, bigint                  int16, int32, int64 (float64 with NULLs)
real, double precision                     float32, float64
numeric(p, s)                              float64 (ASTRID treats it as a number)
text, varchar(n), char(n), name, uuid      string
enum types                                 dictionary (categorical; the enum's labels
                                           in declaration order are the categories)
date, timestamp, timestamptz               date32, timestamp[us], timestamp[us, UTC]
time, interval, bytea                      time64[us], duration[us], binary
=========================================  ==========================================

NULL is a missing value in every type. Other types (json, arrays, ranges, composite)
are refused with a ``DataError`` naming the columns (cast them in a query). The exact
SQL type of every column (``numeric(10,2)``, ``character varying(40)``, ``public.mood``
and the enum labels) is recorded in the Arrow schema metadata under ``astrid.sql``, which
Parquet files and GoldenEye shuffles carry along, so :func:`publish_table` can create
the surrogate table with the source's column types. A table (not a query) is read in a
deterministic order, by its primary key or else by every column, so the same content
always gives the same fingerprint and, with the same seed, the same surrogate.

Publishing (:func:`publish_table`) runs in ONE transaction: create a staging table, load
it with ``COPY``, copy the published table's grants, then ``LOCK`` the published table,
rename it to a backup, rename the staging table to the published name, drop the
backup and commit. Readers see the old release or the new one, never a missing or
partial table: the ``ACCESS EXCLUSIVE`` lock is held only for the renames, so a
``SELECT`` arriving meanwhile waits (it does not fail) and then reads the new table. A
failure at any step rolls everything back and leaves the published table untouched.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from astrid_airflow._errors import DataError, ParameterError, StoreError

#: Rows fetched (and written as one Parquet row group / one COPY batch) at a time.
CHUNK_ROWS = 50_000
#: Arrow schema metadata key holding the SQL column types (JSON).
SQL_METADATA_KEY = b"astrid.sql"

_URL = re.compile(r"^(postgres|postgresql)(\+[A-Za-z0-9_]+)?://", re.IGNORECASE)
_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_TABLE = re.compile(rf"^\s*({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*$")
# A type name as format_type() prints it: "numeric(10,2)", "timestamp(3) with time zone",
# "character varying(40)", "public.mood", '"Mood"', "double precision".
_TYPE_TEXT = re.compile(rf"^{_IDENT}(?:\.{_IDENT})?(?: [a-z]+)*(?:\(\d+(?:,\s*\d+)?\))?"
                        r"(?: with(?:out)? time zone)?(?:\[\])?$")
_PRIVILEGES = {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"}
# Base type OID -> kind (see the module docstring for the Arrow type of each kind).
_KINDS = {16: "boolean", 21: "int16", 23: "int32", 20: "int64", 26: "int64",
          700: "float32", 701: "float64", 1700: "numeric", 25: "string", 1043: "string",
          1042: "string", 19: "string", 18: "string", 2950: "uuid", 1082: "date",
          1114: "timestamp", 1184: "timestamptz", 1083: "time", 1186: "interval",
          17: "binary"}
_INTEGER_KINDS = {"int16", "int32", "int64"}


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

def _psycopg() -> Any:
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
    psycopg = _psycopg()
    args: dict[str, Any] = {k: v for k, v in dict(src.url.query).items()}
    args.update(src.url.translate_connect_args(username="user", database="dbname"))
    args.setdefault("connect_timeout", 10)
    args.setdefault("application_name", "astrid-airflow")
    try:
        return psycopg.connect(**args)
    except psycopg.Error as exc:
        message = _first_line(exc)
        transient = any(s in message for s in (
            "Connection refused", "timeout expired", "the database system is starting up",
            "the database system is shutting down", "too many clients"))
        raise SqlConnectionError(f"Cannot connect to {src.url.render_as_string(hide_password=True)}"
                                 f": {message}", transient=transient) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    text = text.removeprefix("connection failed: ")
    return " ".join(text.splitlines()[0].split()) if text else type(exc).__name__


def qualified_name(src: SqlSource) -> Any:
    from psycopg import sql

    parts = (src.schema, src.name) if src.schema else (src.name,)
    return sql.Identifier(*parts)


# --------------------------------------------------------------------------- column types

@dataclass(frozen=True)
class SqlColumn:
    """One column: its name, SQL type text, kind and (for enums) labels."""

    name: str
    type: str
    kind: str
    labels: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "kind": self.kind}
        if self.kind == "enum":
            out["labels"] = list(self.labels)
        return out


def _describe(cur: Any, shown: str) -> list[SqlColumn]:
    """The columns of the result just executed on ``cur`` (types from the server)."""
    res = cur.pgresult
    fields = [(res.fname(i).decode(), res.ftype(i), res.fmod(i)) for i in range(res.nfields)]
    names = [f[0] for f in fields]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{shown}: duplicated column name(s) {dup!r}; alias them in the query.")
    columns, bad = [], []
    for name, oid, mod in fields:
        cur.execute("SELECT format_type(%s, %s)", (oid, mod if mod >= 0 else None))
        type_text = cur.fetchone()[0]
        base, typtype = oid, None
        for _ in range(16):  # domains over domains
            cur.execute("SELECT typtype, typbasetype FROM pg_type WHERE oid = %s", (base,))
            typtype, parent = cur.fetchone()
            if typtype != "d":
                break
            base = parent
        if typtype == "e":
            cur.execute("SELECT enumlabel FROM pg_enum WHERE enumtypid = %s "
                        "ORDER BY enumsortorder", (base,))
            columns.append(SqlColumn(name, type_text, "enum",
                                     tuple(r[0] for r in cur.fetchall())))
        elif base in _KINDS:
            columns.append(SqlColumn(name, type_text, _KINDS[base]))
        else:
            bad.append(f"{name} ({type_text})")
    if bad:
        raise DataError(f"{shown}: unsupported column type(s): {', '.join(bad)}. Only scalar "
                        "columns (numbers, text, enums, booleans, dates and times) can be "
                        "analysed; cast or drop them in a query (?query=SELECT ...).")
    return columns


def _arrow_type(column: SqlColumn) -> Any:
    import pyarrow as pa

    return {
        "boolean": pa.bool_(), "int16": pa.int16(), "int32": pa.int32(),
        "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
        "numeric": pa.float64(), "string": pa.string(), "uuid": pa.string(),
        "date": pa.date32(), "timestamp": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", tz="UTC"), "time": pa.time64("us"),
        "interval": pa.duration("us"), "binary": pa.binary(),
        "enum": pa.dictionary(pa.int32(), pa.string()),
    }[column.kind]


def _arrow_schema(columns: Sequence[SqlColumn]) -> Any:
    import pyarrow as pa

    meta = {"dialect": "postgresql", "columns": [c.to_dict() for c in columns]}
    return pa.schema([pa.field(c.name, _arrow_type(c)) for c in columns],
                     metadata={SQL_METADATA_KEY: json.dumps(meta).encode()})


def _arrow_array(values: Sequence[Any], column: SqlColumn) -> Any:
    import pyarrow as pa

    if column.kind == "numeric":
        values = [None if v is None else float(v) for v in values]
    elif column.kind == "uuid":
        values = [None if v is None else str(v) for v in values]
    elif column.kind == "enum":
        index = {label: i for i, label in enumerate(column.labels)}
        codes = pa.array([None if v is None else index[v] for v in values], pa.int32())
        return pa.DictionaryArray.from_arrays(codes, pa.array(column.labels, pa.string()))
    return pa.array(values, type=_arrow_type(column))


def _batch(rows: list[tuple], columns: Sequence[SqlColumn], schema: Any) -> Any:
    import pyarrow as pa

    by_column = list(zip(*rows)) if rows else [() for _ in columns]
    return pa.RecordBatch.from_arrays(
        [_arrow_array(v, c) for v, c in zip(by_column, columns)], schema=schema)


# ------------------------------------------------------------------------------ reading

def _select(cur: Any, src: SqlSource) -> tuple[Any, list[SqlColumn]]:
    """The SELECT of a source and its columns.

    A query is used as given; a table is read in primary-key order, or ordered by
    every column when it has none, so its rows always come in the same order.
    """
    from psycopg import sql

    if src.query is not None:
        select = sql.SQL(src.query)
        cur.execute(sql.SQL("SELECT * FROM ({}) AS astrid_q LIMIT 0").format(select))
        return select, _describe(cur, src.shown)
    target = qualified_name(src)
    name = target.as_string(cur)
    cur.execute("SELECT to_regclass(%s)", (name,))
    if cur.fetchone()[0] is None:
        raise DataError(f"No table {src.table!r} in "
                        f"{src.url.render_as_string(hide_password=True)} (or no permission "
                        "to see it).")
    cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(target))
    columns = _describe(cur, src.shown)
    cur.execute("SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND"
                " i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)", (name,))
    order = [r[0] for r in cur.fetchall()] or [c.name for c in columns]
    if not order:
        return sql.SQL("SELECT * FROM {}").format(target), columns
    return sql.SQL("SELECT * FROM {} ORDER BY {}").format(
        target, sql.SQL(", ").join(sql.Identifier(c) for c in order)), columns


@contextlib.contextmanager
def _reading(src: SqlSource, chunk_rows: int) -> Iterator[tuple[Any, Iterator[Any]]]:
    """``(arrow schema, iterator of record batches)`` of a source, in one snapshot."""
    from psycopg import IsolationLevel

    psycopg = _psycopg()
    chunk_rows = _check_chunk_rows(chunk_rows)
    conn = _connect(src)
    try:
        conn.isolation_level = IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        cur = conn.cursor()
        try:
            select, columns = _select(cur, src)
        except psycopg.Error as exc:
            raise DataError(f"Cannot read {src.shown}: {_first_line(exc)}") from None
        schema = _arrow_schema(columns)
        named = conn.cursor(name=f"astrid_{uuid.uuid4().hex[:8]}")
        named.itersize = chunk_rows

        def batches() -> Iterator[Any]:
            try:
                named.execute(select)
                while rows := named.fetchmany(chunk_rows):
                    yield _batch(rows, columns, schema)
            except psycopg.Error as exc:
                raise DataError(f"Cannot read {src.shown}: {_first_line(exc)}") from None

        yield schema, batches()
    finally:
        conn.close()


def _check_chunk_rows(chunk_rows: object) -> int:
    from astrid_airflow._validation import check_positive_int

    return check_positive_int(chunk_rows, "chunk_rows")


def read_sql_arrow(source: Any, *, table: str | None = None, query: str | None = None,
                   chunk_rows: int = CHUNK_ROWS) -> Any:
    """Read a PostgreSQL table or query into a pyarrow Table (typed; see module docstring).

    Parameters
    ----------
    source : str, sqlalchemy URL or SqlSource
        ``postgresql://user[:password]@host[:port]/db``, optionally with ``?table=`` or
        ``?query=``.
    table : str, optional
        ``NAME`` or ``SCHEMA.NAME``; read in primary-key order (or ordered by every column).
    query : str, optional
        A SELECT; its rows come in the query's own order (add ORDER BY to make it
        reproducible).
    chunk_rows : int
        Rows per fetch from the server-side cursor.

    Raises
    ------
    SqlConnectionError
        The server is unreachable or refused the login.
    DataError
        Missing table, failing query, unsupported column types.
    """
    import pyarrow as pa

    src = sql_source(source, table=table, query=query)
    with _reading(src, chunk_rows) as (schema, batches):
        return pa.Table.from_batches(list(batches), schema=schema)


def read_sql(source: Any, *, table: str | None = None, query: str | None = None,
             chunk_rows: int = CHUNK_ROWS) -> Any:
    """Read a PostgreSQL table or query into a pandas DataFrame.

    The frame is what ``pandas.read_parquet`` returns for the Parquet file
    :func:`sql_to_parquet` writes: enum columns are categoricals with the enum's labels,
    integer columns with NULLs are float64, NULL is missing everywhere. See
    :func:`read_sql_arrow` for the arguments.
    """
    return read_sql_arrow(source, table=table, query=query, chunk_rows=chunk_rows).to_pandas()


def sql_to_parquet(source: Any, path: str | os.PathLike, *, table: str | None = None,
                   query: str | None = None, chunk_rows: int = CHUNK_ROWS,
                   overwrite: bool = False) -> dict[str, Any]:
    """Stream a PostgreSQL table or query into a Parquet file, atomically.

    One row group per chunk, so memory stays at one chunk whatever the table's size.
    The SQL column types are kept in the file's schema metadata (``astrid.sql``).

    Returns
    -------
    dict
        ``{"path", "rows", "columns", "source"}`` (``source`` without the password).
    """
    import pyarrow.parquet as pq

    from ._atomic import atomic_path

    src = sql_source(source, table=table, query=query)
    rows = 0
    with atomic_path(path, overwrite=overwrite) as tmp, _reading(src, chunk_rows) as (
            schema, batches):
        with contextlib.closing(pq.ParquetWriter(tmp, schema)) as writer:
            for batch in batches:
                writer.write_batch(batch)
                rows += batch.num_rows
    return {"path": os.fspath(path), "rows": rows, "columns": list(schema.names),
            "source": src.shown}


# --------------------------------------------------------------------------- publishing

def _surrogate_batches(surrogate: Any, chunk_rows: int) -> tuple[Any, Iterator[Any]]:
    """``(arrow schema, iterator of record batches)`` of a file, Arrow table or DataFrame."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ._io import read_arrow
    from ._tablefile import TableFile, file_format

    if isinstance(surrogate, pd.DataFrame):
        surrogate = pa.Table.from_pandas(surrogate, preserve_index=False)
    if isinstance(surrogate, pa.Table):
        return surrogate.schema, iter(surrogate.to_batches(max_chunksize=chunk_rows))
    if not isinstance(surrogate, (str, os.PathLike, TableFile)):
        raise DataError(f"Cannot publish {type(surrogate).__name__}; pass a DataFrame, an "
                        "Arrow table or a Parquet/CSV file.")
    kind = surrogate.kind if isinstance(surrogate, TableFile) else file_format(surrogate)
    path = surrogate.path if isinstance(surrogate, TableFile) else os.fspath(surrogate)
    if kind == "csv":
        table = read_arrow(surrogate)
        return table.schema, iter(table.to_batches(max_chunksize=chunk_rows))
    try:
        handle = pq.ParquetFile(path)
    except FileNotFoundError:
        raise DataError(f"Unreadable file {path!r}: no such file.") from None
    except Exception as exc:
        raise DataError(f"Unreadable file {path!r}: {type(exc).__name__}: {exc}") from None
    return handle.schema_arrow, handle.iter_batches(batch_size=chunk_rows)


def _arrow_to_sql(name: str, typ: Any) -> SqlColumn:
    """The column definition of an Arrow field without recorded SQL types."""
    import pyarrow as pa

    t = typ.value_type if pa.types.is_dictionary(typ) else typ
    if pa.types.is_boolean(t):
        return SqlColumn(name, "boolean", "boolean")
    if pa.types.is_integer(t):
        bits = t.bit_width + (1 if pa.types.is_unsigned_integer(t) else 0)
        if bits <= 16:
            return SqlColumn(name, "smallint", "int16")
        if bits <= 32:
            return SqlColumn(name, "integer", "int32")
        return SqlColumn(name, "bigint" if bits <= 64 else "numeric", "int64")
    if pa.types.is_floating(t):
        return SqlColumn(name, "real" if t.bit_width == 32 else "double precision",
                         "float32" if t.bit_width == 32 else "float64")
    if pa.types.is_decimal(t):
        return SqlColumn(name, f"numeric({t.precision},{t.scale})", "numeric")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)):
        return SqlColumn(name, "text", "string")
    if pa.types.is_date(t):
        return SqlColumn(name, "date", "date")
    if pa.types.is_timestamp(t):
        return SqlColumn(name, "timestamp with time zone" if t.tz else
                         "timestamp without time zone", "timestamptz" if t.tz else "timestamp")
    if pa.types.is_time(t):
        return SqlColumn(name, "time without time zone", "time")
    if pa.types.is_duration(t):
        return SqlColumn(name, "interval", "interval")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return SqlColumn(name, "bytea", "binary")
    raise DataError(f"Column {name!r} has type {typ}, which has no PostgreSQL equivalent here.")


def _recorded_metadata(path: str | os.PathLike) -> dict[bytes, bytes]:
    """The ``astrid.sql`` schema metadata of the Parquet file ``path`` ({} if none)."""
    import pyarrow.parquet as pq

    from ._tablefile import file_format

    if file_format(path) != "parquet":
        return {}
    raw = (pq.read_schema(os.fspath(path)).metadata or {}).get(SQL_METADATA_KEY)
    return {SQL_METADATA_KEY: raw} if raw else {}


def _recorded_columns(schema: Any) -> dict[str, SqlColumn]:
    from ._jsonable import load_json

    raw = (schema.metadata or {}).get(SQL_METADATA_KEY)
    if not raw:
        return {}
    try:
        meta = load_json(raw, "SQL type metadata")
        return {c["name"]: SqlColumn(c["name"], c["type"], c["kind"], tuple(c.get("labels", ())))
                for c in meta["columns"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"Corrupt SQL type metadata ({SQL_METADATA_KEY.decode()}): {exc}") from None


def _definitions(cur: Any, schema: Any, like: SqlSource | None) -> list[SqlColumn]:
    from psycopg import sql

    names = list(schema.names)
    bad = [n for n in names if not isinstance(n, str) or not n]
    dup = sorted({n for n in names if names.count(n) > 1})
    if bad or dup:
        raise DataError(f"Cannot publish: column names must be unique non-empty strings "
                        f"(bad {bad!r}, duplicated {dup!r}).")
    if like is not None:
        try:
            cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(qualified_name(like)))
        except Exception as exc:
            raise DataError(f"Cannot read the column types of {like.table!r}: "
                            f"{_first_line(exc)}") from None
        found = {c.name: c for c in _describe(cur, like.table or "")}
        missing = [n for n in names if n not in found]
        if missing:
            raise DataError(f"Table {like.table!r} (like=) lacks column(s) {missing!r}.")
        columns = [found[n] for n in names]
    else:
        recorded = _recorded_columns(schema)
        columns = [recorded.get(f.name) or _arrow_to_sql(f.name, f.type) for f in schema]
    for c in columns:
        if not _TYPE_TEXT.match(c.type) or c.kind not in {*_KINDS.values(), "enum"}:
            raise DataError(f"Column {c.name!r}: refusing unexpected SQL type {c.type!r}.")
    return columns


def _ensure_enums(cur: Any, columns: Sequence[SqlColumn]) -> list[str]:
    """Create the enum types the destination lacks (same labels, same order)."""
    from psycopg import sql

    created = []
    for c in columns:
        if c.kind != "enum" or c.type in created:
            continue
        cur.execute("SELECT to_regtype(%s)", (c.type,))
        if cur.fetchone()[0] is None:
            cur.execute(sql.SQL("CREATE TYPE {} AS ENUM ({})").format(
                sql.SQL(c.type), sql.SQL(", ").join(sql.Literal(v) for v in c.labels)))
            created.append(c.type)
    return created


def _rows(batch: Any, columns: Sequence[SqlColumn]) -> Iterator[tuple]:
    """Python rows of a record batch, NaN as NULL, integral floats into integer columns."""
    import pyarrow as pa

    values = []
    for array, column in zip(batch.columns, columns):
        items = array.to_pylist()
        if pa.types.is_floating(array.type):
            items = [None if v is None or math.isnan(v) else v for v in items]
            if column.kind in _INTEGER_KINDS:
                items = [_integral(v, column.name) for v in items]
        values.append(items)
    return zip(*values)


def _integral(value: float | None, name: str) -> int | None:
    if value is None:
        return None
    if not float(value).is_integer():
        raise DataError(f"Column {name!r} is an integer column but holds {value!r}.")
    return int(value)


def _copy_grants(cur: Any, old_oid: int, staging: Any) -> int:
    from psycopg import sql

    cur.execute("SELECT a.grantee, pg_get_userbyid(a.grantee), a.privilege_type, a.is_grantable"
                " FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = %s"
                " AND a.grantee <> c.relowner", (old_oid,))
    grants = cur.fetchall()
    for grantee, role, privilege, grantable in grants:
        if privilege not in _PRIVILEGES:
            continue
        cur.execute(sql.SQL("GRANT {} ON {} TO {}{}").format(
            sql.SQL(privilege), staging, sql.SQL("PUBLIC") if grantee == 0 else
            sql.Identifier(role), sql.SQL(" WITH GRANT OPTION" if grantable else "")))
    return len(grants)


def _publish_error(exc: BaseException, src: SqlSource) -> SqlPublishError:
    sqlstate = getattr(exc, "sqlstate", None) or ""
    # 55P03 lock_not_available, 40xxx serialisation/deadlock, 08xxx connection, 57P01 shutdown
    transient = sqlstate == "55P03" or sqlstate.startswith(("40", "08", "57P"))
    hint = ""
    if sqlstate == "2BP01":
        hint = " (views or foreign keys depend on the published table; drop them or point " \
               "them elsewhere)"
    elif sqlstate == "55P03":
        hint = " (a long-running reader held the table past lock_timeout; retry later)"
    return SqlPublishError(f"Cannot publish {src.shown}: {_first_line(exc)}{hint}; the "
                           "published table is unchanged.", transient=transient)


def publish_table(surrogate: Any, destination: Any, *, table: str | None = None,
                  like: str | None = None, comment: str | Mapping[str, Any] | None = None,
                  lock_timeout: float = 30.0, chunk_rows: int = CHUNK_ROWS,
                  replace: bool = True,
                  before_swap: Callable[[Any, Any], None] | None = None,
                  guard: Callable[[str | None], None] | None = None,
                  types_from: str | os.PathLike | None = None) -> dict[str, Any]:
    """Publish a table into PostgreSQL atomically: readers see the old or the new release.

    Parameters
    ----------
    surrogate : DataFrame, pyarrow Table, or Parquet/CSV path
        The table to publish (normally a gated surrogate file).
    destination : str, sqlalchemy URL or SqlSource
        The database, with ``?table=NAME`` unless ``table`` is given.
    table : str, optional
        ``NAME`` or ``SCHEMA.NAME`` of the published table.
    like : str, optional
        A table in the destination database whose column types the new table copies
        (by column name). Default: the types recorded in the surrogate's schema metadata
        when it was read from PostgreSQL, else types mapped from its Arrow types.
        Missing enum types are created with the recorded labels.
    comment : str or dict, optional
        ``COMMENT ON TABLE`` of the new release (a dict is stored as JSON), e.g. the
        release id and the SHA-256 of the gated file.
    lock_timeout : float, default 30
        Seconds to wait for the published table's lock (readers still running on the
        old release) before giving up with a transient ``SqlPublishError``.
    chunk_rows : int
        Rows per ``COPY`` batch read from the file.
    replace : bool, default True
        Replace an existing table (a new release). False refuses with ``StoreError``
        if the table exists (``astrid shuffle`` without ``--overwrite``).
    before_swap : callable, optional
        ``before_swap(cursor, staging_identifier)`` runs in the transaction after the
        load and before the swap (tests use it to inject failures).
    guard : callable, optional
        ``guard(comment)`` gets the published table's current comment (None if there is
        no table or no comment) under the publication lock, before anything is loaded;
        an exception it raises rolls the transaction back and propagates (the release
        protocol of ``_release`` refuses an older release this way, race-free).
    types_from : path, optional
        A Parquet file whose recorded SQL column types (``astrid.sql``) the new table
        takes when ``like`` is not given: the staged surrogate, when ``surrogate`` is its
        canonical form (which carries no metadata).

    Returns
    -------
    dict
        ``table`` (``schema.name``), ``rows``, ``columns`` (name → SQL type),
        ``replaced`` (a previous release existed), ``grants_copied``,
        ``enum_types_created``, ``swap_seconds`` (lock + renames + commit), ``seconds``.

    Raises
    ------
    SqlConnectionError, SqlPublishError, DataError
        Nothing is published in every case: the single transaction is rolled back.
    """
    from psycopg import sql

    psycopg = _psycopg()
    started = time.perf_counter()
    src = sql_source(destination, table=table, need="table")
    like_src = sql_source(src.url, table=like, need="table") if like else None
    chunk_rows = _check_chunk_rows(chunk_rows)
    if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, (int, float)) \
            or not 0 < lock_timeout < 86400:
        raise ParameterError(f"Invalid lock_timeout: {lock_timeout!r}. Must be seconds > 0.")
    if isinstance(comment, Mapping):
        comment = json.dumps(dict(comment), sort_keys=True, default=str)
    schema, batches = _surrogate_batches(surrogate, chunk_rows)
    if types_from is not None:
        schema = schema.with_metadata(_recorded_metadata(types_from))
    conn = _connect(src)
    try:
        with conn.transaction():
            cur = conn.cursor()
            columns = _definitions(cur, schema, like_src)
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                        (qualified_name(src).as_string(cur),))
            cur.execute("SELECT c.oid, c.relkind, n.nspname FROM pg_class c JOIN pg_namespace n"
                        " ON n.oid = c.relnamespace WHERE c.oid = to_regclass(%s)",
                        (qualified_name(src).as_string(cur),))
            found = cur.fetchone()
            if guard is not None:
                current = None
                if found is not None:
                    cur.execute("SELECT obj_description(%s, 'pg_class')", (found[0],))
                    current = cur.fetchone()[0]
                guard(current)
            if found is not None and not replace:
                raise StoreError(f"Refusing to overwrite existing table {src.table!r} (pass "
                                 "overwrite/replace to publish a new release).")
            if found is not None and found[1] not in ("r", "p"):
                raise DataError(f"{src.table!r} exists and is not a table (relkind "
                                f"{found[1]!r}); refusing to replace it.")
            if found is not None:
                namespace = found[2]
            elif src.schema:
                namespace = src.schema
            else:
                cur.execute("SELECT current_schema()")
                namespace = cur.fetchone()[0]
            token = uuid.uuid4().hex[:8]
            staging_name = f"{src.name[:40]}__astrid_new_{token}"
            staging = sql.Identifier(namespace, staging_name)
            created = _ensure_enums(cur, columns)
            cur.execute(sql.SQL("CREATE TABLE {} ({})").format(staging, sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(c.name), sql.SQL(c.type))
                for c in columns)))
            rows = 0
            with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(
                    staging, sql.SQL(", ").join(sql.Identifier(c.name) for c in columns))) as cp:
                for batch in batches:
                    for row in _rows(batch, columns):
                        cp.write_row(row)
                    rows += batch.num_rows
            grants = _copy_grants(cur, found[0], staging) if found is not None else 0
            if comment is not None:
                cur.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
                    staging, sql.Literal(str(comment))))
            cur.execute(sql.SQL("ANALYZE {}").format(staging))
            if before_swap is not None:
                before_swap(cur, staging)
            swap_started = time.perf_counter()
            cur.execute("SELECT set_config('lock_timeout', %s, true)",
                        (f"{int(lock_timeout * 1000)}ms",))
            published = sql.Identifier(namespace, src.name)
            if found is not None:
                backup_name = f"{src.name[:40]}__astrid_old_{token}"
                cur.execute(sql.SQL("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(published))
                cur.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                    published, sql.Identifier(backup_name)))
            cur.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(
                staging, sql.Identifier(src.name)))
            if found is not None:
                cur.execute(sql.SQL("DROP TABLE {}").format(
                    sql.Identifier(namespace, backup_name)))
        swap_seconds = time.perf_counter() - swap_started
    except psycopg.Error as exc:
        raise _publish_error(exc, src) from None
    except (DataError, StoreError) as exc:
        raise type(exc)(f"{str(exc).rstrip('.')}. Nothing was published.") from None
    finally:
        conn.close()
    return {
        "table": f"{namespace}.{src.name}",
        "rows": rows,
        "columns": {c.name: c.type for c in columns},
        "replaced": found is not None,
        "grants_copied": grants,
        "enum_types_created": created,
        "swap_seconds": round(swap_seconds, 4),
        "seconds": round(time.perf_counter() - started, 3),
    }
