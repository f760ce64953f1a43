"""A second engine through Airflow's own abstraction: SQLite via the common.sql DbApiHook.

PostgreSQL is the fully tested engine (tests/io/test_sql.py, test_postgres_dag.py); this
proves the generic path: a ``conn://CONN_ID/TABLE`` reference whose connection is not
PostgreSQL is read and published through the connection's ``DbApiHook``
(``apache-airflow-providers-sqlite``'s ``SqliteHook``), chunked, with the release swapped
in one transaction, and engines without a transactional swap refused before anything is
written.
"""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.sql import (
    as_table,
    dbapi_hook,
    hook_dialect,
    local_table,
    publish_to_table,
)

from astrid_airflow.io._dbapi import RELEASES_TABLE, publish_dbapi, read_dbapi_to_parquet
from astrid_airflow.io._sql import SqlPublishError

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A SQLite file with the demo reference table, as Airflow connection ``astrid_lite``."""
    path = tmp_path / "astrid.db"
    table = pd.read_csv(bundled_table("synthetic.csv"))
    with sqlite3.connect(path) as conn:
        table.to_sql("reference", conn, index=False)
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_LITE", json.dumps(
        {"conn_type": "sqlite", "host": str(path)}))
    return path, table


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def test_the_connections_hook_is_a_dbapi_hook_for_sqlite_and_none_for_postgres(db, monkeypatch):
    hook = dbapi_hook(as_table("conn://astrid_lite/reference", "reference"))
    assert type(hook).__name__ == "SqliteHook" and hook_dialect(hook) == "sqlite"
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_PG", "postgresql://u@localhost:5432/db")
    assert dbapi_hook(as_table("conn://astrid_pg/public.t", "reference")) is None


def test_a_table_reads_in_chunks_into_the_same_rows(db):
    _, table = db
    with local_table(as_table("conn://astrid_lite/reference", "reference"),
                     chunk_rows=64) as local:
        got = pd.read_parquet(local)
    assert list(got.columns) == list(table.columns)
    pd.testing.assert_frame_equal(_sorted(got), _sorted(table), check_dtype=False)
    # ordered by every column: the same content reads the same bytes (stable fingerprint)
    assert got.equals(_sorted(got))


def test_chunks_unify_types_and_a_query_works(tmp_path):
    path = tmp_path / "q.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(None, None)] * 3 + [(1, "x")] * 3)
    out = tmp_path / "t.parquet"
    info = read_dbapi_to_parquet(lambda: sqlite3.connect(path), out,
                                 query="SELECT a, b FROM t", chunk_rows=3)
    assert info == {"rows": 6, "columns": ["a", "b"], "chunks": 2}
    got = pd.read_parquet(out)
    assert got["a"].isna().sum() == 3 and set(got["b"].dropna()) == {"x"}


def test_publish_swaps_the_table_and_records_the_release(db, tmp_path):
    path, table = db
    surrogate = tmp_path / "surrogate.parquet"
    table.iloc[:100].to_parquet(surrogate)
    dest = as_table("conn://astrid_lite/released", "destination")
    seen = []
    info = publish_to_table(str(surrogate), dest, comment={"astrid_release": "r1"},
                            lock_timeout=None, guard=seen.append)
    assert info["rows"] == 100 and seen == [None]
    table.iloc[:50].to_parquet(surrogate)
    publish_to_table(str(surrogate), dest, comment={"astrid_release": "r2"},
                     lock_timeout=None, guard=seen.append)
    assert json.loads(seen[1])["astrid_release"] == "r1"  # the guard saw the current one
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM released").fetchone() == (50,)
        (manifest,) = conn.execute(f"SELECT manifest FROM {RELEASES_TABLE} "
                                   "WHERE table_name = 'released'").fetchone()
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert json.loads(manifest)["astrid_release"] == "r2"
    assert not [n for n in names if n.startswith(("astrid_staging_", "astrid_backup_"))]


def test_a_refusing_guard_rolls_everything_back(db, tmp_path):
    path, table = db
    surrogate = tmp_path / "surrogate.parquet"
    table.iloc[:10].to_parquet(surrogate)
    connect = lambda: sqlite3.connect(path)  # noqa: E731
    publish_dbapi(surrogate, connect, "released", dialect="sqlite", comment="r1")

    def refuse(current):
        raise RuntimeError(f"older than {current}")

    table.iloc[:20].to_parquet(surrogate)
    with pytest.raises(RuntimeError, match="older than r1"):
        publish_dbapi(surrogate, connect, "released", dialect="sqlite", comment="r0",
                      guard=refuse)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM released").fetchone() == (10,)
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert not [n for n in names if n.startswith("astrid_staging_")]


@pytest.mark.parametrize("dialect", ["mysql", "bigquery", "trino", "snowflake"])
def test_engines_without_the_swap_are_refused_before_anything_is_written(dialect, tmp_path):
    def connect():
        raise AssertionError("connected although the engine is refused")

    with pytest.raises(SqlPublishError, match="no atomic table swap"):
        publish_dbapi(tmp_path / "s.parquet", connect, "t", dialect=dialect)


def test_a_non_dbapi_connection_is_refused(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_HTTP", json.dumps({"conn_type": "http",
                                                               "host": "example.invalid"}))
    with pytest.raises(AirflowFailException, match="DbApiHook"):
        dbapi_hook(as_table("conn://astrid_http/t", "reference"))


@pytest.mark.postgres
def test_astrid_postgres_hook_reads_typed_and_publishes_atomically(tmp_path, monkeypatch):
    """The registered hook on an ordinary ``postgres`` connection: the library's path."""
    from astrid_airflow.operators.hooks import AstridPostgresHook

    from tests.io.test_sql import postgres_url

    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_HOOK_PG", postgres_url())
    hook = AstridPostgresHook(postgres_conn_id="astrid_hook_pg")
    table = f"public.hook_{tmp_path.name[-12:].replace('-', '_').lower()}"
    surrogate = tmp_path / "s.parquet"
    pd.DataFrame({"v": [1, 2, 3], "w": ["a", "b", None]}).to_parquet(surrogate, index=False)
    try:
        info = hook.publish(surrogate, table, comment={"astrid_release": "r1"})
        assert info["rows"] == 3
        out = tmp_path / "back.parquet"
        hook.read_to_parquet(out, table=table)
        back = pd.read_parquet(out)
        assert back["v"].tolist() == [1, 2, 3] and str(back["v"].dtype) == "int64"
    finally:
        with hook.get_conn() as conn:
            conn.cursor().execute(f"DROP TABLE IF EXISTS {table}")
            conn.commit()
