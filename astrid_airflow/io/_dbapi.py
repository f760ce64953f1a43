"""Any DB-API 2 database in and out: chunked reads into Parquet, atomic release by swap.

The PostgreSQL path (:mod:`._sql`) talks psycopg 3 directly because it needs what the
DB-API cannot give: the server's column types (type OIDs, enum labels) for typed
Parquet, ``COPY`` for loading, the table's grants and ``COMMENT ON TABLE``. Every other
engine goes through here with only a connection factory (Airflow's
``DbApiHook.get_conn``, ``sqlite3.connect``...), so a Snowflake, BigQuery, MySQL or Trino
connection can be a source; the library never imports Airflow.

Reading runs the query (or ``SELECT *`` of the table, ordered by every column so the
same content gives the same fingerprint) and fetches ``chunk_rows`` rows at a time;
column types are inferred by Arrow from the values (the DB-API reports no portable
types), chunks are unified (an all-NULL chunk takes the others' type) and written as
one Parquet file.

Publishing is a swap in one transaction: a staging table is created and loaded, the
published table renamed to a backup, the staging table renamed to the published name,
the backup dropped, and the release recorded in ``astrid_releases`` (the engine-neutral
stand-in for PostgreSQL's table comment), then commit. Readers see the old release or
the new one. That needs transactional DDL; an engine without it (MySQL: DDL commits;
BigQuery, Trino: no multi-statement DDL transaction) is refused with a
``SqlPublishError`` saying so, before anything is written. Engines with the swap here:
``sqlite`` (tested). MySQL's ``RENAME TABLE a TO b, c TO a`` and Snowflake's
``ALTER TABLE ... SWAP WITH`` are atomic too but not implemented (nothing to test them
against).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from astrid_airflow._errors import DataError, ParameterError

from ._sql import CHUNK_ROWS, SqlConnectionError, SqlPublishError

#: Engines whose release swap is implemented (transactional DDL).
SWAP_DIALECTS = frozenset({"sqlite"})
#: Where a DB-API release records its manifest (one row per published table).
RELEASES_TABLE = "astrid_releases"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_BACKTICK = {"mysql", "mariadb", "bigquery"}


def _quote(name: str, dialect: str) -> str:
    """A table or column name quoted for ``dialect`` (``schema.table`` allowed)."""
    parts = str(name).split(".")
    if not all(_IDENT.match(p) for p in parts):
        raise ParameterError(f"Invalid table or column name {name!r}: letters, digits, '_' "
                             "and '$' only (use a query for anything else).")
    q = "`" if dialect in _BACKTICK else '"'
    return ".".join(f"{q}{p}{q}" for p in parts)


def read_dbapi_to_parquet(connect: Callable[[], Any], path: str | os.PathLike, *,
                          table: str | None = None, query: str | None = None,
                          dialect: str = "", chunk_rows: int = CHUNK_ROWS) -> dict[str, Any]:
    """Stream a table or query of a DB-API connection into a Parquet file.

    Parameters
    ----------
    connect : callable
        Returns a new DB-API 2 connection (closed here).
    path : path
        The Parquet file to write.
    table, query : str
        Exactly one: ``[SCHEMA.]TABLE`` (read ordered by every column) or a query.
    dialect : str
        Engine name for identifier quoting (``mysql``/``bigquery``: backticks).
    chunk_rows : int
        Rows fetched at a time.

    Returns
    -------
    dict
        ``rows``, ``columns``, ``chunks``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if bool(table) == bool(query):
        raise ParameterError("Give exactly one of table= or query=.")
    conn = _connect(connect)
    try:
        cur = conn.cursor()
        if table:
            quoted = _quote(table, dialect)
            cur.execute(f"SELECT * FROM {quoted} WHERE 1 = 0")
            names = [d[0] for d in cur.description]
            order = ", ".join(_quote(n, dialect) for n in names)
            cur.execute(f"SELECT * FROM {quoted} ORDER BY {order}")
        else:
            cur.execute(query)
        names = [d[0] for d in cur.description]
        chunks = []
        while rows := cur.fetchmany(int(chunk_rows)):
            columns = list(zip(*rows))
            chunks.append(pa.table({n: pa.array(list(c)) for n, c in zip(names, columns)}))
    finally:
        conn.close()
    if not chunks:
        raise DataError(f"{table or 'the query'} has no rows.")
    data = pa.concat_tables(chunks, promote_options="permissive")
    pq.write_table(data, os.fspath(path))
    return {"rows": data.num_rows, "columns": names, "chunks": len(chunks)}


