"""PostgreSQL in and out (``astrid_airflow.io._sql``), against a real server.

The server comes from ``scripts/ci_postgres.sh start`` (``$ASTRID_TEST_POSTGRES_URL``,
or the URL file it writes). Without one these tests skip, except under CI (``$CI``
set), where a missing server fails them. Every test works in its own schema, dropped
afterwards.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.postgres

STATE_URL = Path(os.environ.get("ASTRID_PG_STATE", f"/tmp/astrid-ci-postgres-{os.getuid()}")) \
    / "url"


def postgres_url() -> str:
    """The test server's URL, or skip (fail under CI) with the reason.

    A server that ``scripts/ci_postgres.sh`` started but that has stopped since (CI saw
    it vanish once between modules, cause unknown) is started again once, on the same
    data and port, with a warning that carries the end of its log: a death is reported,
    and the product's tests still run against a server.
    """
    url = os.environ.get("ASTRID_TEST_POSTGRES_URL", "").strip()
    if not url and STATE_URL.is_file():
        url = STATE_URL.read_text().strip()
    reason = None
    if not url:
        reason = ("no PostgreSQL server: run `source scripts/ci_postgres.sh start` (sets "
                  "ASTRID_TEST_POSTGRES_URL)")
    else:
        reason = _unreachable(url)
        if reason and STATE_URL.is_file() and not _REVIVED:
            _REVIVED.append(url)
            out = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "ci_postgres.sh"),
                                  "revive"], capture_output=True, text=True, timeout=120)
            if not _unreachable(url):
                import warnings

                warnings.warn(f"the PostgreSQL server had stopped ({reason}); started it "
                              f"again:\n{out.stderr[-3000:]}", stacklevel=2)
                return url
            reason += f"; starting it again failed:\n{out.stderr[-3000:]}"
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the PostgreSQL server: {reason}")
        pytest.skip(reason)
    return url


REPO_ROOT = Path(__file__).resolve().parents[2]
_REVIVED: list[str] = []  # once per session: a server that keeps dying is a failure


def _unreachable(url: str) -> str | None:
    """Why ``url`` cannot be connected to, or None."""
    try:
        import psycopg

        psycopg.connect(url, connect_timeout=5).close()
    except Exception as exc:
        return f"PostgreSQL server at {url} not reachable: {exc}"
    return None


class Pg:
    """A test schema in the test database, with small helpers."""

    def __init__(self, url: str, schema: str):
        self.url, self.schema = url, schema

    def table_url(self, name: str) -> str:
        return f"{self.url}?table={self.schema}.{name}"

    def run(self, sql: str, params=None) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"SET search_path TO {self.schema}, public")
            conn.execute(sql, params)

    def rows(self, sql: str, params=None) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"SET search_path TO {self.schema}, public")
            return conn.execute(sql, params).fetchall()

    def column_types(self, name: str) -> list[tuple[str, str]]:
        return self.rows("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                         "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
                         "ORDER BY attnum", (f"{self.schema}.{name}",))

    def leftovers(self) -> list[str]:
        """Staging or backup tables of the publisher still lying around (must be none)."""
        return [r[0] for r in self.rows(
            "SELECT relname FROM pg_class WHERE relname LIKE '%%\\_\\_astrid\\_%%'")]


@pytest.fixture(scope="module")
def server_url() -> str:
    return postgres_url()


@pytest.fixture
def pg(server_url):
    schema = f"t_{uuid.uuid4().hex[:10]}"
    db = Pg(server_url, schema)
    db.run(f"CREATE SCHEMA {schema}")
    yield db
    db.run(f"DROP SCHEMA {schema} CASCADE")


# A table with every supported type, NULLs in every attribute, two classes.
TYPED_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'unused');
CREATE TYPE label AS ENUM ('no', 'yes');
CREATE TABLE typed (
    n_small smallint, n_int integer, n_big bigint, x_real real, x_double double precision,
    x_num numeric(10,2), label_text text, code varchar(8), fixed char(3), m mood,
    flag boolean, day date, at timestamp, at_tz timestamptz, span interval, t time,
    class label NOT NULL)
"""


