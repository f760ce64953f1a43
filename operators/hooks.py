"""The provider's hooks: ``AstridStoreHook`` (the ``astrid`` connection type: an artefact
store) and ``AstridPostgresHook`` (the typed, atomic PostgreSQL path).

``AstridStoreHook`` is what the UI's connection form and "Test" button use for an
artefact store: the connection's host is the store's URL (a local directory,
``s3://bucket/astrid``...), its extra ``storage_conn_id`` the object-storage connection
that opens it (``aws_default``...). Each method is one library call on
``ArtefactStore``. The operators' ``store_conn_id`` takes such a connection.

``AstridPostgresHook``:

A ``PostgresHook`` (same ``postgres`` connection type, same fields and extras) with the
two things the operators do with a PostgreSQL table, for use in ``@task`` code too:
:meth:`read_to_parquet` (typed, chunked, one snapshot) and :meth:`publish` (staging
table + rename in one transaction). Both go through the library's psycopg code
(``astrid_airflow.io._sql*``), which the common.sql DB-API path cannot replace: it
needs the server's column types and enum labels, ``COPY``, the table's grants and its
comment. Other engines use their own ``DbApiHook`` (see ``astrid_airflow.operators.sql``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from airflow.sdk import BaseHook

from ._compat import AirflowException
from .get_provider_info import STORE_CONN_TYPE, store_conn_fields

try:
    from airflow.providers.postgres.hooks.postgres import PostgresHook
except ImportError:  # without the postgres extra the store hook must still import
    class PostgresHook(BaseHook):  # type: ignore[no-redef]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise AirflowException("AstridPostgresHook needs the postgres extra: "
                                   "pip install 'astrid-airflow[postgres]'.")

__all__ = ["STORE_CONN_TYPE", "AstridPostgresHook", "AstridStoreHook", "store_conn_fields"]

class AstridStoreHook(BaseHook):
    """An ASTRID artefact store behind an Airflow connection of type ``astrid``.

    Parameters
    ----------
    astrid_conn_id : str, default "astrid_default"
        Host: the store URL; extra ``storage_conn_id``: the object-storage connection.
    """

    conn_name_attr = "astrid_conn_id"
    default_conn_name = "astrid_default"
    conn_type = STORE_CONN_TYPE
    hook_name = "ASTRID artefact store"

    def __init__(self, astrid_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.astrid_conn_id = astrid_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        behaviour = store_conn_fields()["ui-field-behaviour"]
        return {key.replace("-", "_"): value for key, value in behaviour.items()}

    def store_path(self) -> Any:
        """The store as an ``ObjectStoragePath`` carrying its storage connection id."""
        from ._common import store_from_connection

        return store_from_connection(self.get_connection(self.astrid_conn_id))

    def get_store(self) -> Any:
        """The library's ``ArtefactStore`` opened through the storage connection."""
        from astrid_airflow import ArtefactStore

        from ._common import store_filesystem, store_url

        path = self.store_path()
        return ArtefactStore(store_url(path), fs=store_filesystem(path))

    def list_artefacts(self, name: str | None = None) -> list[dict[str, Any]]:
        """Every artefact version in the store (``ArtefactStore.list``)."""
        return self.get_store().list(name)

    def test_connection(self) -> tuple[bool, str]:
        """The UI's "Test": open the store and list its artefact names."""
        try:
            store = self.get_store()
            names = store.names()
        except Exception as exc:  # the UI shows the message; nothing to re-raise to
            return False, f"{type(exc).__name__}: {exc}"
        return True, f"Store {store.root} is readable: {len(names)} artefact name(s)."


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
        """Publish a gated file as ``table`` atomically (``_sql_publish.publish_table``)."""
        from astrid_airflow.io import publish_table

        kwargs: dict[str, Any] = {"comment": comment, "guard": guard}
        if lock_timeout is not None:
            kwargs["lock_timeout"] = lock_timeout
        return publish_table(surrogate, self._source(table), **kwargs)
