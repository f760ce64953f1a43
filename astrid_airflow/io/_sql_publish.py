"""Publishing a table into PostgreSQL atomically (staging table, ``COPY``, swap by rename).

Publishing (:func:`publish_table`) runs in ONE transaction: create a staging table, load
it with ``COPY``, copy the published table's grants, then ``LOCK`` the published table,
rename it to a backup, rename the staging table to the published name, drop the
backup and commit. Readers see the old release or the new one, never a missing or
partial table: the ``ACCESS EXCLUSIVE`` lock is held only for the renames, so a
``SELECT`` arriving meanwhile waits (it does not fail) and then reads the new table. A
failure at any step rolls everything back and leaves the published table untouched.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from astrid_airflow._errors import DataError, ParameterError, StoreError

from ._sql import (
    CHUNK_ROWS,
    SqlPublishError,
    SqlSource,
    check_chunk_rows,
    connect,
    first_line,
    load_psycopg,
    qualified_name,
    sql_source,
)
from ._sql_types import INTEGER_KINDS, SqlColumn, definitions, recorded_metadata

_PRIVILEGES = {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"}


def _surrogate_record_batches(surrogate: Any, chunk_rows: int) -> tuple[Any, Iterator[Any]]:
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
            if column.kind in INTEGER_KINDS:
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
    return SqlPublishError(f"Cannot publish {src.shown}: {first_line(exc)}{hint}; the "
                           "published table is unchanged.", transient=transient)


def _lock_destination(cur: Any, src: SqlSource, guard: Callable[[str | None], None] | None,
                      replace: bool) -> tuple[Any, str]:
    """Take the publication lock and look the published table up.

    Returns its ``(oid, relkind, schema)`` row (None if there is no such table) and the
    schema the new release goes into; runs ``guard`` on the table's current comment and
    refuses a table that may not be replaced.
    """
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
    return found, namespace


def _stage(cur: Any, staging: Any, columns: Sequence[SqlColumn], batches: Iterator[Any],
           found: Any, comment: str | None) -> tuple[list[str], int, int]:
    """Create and load the staging table: missing enum types, ``CREATE TABLE``, ``COPY``,
    the published table's grants, the comment, ``ANALYZE``.

    Returns the enum types created, the rows loaded and the grants copied.
    """
    from psycopg import sql

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
    return created, rows, grants


def _swap(cur: Any, src: SqlSource, namespace: str, staging: Any, found: Any, token: str,
          lock_timeout: float) -> None:
    """Swap the staging table in: ``LOCK`` the published table (within ``lock_timeout``),
    rename it to a backup, rename the staging table to its name, drop the backup."""
    from psycopg import sql

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


def publish_table(surrogate: Any, destination: Any, *, table: str | None = None,
                  like: str | None = None, comment: str | Mapping[str, Any] | None = None,
                  lock_timeout: float = 30.0, chunk_rows: int = CHUNK_ROWS,
                  replace: bool = True,
                  before_swap: Callable[[Any, Any], None] | None = None,
                  guard: Callable[[str | None], None] | None = None,
                  types_from: str | os.PathLike | None = None) -> dict[str, Any]:
    """Publish a table into PostgreSQL atomically: readers see the old or the new release.

    One transaction locks, stages with ``COPY`` and swaps by rename; any error
    (``SqlConnectionError``, ``SqlPublishError``, ``DataError``) rolls it back.

    Parameters
    ----------
    surrogate : DataFrame, pyarrow Table, or Parquet/CSV path
        The table to publish (normally a gated surrogate file).
    destination, table : str, sqlalchemy URL or SqlSource; str, optional
        The database, and ``[SCHEMA.]NAME`` unless ``destination`` has ``?table=NAME``.
    like, types_from : str; path, optional
        A destination table, or a Parquet file's recorded ``astrid.sql`` types, whose
        column types the new table takes; default: the surrogate's, else from Arrow.
    comment : str or dict, optional
        ``COMMENT ON TABLE`` of the new release (a dict as JSON).
    lock_timeout, chunk_rows : float, int
        Seconds to wait for the table's lock (then a transient error); rows per ``COPY``.
    replace : bool, default True
        Replace an existing table; False refuses one with ``StoreError``.
    before_swap, guard : callable, optional
        ``before_swap(cursor, staging)`` runs before the swap; ``guard(comment)`` gets the
        current comment under the lock, before any load, and may raise to refuse.

    Returns
    -------
    dict
        ``table``, ``rows``, ``columns`` (name → SQL type), ``replaced``,
        ``grants_copied``, ``enum_types_created``, ``swap_seconds``, ``seconds``.
    """
    from psycopg import sql

    psycopg = load_psycopg()
    started = time.perf_counter()
    src = sql_source(destination, table=table, need="table")
    like_src = sql_source(src.url, table=like, need="table") if like else None
    chunk_rows = check_chunk_rows(chunk_rows)
    if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, (int, float)) \
            or not 0 < lock_timeout < 86400:
        raise ParameterError(f"Invalid lock_timeout: {lock_timeout!r}. Must be seconds > 0.")
    if isinstance(comment, Mapping):
        comment = json.dumps(dict(comment), sort_keys=True, default=str)
    schema, batches = _surrogate_record_batches(surrogate, chunk_rows)
    if types_from is not None:
        schema = schema.with_metadata(recorded_metadata(types_from))
    conn = connect(src)
    try:
        with conn.transaction():
            cur = conn.cursor()
            columns = definitions(cur, schema, like_src)
            found, namespace = _lock_destination(cur, src, guard, replace)
            token = uuid.uuid4().hex[:8]
            staging_name = f"{src.name[:40]}__astrid_new_{token}"
            staging = sql.Identifier(namespace, staging_name)
            created, rows, grants = _stage(cur, staging, columns, batches, found, comment)
            if before_swap is not None:
                before_swap(cur, staging)
            swap_started = time.perf_counter()
            _swap(cur, src, namespace, staging, found, token, lock_timeout)
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
