"""``AstridPostgresHook``: the typed, atomic PostgreSQL path as an Airflow hook.

A ``PostgresHook`` (same ``postgres`` connection type, same fields and extras) with the
two things the operators do with a PostgreSQL table, for use in ``@task`` code too:
:meth:`read_to_parquet` (typed, chunked, one snapshot) and :meth:`publish` (staging
table + rename in one transaction). Both go through the library's psycopg code
(:mod:`astrid_airflow.io._sql`), which the common.sql DB-API path cannot replace: it
needs the server's column types and enum labels, ``COPY``, the table's grants and its
comment. Other engines use their own ``DbApiHook`` (see ``astrid_airflow.operators.sql``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from airflow.providers.postgres.hooks.postgres import PostgresHook

__all__ = ["AstridPostgresHook"]


class AstridPostgresHook(PostgresHook):
    """PostgreSQL tables in and out for ASTRID, on an ordinary ``postgres`` connection.

    Parameters
    ----------
    postgres_conn_id : str, default "postgres_default"
        The Airflow connection (as for ``PostgresHook``).
    """

    hook_name = "ASTRID PostgreSQL"

    def _source(self, table: str | None = None, query: str | None = None) -> Any:
        from astrid_airflow.io import sql_source

        return sql_source(self.sqlalchemy_url, table=table, query=query)

    def read_to_parquet(self, path: str | os.PathLike, *, table: str | None = None,
                        query: str | None = None, chunk_rows: int | None = None) -> Any:
        """Stream ``table`` (``SCHEMA.NAME``) or ``query`` into a typed Parquet file."""
        from astrid_airflow.io import CHUNK_ROWS, sql_to_parquet

        return sql_to_parquet(self._source(table, query), path,
                              chunk_rows=chunk_rows or CHUNK_ROWS)

    def publish(self, surrogate: str | os.PathLike, table: str, *,
                comment: str | Mapping[str, Any] | None = None,
                lock_timeout: float | None = None,
                guard: Callable[[str | None], None] | None = None) -> dict[str, Any]:
        """Publish a gated file as ``table`` atomically (``_sql.publish_table``)."""
        from astrid_airflow.io import publish_table

        kwargs: dict[str, Any] = {"comment": comment, "guard": guard}
        if lock_timeout is not None:
            kwargs["lock_timeout"] = lock_timeout
        return publish_table(surrogate, self._source(table), **kwargs)
