"""Airflow connections for every external thing: store, tables, release destinations.

The operators take ``store_conn_id`` (an ``astrid`` connection, or the object-storage
connection of the ``store`` URL) and ``<table>_conn_id`` (a common.sql database
connection in which the argument is a table or query). The legacy ``conn://CONN_ID/...``
strings and ``s3://CONN_ID@bucket`` URLs keep working and mean the same thing.
"""

from __future__ import annotations

import json
import sqlite3
import types

import pandas as pd
import pytest
from airflow.sdk import ObjectStoragePath
from astrid_airflow.operators import _common
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.hooks import AstridStoreHook, store_conn_fields
from astrid_airflow.operators.sql import TableRef, as_table

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")

REFERENCE = bundled_table("synthetic.csv")
BATCH = bundled_table("synthetic_batch.csv")
PERMISSIVE = {"max_intact": "0.01", "max_accuracy_drop": 0.03, "max_share_below_k": 1,
              "max_class_disclosure_share": 1, "max_largest_group_unique_share": "1.0",
              "max_singling_out_risk": 1, "max_inference_risk": "1.0",
              "max_class_from_one_column_risk": 1}


def ctx(task_id: str, run_id: str = "manual__1") -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": run_id}


@pytest.fixture
def conns(tmp_path, monkeypatch):
    """``astrid_lite`` (SQLite with the reference and batch tables), ``astrid_store``."""
    db = tmp_path / "astrid.db"
    with sqlite3.connect(db) as conn:
        pd.read_csv(REFERENCE).to_sql("reference", conn, index=False)
        pd.read_csv(BATCH).to_sql("batch", conn, index=False)
    store = tmp_path / "store"
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_LITE", json.dumps({"conn_type": "sqlite",
                                                               "host": str(db)}))
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_STORE", json.dumps({"conn_type": "astrid",
                                                                "host": str(store)}))
    return types.SimpleNamespace(db=db, store=store, tmp=tmp_path)


@pytest.mark.parametrize(("value", "legacy"), [
    ("public.patients", "conn://astrid_lite/public.patients"),
    ("reference", "conn://astrid_lite/reference"),
    ("SELECT a, b\n FROM t WHERE a > 1", "conn://astrid_lite?query=SELECT%20a%2C%20b%20FROM"
                                         "%20t%20WHERE%20a%20%3E%201"),
    ("  with x as (select 1) select * from x", "conn://astrid_lite?query=with%20x%20as%20"
                                               "%28select%201%29%20select%20%2A%20from%20x"),
])
def test_a_conn_id_and_a_table_name_mean_the_legacy_reference(value, legacy):
    ref = as_table(value, "reference", "astrid_lite")
    old = as_table(legacy, "reference")
    assert isinstance(ref, TableRef)
    assert (ref.conn_id, ref.table, ref.query) == (old.conn_id, old.table, old.query)


def test_a_url_with_a_conn_id_is_an_object_storage_path_of_that_connection():
    path = as_table("s3://bucket/in/table.parquet", "table", "aws_astrid")
    assert isinstance(path, ObjectStoragePath)
    assert _conn_id_of(path) == "aws_astrid"
    assert _conn_id_of(_common.as_path("s3://aws_astrid@bucket/in/t.parquet", "t")) \
        == "aws_astrid"


@pytest.mark.parametrize("bad", ["", "   "])
def test_an_empty_table_with_a_conn_id_is_refused(bad):
    with pytest.raises(AirflowFailException, match="reference"):
        as_table(bad, "reference", "astrid_lite")