def fill_typed(pg: Pg, n: int = 80, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        null = i % 9 == 0  # every attribute NULL on some rows
        rows.append(None if null else v for v in (
            int(rng.integers(-300, 300)), int(rng.integers(-10**6, 10**6)),
            int(rng.integers(-10**12, 10**12)), float(np.float32(rng.normal())),
            float(rng.normal()), Decimal(int(rng.integers(-10**6, 10**6))) / 100,
            f"text {i % 7}", f"c{i % 5}", "ab", ["sad", "ok", "happy"][i % 3], bool(i % 2),
            dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.datetime(2024, 1, 1, 12) + dt.timedelta(minutes=7 * i, microseconds=i),
            dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=i),
            dt.timedelta(days=i % 4, seconds=i), dt.time(i % 24, i % 60)))
    import psycopg

    with psycopg.connect(pg.url) as conn, conn.cursor() as cur:
        cur.execute(f"SET search_path TO {pg.schema}")
        with cur.copy("COPY typed FROM STDIN") as cp:
            for i, row in enumerate(rows):
                cp.write_row((*row, "yes" if i % 2 else "no"))


@pytest.fixture
def typed(pg):
    pg.run(TYPED_DDL)
    fill_typed(pg)
    return pg


# --------------------------------------------------------------------------- reading

def test_read_maps_every_type_faithfully(typed):
    import pyarrow as pa

    from astrid_airflow.io._sql_read import read_sql, read_sql_arrow
    from astrid_airflow.io._sql_types import SQL_METADATA_KEY

    table = read_sql_arrow(typed.table_url("typed"))
    got = {f.name: f.type for f in table.schema}
    assert got == {
        "n_small": pa.int16(), "n_int": pa.int32(), "n_big": pa.int64(),
        "x_real": pa.float32(), "x_double": pa.float64(), "x_num": pa.float64(),
        "label_text": pa.string(), "code": pa.string(), "fixed": pa.string(),
        "m": pa.dictionary(pa.int32(), pa.string()), "flag": pa.bool_(),
        "day": pa.date32(), "at": pa.timestamp("us"), "at_tz": pa.timestamp("us", tz="UTC"),
        "span": pa.duration("us"), "t": pa.time64("us"),
        "class": pa.dictionary(pa.int32(), pa.string())}
    assert table.num_rows == 80
    meta = json.loads(table.schema.metadata[SQL_METADATA_KEY])
    types = {c["name"]: c["type"] for c in meta["columns"]}
    assert types["x_num"] == "numeric(10,2)" and types["code"] == "character varying(8)"
    assert types["fixed"] == "character(3)" and types["at_tz"] == "timestamp with time zone"
    assert next(c for c in meta["columns"] if c["name"] == "m")["labels"] == [
        "sad", "ok", "happy", "unused"]
    frame = read_sql(typed.table_url("typed"))
    # enums are categoricals with every label, in declaration order
    assert list(frame["m"].cat.categories) == ["sad", "ok", "happy", "unused"]
    assert list(frame["class"].cat.categories) == ["no", "yes"]
    # NULL is missing in every type (rows 0, 9, 18, ... have NULL attributes)
    nulls = typed.rows("SELECT count(*) FROM typed WHERE n_int IS NULL")[0][0]
    assert all(int(frame[c].isna().sum()) == nulls for c in frame.columns if c != "class")
    # values: exact numbers, timestamps to the microsecond, time zones in UTC
    db = typed.rows("SELECT x_num, at, at_tz FROM typed WHERE x_num IS NOT NULL "
                    "ORDER BY x_num LIMIT 1")[0]
    row = frame.loc[frame["x_num"] == float(db[0])].iloc[0]
    assert Decimal(str(float(row["x_num"]))) == db[0]
    assert row["at"] == pd.Timestamp(db[1]) and row["at_tz"] == pd.Timestamp(db[2])


def test_parquet_staging_equals_the_direct_read_and_is_chunked(typed, tmp_path):
    import pyarrow.parquet as pq

    from astrid_airflow.io._sql_read import read_sql, sql_to_parquet

    info = sql_to_parquet(typed.table_url("typed"), tmp_path / "t.parquet", chunk_rows=25)
    assert info["rows"] == 80 and "astrid:" not in info["source"].split("@")[0][-4:]
    assert pq.ParquetFile(tmp_path / "t.parquet").num_row_groups == 4  # 25+25+25+5
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"),
                                  read_sql(typed.table_url("typed")))


