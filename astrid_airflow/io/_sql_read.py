"""Reading a PostgreSQL table or query: typed, chunked, in one snapshot.

Reading streams the result through a server-side cursor in chunks of ``chunk_rows``
rows, inside one read-only REPEATABLE READ transaction (one snapshot); the column types
map to Arrow types as :mod:`._sql_types` describes. A table (not a query) is read in a
deterministic order, by its primary key or else by every column, so the same content
always gives the same fingerprint and, with the same seed, the same surrogate.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from astrid_airflow._errors import DataError

from ._sql import (
    CHUNK_ROWS,
    SqlSource,
    check_chunk_rows,
    connect,
    first_line,
    load_psycopg,
    qualified_name,
    sql_source,
)
from ._sql_types import SqlColumn, arrow_schema, arrow_type, describe


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
    return pa.array(values, type=arrow_type(column))


def _record_batch(rows: list[tuple], columns: Sequence[SqlColumn], schema: Any) -> Any:
    import pyarrow as pa

    by_column = list(zip(*rows)) if rows else [() for _ in columns]
    return pa.RecordBatch.from_arrays(
        [_arrow_array(v, c) for v, c in zip(by_column, columns)], schema=schema)


def _select(cur: Any, src: SqlSource) -> tuple[Any, list[SqlColumn]]:
    """The SELECT of a source and its columns.

    A query is used as given; a table is read in primary-key order, or ordered by
    every column when it has none, so its rows always come in the same order.
    """
    from psycopg import sql

    if src.query is not None:
        select = sql.SQL(src.query)
        cur.execute(sql.SQL("SELECT * FROM ({}) AS astrid_q LIMIT 0").format(select))
        return select, describe(cur, src.shown)
    target = qualified_name(src)
    name = target.as_string(cur)
    cur.execute("SELECT to_regclass(%s)", (name,))
    if cur.fetchone()[0] is None:
        raise DataError(f"No table {src.table!r} in "
                        f"{src.url.render_as_string(hide_password=True)} (or no permission "
                        "to see it).")
    cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(target))
    columns = describe(cur, src.shown)
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

    psycopg = load_psycopg()
    chunk_rows = check_chunk_rows(chunk_rows)
    conn = connect(src)
    try:
        conn.isolation_level = IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        cur = conn.cursor()
        try:
            select, columns = _select(cur, src)
        except psycopg.Error as exc:
            raise DataError(f"Cannot read {src.shown}: {first_line(exc)}") from None
        schema = arrow_schema(columns)
        named = conn.cursor(name=f"astrid_{uuid.uuid4().hex[:8]}")
        named.itersize = chunk_rows

        def batches() -> Iterator[Any]:
            try:
                named.execute(select)
                while rows := named.fetchmany(chunk_rows):
                    yield _record_batch(rows, columns, schema)
            except psycopg.Error as exc:
                raise DataError(f"Cannot read {src.shown}: {first_line(exc)}") from None

        yield schema, batches()
    finally:
        conn.close()


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