def _connect(connect: Callable[[], Any]) -> Any:
    try:
        return connect()
    except Exception as exc:  # drivers' own error classes: no common base
        raise SqlConnectionError(f"Cannot connect: {type(exc).__name__}: {exc}") from None


def _sql_type(typ: Any) -> str:
    import pyarrow as pa

    if pa.types.is_boolean(typ) or pa.types.is_integer(typ):
        return "INTEGER"
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "REAL"
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return "BLOB"
    return "TEXT"


def publish_dbapi(surrogate: str | os.PathLike, connect: Callable[[], Any], table: str, *,
                  dialect: str, comment: str | Mapping[str, Any] | None = None,
                  guard: Callable[[str | None], None] | None = None,
                  chunk_rows: int = CHUNK_ROWS) -> dict[str, Any]:
    """Publish a Parquet/CSV surrogate as ``table`` atomically (see the module notes).

    Parameters
    ----------
    surrogate : path
        The gated file.
    connect : callable
        Returns a new DB-API 2 connection.
    table : str
        The published table.
    dialect : str
        The engine; only :data:`SWAP_DIALECTS` are accepted.
    comment : str or dict, optional
        The release's manifest, kept in ``astrid_releases`` (a dict as JSON).
    guard : callable, optional
        ``guard(current)`` gets the recorded manifest of the current release (None if
        none) under the write lock, before anything is loaded; raising aborts.

    Returns
    -------
    dict
        ``table``, ``rows``, ``columns``, ``swap_seconds``.
    """
    if dialect not in SWAP_DIALECTS:
        raise SqlPublishError(
            f"Cannot publish to {table!r} on {dialect or 'this engine'}: no atomic table "
            "swap is implemented for it (readers could see a missing or partial table). "
            f"Supported: postgresql (astrid_airflow.io._sql), {', '.join(sorted(SWAP_DIALECTS))}."
            " Publish to a file or a PostgreSQL table instead.")
    import pyarrow.parquet as pq

    from ._io import read_table

    text = os.fspath(surrogate)
    if text.endswith(".parquet"):
        source = pq.ParquetFile(text)
        schema, batches = source.schema_arrow, source.iter_batches(batch_size=chunk_rows)
    else:
        import pyarrow as pa

        data = pa.Table.from_pandas(read_table(text), preserve_index=False)
        schema, batches = data.schema, data.to_batches(max_chunksize=chunk_rows)
    name, staging = _quote(table, dialect), _quote(f"astrid_staging_{uuid.uuid4().hex[:12]}",
                                                   dialect)
    backup = _quote(f"astrid_backup_{uuid.uuid4().hex[:12]}", dialect)
    releases = _quote(RELEASES_TABLE, dialect)
    note = comment if comment is None or isinstance(comment, str) else json.dumps(
        dict(comment), sort_keys=True)
    conn = _connect(connect)
    with contextlib.closing(conn):
        conn.isolation_level = None  # sqlite3: explicit BEGIN/COMMIT, DDL included
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE")  # the write lock: one publisher at a time
        try:
            cur.execute(f"CREATE TABLE IF NOT EXISTS {releases} "
                        "(table_name TEXT PRIMARY KEY, manifest TEXT)")
            cur.execute(f"SELECT manifest FROM {releases} WHERE table_name = ?", (table,))
            row = cur.fetchone()
            if guard is not None:
                guard(row[0] if row else None)
            columns = ", ".join(f"{_quote(f.name, dialect)} {_sql_type(f.type)}"
                                for f in schema)
            cur.execute(f"CREATE TABLE {staging} ({columns})")
            marks = ", ".join("?" * len(schema))
            rows = 0
            for batch in batches:
                values = list(zip(*(c.to_pylist() for c in batch.columns)))
                cur.executemany(f"INSERT INTO {staging} VALUES ({marks})", values)
                rows += len(values)
            started = time.perf_counter()
            cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (table.split(".")[-1],))
            if cur.fetchone():
                cur.execute(f"ALTER TABLE {name} RENAME TO {backup.split('.')[-1]}")
            cur.execute(f"ALTER TABLE {staging} RENAME TO {name.split('.')[-1]}")
            cur.execute(f"DROP TABLE IF EXISTS {backup}")
            cur.execute(f"INSERT OR REPLACE INTO {releases} (table_name, manifest) "
                        "VALUES (?, ?)", (table, note))
            cur.execute("COMMIT")
            swap = time.perf_counter() - started
        except BaseException:
            cur.execute("ROLLBACK")
            raise
    return {"table": table, "rows": rows, "columns": [f.name for f in schema],
            "swap_seconds": swap}