def test_a_table_is_read_in_the_same_order_whatever_its_physical_order(typed):
    from astrid_airflow.io._sql_read import read_sql
    from astrid_airflow.release._table_schema import fingerprint_table

    before = read_sql(typed.table_url("typed"))
    # rewrite some rows: they move to the end of the heap
    typed.run("UPDATE typed SET n_small = n_small WHERE n_int % 3 = 0")
    after = read_sql(typed.table_url("typed"), chunk_rows=7)
    pd.testing.assert_frame_equal(before, after)
    assert fingerprint_table(before) == fingerprint_table(after)
    # with a primary key, rows come in key order
    typed.run("CREATE TABLE keyed (id int PRIMARY KEY, v text)")
    typed.run("INSERT INTO keyed VALUES (3, 'c'), (1, 'a'), (2, 'b')")
    assert list(read_sql(typed.table_url("keyed"))["v"]) == ["a", "b", "c"]


def test_a_query_is_read_as_written(typed):
    from urllib.parse import quote

    from astrid_airflow.io._io import read_table

    query = (f"SELECT n_int % 2 AS parity, m, class FROM {typed.schema}.typed "
             "WHERE m IS NOT NULL ORDER BY n_int DESC")
    frame = read_table(f"{typed.url}?query={quote(query)}")
    expected = typed.rows(f"SELECT n_int % 2, m::text FROM {typed.schema}.typed "
                          "WHERE m IS NOT NULL ORDER BY n_int DESC")
    assert list(zip(frame["parity"], frame["m"].astype(str))) == expected
    assert list(frame["m"].cat.categories) == ["sad", "ok", "happy", "unused"]


def test_unsupported_types_are_named(pg):
    from astrid_airflow._errors import DataError
    from astrid_airflow.io._sql_read import read_sql

    pg.run("CREATE TABLE odd (a int, doc jsonb, tags text[], class text)")
    with pytest.raises(DataError, match=r"doc \(jsonb\), tags \(text\[\]\)"):
        read_sql(pg.table_url("odd"))


# ------------------------------------------------------------------------ publishing

def per_class_multisets_match(pg: Pg, a: str, b: str, columns: list[str]) -> bool:
    """Every listed column (or column tuple) has the same multiset per class in a and b."""
    cols = ", ".join(columns)
    diff = pg.rows(f"(SELECT class, {cols} FROM {a} EXCEPT ALL SELECT class, {cols} FROM {b})"
                   f" UNION ALL (SELECT class, {cols} FROM {b} EXCEPT ALL "
                   f"SELECT class, {cols} FROM {a})")
    return diff == []


def test_types_round_trip_through_shuffle_and_publish(typed):
    from astrid_airflow.release import shuffle_table

    attrs = [c for c, _ in typed.column_types("typed") if c != "class"]
    groups = [attrs[:3], attrs[3:9], attrs[9:]]
    grouping = ";".join(",".join(g) for g in groups)
    info = shuffle_table(typed.table_url("typed"), grouping, typed.table_url("surrogate"),
                         target="class", random_state=7)
    assert info["rows"] == 80 and not info["replaced"]
    # the published table has exactly the source's column types
    assert typed.column_types("surrogate") == typed.column_types("typed")
    # GoldenEye: per class, every column keeps its values (exactly: numeric, timestamps,
    # intervals...) and the columns of a group stay together
    for column in attrs:
        assert per_class_multisets_match(typed, "typed", "surrogate", [column]), column
    for group in groups:
        assert per_class_multisets_match(typed, "typed", "surrogate", group), group
    # ...while whole rows were shuffled
    intact = typed.rows("SELECT count(*) FROM (SELECT * FROM typed INTERSECT ALL "
                        "SELECT * FROM surrogate) x")[0][0]
    assert intact < 40
    assert typed.leftovers() == []


def test_publish_creates_missing_enum_types_and_maps_arrow_types(pg):
    import pyarrow as pa

    from astrid_airflow.io._sql_publish import publish_table
    from astrid_airflow.io._sql_types import SQL_METADATA_KEY

    meta = {"dialect": "postgresql", "columns": [
        {"name": "colour", "type": f"{pg.schema}.colour", "kind": "enum",
         "labels": ["red", "it's green"]}]}
    table = pa.table({"colour": pa.array(["it's green", None, "red"]),
                      "n": pa.array([1, None, 3], pa.int64()),
                      "x": pa.array([0.5, float("nan"), None])},
                     ).replace_schema_metadata({SQL_METADATA_KEY: json.dumps(meta)})
    info = publish_table(table, pg.table_url("colours"))
    assert info["enum_types_created"] == [f"{pg.schema}.colour"]
    assert pg.column_types("colours") == [("colour", "colour"), ("n", "bigint"),
                                          ("x", "double precision")]
    assert pg.rows("SELECT enum_range(NULL::colour)::text[]")[0][0] == ["red", "it's green"]
    assert sorted(pg.rows("SELECT colour::text, n, x FROM colours"), key=str) == sorted(
        [("it's green", 1, 0.5), (None, None, None), ("red", 3, None)], key=str)


