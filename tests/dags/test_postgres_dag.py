"""The operators and the PostgreSQL DAG against a real server.

``astrid_publish_postgres`` runs end to end with ``dag.test()`` (temporary SQLite
metadata DB): demo table (the bundled diabetes data) → artefact → remedied shuffle →
default gate → surrogate table published in the same database; a failed gate leaves it
untouched; bad connections and missing tables fail clearly and publish nothing. The
server comes from ``scripts/ci_postgres.sh``; without it these tests skip, except under
CI where they fail (see ``test_sql.py``).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import time
import types

import pytest
from astrid_airflow.operators._compat import AirflowException, AirflowFailException
from conftest import REPO

from tests.io.test_sql import postgres_url

pytestmark = [pytest.mark.postgres,
              pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")]

DAG_FILE = REPO / "dags" / "astrid_publish_postgres.py"
DAG_ID = "astrid_publish_postgres"
CONN = "astrid_postgres"
TABLES = ("astrid_diabetes", "astrid_diabetes_surrogate")
SURROGATE = "public.astrid_diabetes_surrogate"
BATCH_TYPES = [("preg", "smallint"), ("plas", "integer"), ("pres", "integer"),
               ("skin", "integer"), ("insu", "integer"), ("mass", "numeric(4,1)"),
               ("pedi", "double precision"), ("age", "smallint"),
               ("class", "astrid_diabetes_class")]


def rows(url: str, sql: str, params=None) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def run(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql)


def column_types(url: str, table: str) -> list[tuple[str, str]]:
    return rows(url, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
                "ORDER BY attnum", (table,))


def table_state(url: str, table: str) -> tuple:
    """OID, comment and a content hash: what a reader of the release would see."""
    return rows(url, f"SELECT '{table}'::regclass::oid, obj_description('{table}'::regclass),"
                f" (SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t)")[0]


def states(dr) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dr.get_task_instances()}


def xcoms(dr) -> dict[tuple[str, str], object]:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        found = session.scalars(XComModel.get_many(run_id=dr.run_id, dag_ids=dr.dag_id)).all()
        return {(r.task_id, r.key): XComModel.deserialize_value(r) for r in found}


@pytest.fixture(scope="module")
def server_url() -> str:
    return postgres_url()


@pytest.fixture(scope="module")
def conn_env(server_url):
    """The Airflow connection ``astrid_postgres`` (and two broken ones) as env variables."""
    from sqlalchemy.engine import make_url

    url = make_url(server_url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(f"AIRFLOW_CONN_{CONN.upper()}", server_url)
        mp.setenv("AIRFLOW_CONN_ASTRID_BAD_PASSWORD",
                  url.set(password="wrong-secret").render_as_string(hide_password=False))
        mp.setenv("AIRFLOW_CONN_ASTRID_CLOSED_PORT",
                  url.set(port=1).render_as_string(hide_password=False))
        yield server_url


def drop_demo_tables(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS public.{table}")
        conn.execute("DROP TYPE IF EXISTS public.astrid_diabetes_class")


@pytest.fixture(scope="module")
def demo(tmp_path_factory, airflow_db, conn_env):
    from airflow.dag_processing.dagbag import DagBag

    drop_demo_tables(conn_env)
    root = tmp_path_factory.mktemp("astrid_pg_demo")
    # kept set for the module, as in test_dags: dag.test() re-parses dags/ into the DB,
    # and the Assets there must be the ones the tasks emit to (else "inactive asset")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASTRID_DEMO_ROOT", str(root))
        # a table is published from a signed receipt only (the original is a table, so
        # publish cannot gate the file again itself): the deployment has a key
        mp.setenv("ASTRID_SIGNING_KEY", "pg-dag-test-key-0123456789abcdef")
        bag = DagBag(dag_folder=str(DAG_FILE))
        assert bag.import_errors == {}
        yield types.SimpleNamespace(root=root, dag=bag.dags[DAG_ID], url=conn_env)
    drop_demo_tables(conn_env)


@pytest.fixture(scope="module")
def first_run(demo):
    started = time.perf_counter()
    dr = demo.dag.test(run_conf={"seed": 1})
    return types.SimpleNamespace(dr=dr, seconds=time.perf_counter() - started)


@pytest.fixture(scope="module")
def failed_run(demo, first_run):
    before = table_state(demo.url, SURROGATE)
    started = time.perf_counter()
    # an attack's upper 95 % bound is above 0 for any release: the gate (only) fails
    # (a release with synthesised groups may keep no intact row at all)
    dr = demo.dag.test(run_conf={"seed": 2, "max_singling_out_risk": 0.0})
    return types.SimpleNamespace(dr=dr, before=before, seconds=time.perf_counter() - started)


# ------------------------------------------------------------------------- parsing

def test_the_dag_parses_quickly_without_touching_the_database(tmp_path):
    code = textwrap.dedent(f"""
        import json, sys, time
        from airflow.dag_processing.dagbag import DagBag
        started = time.perf_counter()
        bag = DagBag(dag_folder={str(DAG_FILE)!r})
        seconds = time.perf_counter() - started
        heavy = [m for m in ("psycopg", "sklearn", "great_expectations", "pyarrow.parquet",
                             "astrid_airflow.io._sql", "astrid_airflow.engine._search")
                 if m in sys.modules]
        dag = bag.dags["{DAG_ID}"]
        print(json.dumps({{"errors": len(bag.import_errors), "seconds": seconds,
                          "heavy": heavy, "tasks": [t.task_id for t in dag.topological_sort()],
                          "destination": dag.params["destination"]}}))
    """)
    env = {"PATH": "/usr/bin:/bin", "AIRFLOW_HOME": str(tmp_path / "home"),
           "ASTRID_DEMO_ROOT": str(tmp_path / "demo")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=180)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["errors"] == 0 and report["heavy"] == []
    assert report["tasks"] == ["demo_tables", "learn_if_changed", "shuffle", "gate", "publish"]
    assert report["destination"] == f"conn://{CONN}/{SURROGATE}"
    assert report["seconds"] < 3, report


# --------------------------------------------------------------------- dag.test()

@pytest.mark.airflow
@pytest.mark.e2e
def test_dag_runs_end_to_end_and_publishes_a_gated_surrogate_table(demo, first_run):
    from astrid_airflow import (
        GatePolicy,
        Grouping,
        ReleaseRecipe,
        load_artefact,
        read_table,
        validate_surrogate,
    )
    from astrid_airflow.release import remedied

    dr = first_run.dr
    assert str(dr.state) == "success", states(dr)
    url, batch = demo.url, "public.astrid_diabetes"
    # the surrogate table sits next to its source, with the source's column types
    assert column_types(url, batch) == BATCH_TYPES
    assert column_types(url, SURROGATE) == BATCH_TYPES
    assert rows(url, f"SELECT count(*) FROM {SURROGATE}") == [(768,)]
    values = xcoms(dr)
    assert values[("learn_if_changed", "learned")] is True
    # a remedied release chosen under the default policy (issue 17), not a raw one
    artefact, _ = load_artefact(f"{demo.root}/artefacts/postgres_diabetes@v0001")
    assert artefact.release["status"] == "chosen"
    assert artefact.release["policy"] == GatePolicy().to_dict()
    recipe = artefact.release["recipe"]
    assert recipe["steps"]
    # GoldenEye per class: each group of the release keeps its multiset of (remedied)
    # values: the published table against the batch put into the release's domain
    groups = Grouping.parse(values[("learn_if_changed", "grouping")]).groups
    assert len(groups) > 1
    # (the recipe's values, then local suppression of the batch's rare tuples)
    domain = remedied(read_table(f"{url}?table={batch}"), ReleaseRecipe.from_dict(recipe),
                      "class", groups)
    published = read_table(f"{url}?table={SURROGATE}")
    for group in groups:
        cols = ["class", *group]

        def multiset(frame, cols=cols):
            text = frame[cols].astype(object).where(frame[cols].notna(), "<missing>")
            return sorted(map(tuple, text.astype(str).to_numpy().tolist()))

        assert multiset(published) == multiset(domain), group
    # the comment names the release and the exact bytes the gate passed
    comment = json.loads(rows(url, f"SELECT obj_description('{SURROGATE}'"
                                   "::regclass)")[0][0])
    staged = values[("gate", "surrogate")].removeprefix("file://")
    digest = hashlib.sha256(open(staged, "rb").read()).hexdigest()
    # the table holds the canonical form of the gated bytes (issue 29): the comment and
    # the manifest name its digest, the manifest also the staged file's
    manifest = json.loads(open(values[("publish", "manifest")].removeprefix("file://")).read())
    assert comment["sha256"] == values[("publish", "sha256")] == manifest["sha256"]
    assert manifest["staged_sha256"] == digest
    assert values[("publish", "table")] == SURROGATE
    assert values[("shuffle", "original")] == f"conn://{CONN}/{batch}"
    # the gated file passes the gate again, with the original read straight from the DB
    check = validate_surrogate(f"{url}?table={batch}", staged,
                               f"{demo.root}/artefacts/postgres_diabetes@v0001",
                               out_dir=str(demo.root / "recheck"), random_state=0)
    assert check.success, check.failed
    assert check.policy == GatePolicy()
    # no secret in any XCom
    password = url.split("://", 1)[1].split("@")[0].split(":")[1]
    for key, value in values.items():
        assert f":{password}@" not in json.dumps(value), key
    print(f"\nfirst PostgreSQL DAG run: {first_run.seconds:.1f} s")


@pytest.mark.airflow
@pytest.mark.e2e
def test_failed_gate_leaves_the_published_table_untouched(demo, failed_run):
    dr = failed_run.dr
    got = states(dr)
    assert str(dr.state) == "failed"
    assert got["gate"] == "failed" and got["publish"] == "upstream_failed", got
    assert got["demo_tables"] == got["learn_if_changed"] == got["shuffle"] == "success"
    assert xcoms(dr)[("learn_if_changed", "learned")] is False  # unchanged reference
    assert table_state(demo.url, SURROGATE) == failed_run.before
    print(f"\nsecond run (no learning, gate fails): {failed_run.seconds:.1f} s")


@pytest.mark.airflow
@pytest.mark.e2e
def test_a_missing_connection_or_table_fails_the_run_and_publishes_nothing(demo, first_run):
    before = table_state(demo.url, SURROGATE)
    dr = demo.dag.test(run_conf={"seed": 3, "batch": f"conn://{CONN}/public.no_such_table"})
    got = states(dr)
    assert got["shuffle"] == "failed" and got["publish"] == "upstream_failed", got
    dr = demo.dag.test(run_conf={"seed": 4,
                                 "reference": "conn://astrid_undefined/public.astrid_diabetes"})
    got = states(dr)
    assert got["learn_if_changed"] == "failed" and got["publish"] == "upstream_failed", got
    assert table_state(demo.url, SURROGATE) == before


# -------------------------------------------------------------------- operators

def ctx(task_id: str, **extra) -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id="manual__pg", task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": "manual__pg", **extra}


def shuffle_op(table: str, tmp_path):
    from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

    return GoldenEyeShuffleOperator(task_id="shuffle", table=table, store=str(tmp_path / "s"),
                                    artefact="x@v0001", out=str(tmp_path / "out.parquet"),
                                    random_state=0)


def test_operators_name_bad_connections_and_missing_tables(conn_env, tmp_path):
    from astrid_airflow.operators.learn import AstridLearnOperator

    def learn(reference: str):
        return AstridLearnOperator(task_id="learn", reference=reference,
                                   store=str(tmp_path / "store"), name="x", n_search=2,
                                   n_test=2).execute(ctx("learn"))

    with pytest.raises(AirflowFailException, match="password authentication failed") as err:
        learn("conn://astrid_bad_password/public.t")
    assert "wrong-secret" not in str(err.value)
    # a server that does not answer may come back: retryable, not a permanent failure
    with pytest.raises(AirflowException, match=r"Connection refused.*will retry") as err:
        learn("conn://astrid_closed_port/public.t")
    assert not isinstance(err.value, AirflowFailException)
    with pytest.raises(AirflowFailException, match="connection 'astrid_nowhere' is not defined"):
        learn("conn://astrid_nowhere/public.t")
    with pytest.raises(AirflowFailException, match=r"No table 'public\.no_such_table'"):
        learn(f"conn://{CONN}/public.no_such_table")
    with pytest.raises(AirflowFailException, match="holds a password"):
        learn(f"{conn_env}?table=public.t")
    with pytest.raises(AirflowFailException, match="one table or one query"):
        shuffle_op(f"conn://{CONN}", tmp_path).execute(ctx("shuffle"))
    assert not (tmp_path / "store").exists() and not (tmp_path / "out.parquet").exists()


def test_publish_refuses_a_failed_receipt_and_leaves_the_table_alone(conn_env, tmp_path):
    import pandas as pd
    from astrid_airflow.operators import _common
    from astrid_airflow.operators.publish import PublishSurrogateOperator

    from astrid_airflow.io._sql_publish import publish_table

    table = f"t_{int(time.time() * 1000) % 10**9}"
    publish_table(pd.DataFrame({"v": [1, 2]}), f"{conn_env}?table=public.{table}")
    try:
        before = table_state(conn_env, f"public.{table}")
        staged = tmp_path / "surrogate.parquet"
        pd.DataFrame({"v": [9]}).to_parquet(staged, index=False)
        receipt = {"success": False, "failed": ["expect_x"], "surrogate": "file://" + str(staged),
                   "sha256": _common.sha256_of(_common.as_path(str(staged), "s"))}
        (tmp_path / "surrogate.gate.json").write_text(json.dumps(receipt))
        op = PublishSurrogateOperator(task_id="publish", surrogate=str(staged),
                                      destination=f"conn://{CONN}/public.{table}")
        with pytest.raises(AirflowFailException, match="FAILED the release gate"):
            op.execute(ctx("publish"))
        receipt["success"] = True
        (tmp_path / "surrogate.gate.json").write_text(json.dumps(receipt))
        staged.write_bytes(staged.read_bytes() + b"x")  # changed after the gate
        with pytest.raises(AirflowFailException, match="not the file the gate passed"):
            op.execute(ctx("publish"))
        assert table_state(conn_env, f"public.{table}") == before
    finally:
        run(conn_env, f"DROP TABLE IF EXISTS public.{table}")


def test_publishing_a_table_is_monotonic_and_idempotent(conn_env, tmp_path, monkeypatch):
    """Clearing an old run's publish, or re-running the current one, leaves the table."""
    import datetime as dt

    import pandas as pd
    from airflow.sdk import Asset
    from airflow.sdk.execution_time.context import OutletEventAccessors
    from astrid_airflow.operators import _common
    from astrid_airflow.operators._compat import AirflowSkipException
    from astrid_airflow.operators.publish import PublishSurrogateOperator

    from astrid_airflow.release import seal_receipt

    key = "monotonic-test-key-0123456789abcdef"
    monkeypatch.setenv("ASTRID_SIGNING_KEY", key)  # a table trusts signed receipts only
    table = f"t_{int(time.time() * 1000) % 10**9}"
    staged = tmp_path / "surrogate.parquet"
    pd.DataFrame({"v": [1, 2, 3]}).to_parquet(staged, index=False)
    receipt = {"success": True, "surrogate": "file://" + str(staged),
               "sha256": _common.sha256_of(_common.as_path(str(staged), "s")), "policy": {}}
    receipt = seal_receipt(receipt, stem="surrogate", artefact_sha256=None, suite_sha256=None,
                           gate_files={}, key=key.encode())
    (tmp_path / "surrogate.gate.json").write_text(json.dumps(receipt))

    def publish(run_id: str, run_after: str, **kw):
        events = OutletEventAccessors()
        asset = Asset(name="rel", uri="file:///release")
        op = PublishSurrogateOperator(task_id="publish", surrogate=str(staged),
                                      destination=f"conn://{CONN}/public.{table}",
                                      outlets=[asset], **kw)
        ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id="publish", map_index=-1)
        run = types.SimpleNamespace(run_after=dt.datetime.fromisoformat(run_after))
        try:
            out = op.execute({"ti": ti, "run_id": run_id, "outlet_events": events,
                              "dag_run": run})
        except AirflowSkipException:
            out = None
        return out, dict(events._dict)

    day1, day2 = "2026-01-02T00:00:00+00:00", "2026-01-02T10:00:00+00:00"
    try:
        assert publish("old", day1)[0] and publish("new", day2)[0]
        before = table_state(conn_env, f"public.{table}")
        assert json.loads(before[1])["astrid_release"] == "new"
        for run_id, run_after in (("old", day1), ("new", day2)):  # clear old; re-run current
            out, events = publish(run_id, run_after)
            assert out is None and events == {}
            assert table_state(conn_env, f"public.{table}") == before  # same OID: no swap
        out, events = publish("old", day1, force=True)  # a deliberate rollback
        assert out["release_id"] == "old" and len(events) == 1
        assert json.loads(table_state(conn_env, f"public.{table}")[1])["astrid_release"] == "old"
    finally:
        run(conn_env, f"DROP TABLE IF EXISTS public.{table}")