def test_store_conn_id_astrid_connection_and_object_storage_connection(conns, monkeypatch):
    path = _common.store_location(None, "astrid_store")
    assert _common.store_url(path) == str(conns.store)
    with pytest.raises(AirflowFailException, match="give one of them"):
        _common.store_location("/elsewhere", "astrid_store")
    with pytest.raises(AirflowFailException, match="not defined"):
        _common.store_location("/x", "no_such_conn")
    monkeypatch.setenv("AIRFLOW_CONN_AWS_ASTRID", json.dumps({"conn_type": "aws"}))
    remote = _common.store_location("s3://bucket/astrid", "aws_astrid")
    assert _conn_id_of(remote) == "aws_astrid"
    assert _common.store_url(remote) == "s3://bucket/astrid"
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_S3STORE", json.dumps(
        {"conn_type": "astrid", "host": "s3://bucket/astrid",
         "extra": {"storage_conn_id": "aws_astrid"}}))
    via = _common.store_location("", "astrid_s3store")
    assert _conn_id_of(via) == "aws_astrid"
    assert _common.store_url(via) == "s3://bucket/astrid"


def test_store_hook_tests_the_connection_and_lists_artefacts(conns, monkeypatch):
    hook = AstridStoreHook(astrid_conn_id="astrid_store")
    ok, message = hook.test_connection()
    assert not ok and "No artefact store" in message  # not created yet
    conns.store.mkdir()
    ok, message = hook.test_connection()
    assert ok and "0 artefact name(s)" in message
    assert hook.list_artefacts() == []
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_EMPTY", json.dumps({"conn_type": "astrid"}))
    ok, message = AstridStoreHook(astrid_conn_id="astrid_empty").test_connection()
    assert not ok and "Store URL" in message
    behaviour = AstridStoreHook.get_ui_field_behaviour()
    assert behaviour["relabeling"] == {"host": "Store URL"}
    assert behaviour == {k.replace("-", "_"): v
                         for k, v in store_conn_fields()["ui-field-behaviour"].items()}


def test_the_whole_release_through_connections(conns, monkeypatch):
    """learn, shuffle, gate, publish with conn ids only: a SQLite database and a store."""
    monkeypatch.setenv("ASTRID_SIGNING_KEY", "connections-test-key-0123456789")  # trusted
    from astrid_airflow.operators.gate import SurrogateGateOperator
    from astrid_airflow.operators.learn import AstridLearnOperator
    from astrid_airflow.operators.publish import PublishSurrogateOperator
    from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

    learn = AstridLearnOperator(task_id="learn", reference="reference",
                                reference_conn_id="astrid_lite", store_conn_id="astrid_store",
                                name="syn", n_search=20, n_test=50, random_state=0,
                                gate_policy=PERMISSIVE, allow_weaker_policy=True,
                                remedies=False)  # a raw release on purpose
    learned = learn.execute(ctx("learn"))
    assert learned["learned"] and (conns.store / "syn").is_dir()
    out = conns.tmp / "staging" / "surrogate.parquet"
    shuffled = GoldenEyeShuffleOperator(
        task_id="shuffle", table="batch", table_conn_id="astrid_lite",
        store_conn_id="astrid_store", artefact=learned["artefact"], out=str(out),
        random_state=1).execute(ctx("shuffle"))
    gated = SurrogateGateOperator(
        task_id="gate", original="batch", original_conn_id="astrid_lite",
        surrogate=shuffled["surrogate"], store_conn_id="astrid_store",
        artefact=shuffled["artefact"], random_state=1,
        allow_weaker_policy=True).execute(ctx("gate"))  # the raw release's policy
    assert gated["success"]
    published = PublishSurrogateOperator(
        task_id="publish", surrogate=shuffled["surrogate"], destination="released",
        destination_conn_id="astrid_lite").execute(ctx("publish"))
    assert published["published"]
    with sqlite3.connect(conns.db) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM released").fetchone()[0]
    assert rows == len(pd.read_csv(BATCH)) == len(pd.read_parquet(out))


def _conn_id_of(path) -> str | None:
    """The connection an ObjectStoragePath opens with (a provider's filesystem, such as
    amazon's S3, keeps it on the path rather than in ``storage_options``)."""
    return getattr(path, "conn_id", None) or path.storage_options.get("conn_id")