def test_republish_keeps_grants_and_records_the_release(typed, tmp_path):
    from astrid_airflow.io._sql_publish import publish_table
    from astrid_airflow.io._sql_read import sql_to_parquet

    staged = tmp_path / "s.parquet"
    sql_to_parquet(typed.table_url("typed"), staged)
    publish_table(staged, typed.table_url("out"), comment={"release": "r1"})
    typed.run("GRANT SELECT ON out TO PUBLIC")
    info = publish_table(staged, typed.table_url("out"), comment={"release": "r2"})
    assert info["replaced"] and info["grants_copied"] == 1
    acl = typed.rows("SELECT relacl::text FROM pg_class WHERE oid = 'out'::regclass")[0][0]
    assert "=r/" in acl  # PUBLIC SELECT on the new release too
    comment = typed.rows("SELECT obj_description('out'::regclass)")[0][0]
    assert json.loads(comment) == {"release": "r2"}


def test_readers_never_see_a_missing_or_partial_table_during_republishing(pg):
    """A reader polls count(*) and the release column while the table is republished."""
    import psycopg

    from astrid_airflow.io._sql_publish import publish_table

    n = 20_000

    def release(i: int) -> pd.DataFrame:
        # each release has its own size, so a partial load would show as a wrong count
        return pd.DataFrame({"release": np.full(n + i, i, dtype=np.int32),
                             "x": np.arange(n + i, dtype=float)})

    publish_table(release(0), pg.table_url("live"))
    seen, errors, waits = [], [], []
    stop = threading.Event()

    def poll() -> None:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    seen.append(conn.execute(
                        f"SELECT count(*), min(release), max(release) FROM {pg.schema}.live"
                    ).fetchone())
                except psycopg.Error as exc:  # e.g. UndefinedTable: must never happen
                    errors.append(repr(exc))
                waits.append(time.perf_counter() - started)

    reader = threading.Thread(target=poll)
    reader.start()
    try:
        swaps = []
        for i in range(1, 6):
            time.sleep(0.05)
            swaps.append(publish_table(release(i), pg.table_url("live"))["swap_seconds"])
        time.sleep(0.05)
    finally:
        stop.set()
        reader.join(timeout=60)
    assert errors == []
    assert len(seen) > 50
    for count, low, high in seen:
        assert low == high and count == n + low, (count, low, high)  # one complete release
    observed = [s[1] for s in seen]
    assert observed == sorted(observed)  # never back to an older release
    assert len(set(observed)) >= 3  # the polling really spanned several swaps
    assert observed[-1] == 5
    print(f"\n{len(seen)} reads during 5 republishes of {n} rows; slowest read "
          f"{max(waits) * 1000:.1f} ms; swaps {[round(s * 1000, 1) for s in swaps]} ms")


def test_a_long_reader_makes_the_swap_time_out_and_leaves_the_table_alone(pg):
    import psycopg

    from astrid_airflow.io._sql import SqlPublishError
    from astrid_airflow.io._sql_publish import publish_table

    publish_table(pd.DataFrame({"v": [1, 2]}), pg.table_url("busy"))
    with psycopg.connect(pg.url) as reader:  # a transaction holding ACCESS SHARE
        reader.execute(f"SELECT count(*) FROM {pg.schema}.busy").fetchone()
        started = time.perf_counter()
        with pytest.raises(SqlPublishError, match="lock timeout") as err:
            publish_table(pd.DataFrame({"v": [7, 8, 9]}), pg.table_url("busy"),
                          lock_timeout=0.5)
        assert 0.4 < time.perf_counter() - started < 10
        assert err.value.transient
        assert reader.execute(f"SELECT sum(v) FROM {pg.schema}.busy").fetchone()[0] == 3
    assert pg.rows("SELECT sum(v) FROM busy")[0][0] == 3 and pg.leftovers() == []


# ---------------------------------------------------------------------- bad inputs

def test_bad_connection_details_give_clear_errors_and_publish_nothing(pg, server_url):
    from sqlalchemy.engine import make_url

    from astrid_airflow._errors import DataError
    from astrid_airflow.io._sql import SqlConnectionError
    from astrid_airflow.io._sql_publish import publish_table
    from astrid_airflow.io._sql_read import read_sql

    publish_table(pd.DataFrame({"v": [1]}), pg.table_url("kept"))
    url = make_url(server_url)
    bad_password = url.set(password="not-the-password").render_as_string(hide_password=False)
    with pytest.raises(SqlConnectionError, match="password authentication failed") as err:
        publish_table(pd.DataFrame({"v": [2]}), f"{bad_password}?table={pg.schema}.kept")
    assert not err.value.transient and "not-the-password" not in str(err.value)
    with pytest.raises(SqlConnectionError, match=r"nope_db.*does not exist"):
        read_sql(url.set(database="nope_db").render_as_string(hide_password=False)
                 + "?table=t")
    closed = url.set(port=1).render_as_string(hide_password=False)
    with pytest.raises(SqlConnectionError, match="Connection refused") as err:
        read_sql(f"{closed}?table=t")
    assert err.value.transient
    with pytest.raises(DataError, match=rf"No table '{pg.schema}.missing'"):
        read_sql(pg.table_url("missing"))
    with pytest.raises(DataError, match="division by zero"):
        read_sql(f"{server_url}?query=SELECT 1/0 AS x")
    assert pg.rows("SELECT v FROM kept") == [(1,)] and pg.leftovers() == []


def test_a_failing_load_or_swap_publishes_nothing(pg):
    from astrid_airflow._errors import DataError, StoreError
    from astrid_airflow.io._sql import SqlPublishError
    from astrid_airflow.io._sql_publish import publish_table

    publish_table(pd.DataFrame({"v": [1, 2]}), pg.table_url("kept"))
    pg.run("CREATE TABLE shape (v integer)")
    with pytest.raises(DataError, match=r"integer column but holds 1\.5"):
        publish_table(pd.DataFrame({"v": [1.0, 1.5]}), pg.table_url("kept"),
                      like=f"{pg.schema}.shape")
    with pytest.raises(SqlPublishError, match="invalid input syntax"):
        publish_table(pd.DataFrame({"v": ["3", "x"]}), pg.table_url("kept"),
                      like=f"{pg.schema}.shape")

    def boom(cur, staging):
        raise RuntimeError("injected after the load")

    with pytest.raises(RuntimeError, match="injected"):
        publish_table(pd.DataFrame({"v": [5]}), pg.table_url("kept"), before_swap=boom)
    pg.run("CREATE VIEW kept_view AS SELECT * FROM kept")
    with pytest.raises(SqlPublishError, match="depend on the published table"):
        publish_table(pd.DataFrame({"v": [6]}), pg.table_url("kept"))
    pg.run("DROP VIEW kept_view")
    with pytest.raises(StoreError, match="Refusing to overwrite existing table"):
        publish_table(pd.DataFrame({"v": [8]}), pg.table_url("kept"), replace=False)
    pg.run("CREATE VIEW a_view AS SELECT 1 AS v")
    with pytest.raises(DataError, match="not a table"):
        publish_table(pd.DataFrame({"v": [7]}), pg.table_url("a_view"))
    assert pg.rows("SELECT v FROM kept ORDER BY v") == [(1,), (2,)]
    assert pg.leftovers() == []


@pytest.mark.parametrize("bad, message", [
    ("postgresql://h/db", "No table or query"),
    ("postgresql://h/db?table=a&query=SELECT%201", "not both"),
    ("postgresql://h/db?table=a.b.c", "Invalid table name"),
    ("postgresql://h?table=t", "no database name"),
    ("mysql://h/db?table=t", "Invalid database URL"),
])
def test_bad_urls_are_named(bad, message):
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.io._sql import sql_source

    with pytest.raises(ParameterError, match=message):
        sql_source(bad)


# ------------------------------------------------------------------------------ CLI

def test_cli_learns_from_a_postgres_url(pg, tmp_path):
    from astrid_airflow import make_synthetic
    from astrid_airflow.io._sql_publish import publish_table

    publish_table(make_synthetic(n_per_class=100, random_state=0), pg.table_url("ref"))
    cli = [sys.executable, "-m", "astrid_airflow.cli"]
    out = subprocess.run([*cli, "learn", pg.table_url("ref"), "--target", "class",
                          "--r-search", "5", "--r-test", "10", "--seed", "0", "--json",
                          "--quiet", "--store", str(tmp_path / "store"), "--name", "ref"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["artefact"]["version"] == "v0001" and result["target"] == "class"
    bad = subprocess.run([*cli, "learn", pg.table_url("nope"), "--target", "class"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "No table" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
