"""
### ASTRID on PostgreSQL: reference table → artefact → shuffle → gate → published table

The same pipeline as `astrid_publish_synthetic`, reading from and publishing to a
PostgreSQL database behind the Airflow connection `astrid_postgres` (set
`$ASTRID_POSTGRES_CONN_ID` to use another one):

0. **demo_tables** creates the demo tables from the bundled data *if they are missing*
   (`public.astrid_reference` and `public.astrid_batch`: `a1 numeric(9,6)`,
   `a2 double precision`, `a3 real`, `a4 double precision`, `class astrid_label` (an
   enum)). Point the params at your own tables and it does nothing.
1. **learn_if_changed** streams the reference table (in primary-key or full-column
   order, so unchanged content means an unchanged fingerprint) and learns a grouping only
   if the table changed.
2. **shuffle** streams the batch table into the run's staging directory and writes the
   GoldenEye surrogate there (a Parquet file that keeps the SQL column types).
3. **gate** validates the staged file against the batch table.
4. **publish** loads the gated file into a staging table with the batch table's column
   types and swaps it in as `public.astrid_surrogate` in one transaction: readers see
   the previous release or the new one, never a missing or half-loaded table. A failed
   gate leaves the published table untouched.

Table params take `conn://CONN_ID/SCHEMA.TABLE` (or `conn://CONN_ID?query=...` for the
inputs). Artefacts and staging live under `$ASTRID_DEMO_ROOT` as in the file DAG.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import DAG, Param, task
from astrid_airflow.operators.assets import artefact_alias, artefact_asset, release_asset
from astrid_airflow.operators.demo import demo_layout
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator
from astrid_airflow.operators.sql import sql_table

from astrid_airflow import raw_release_demo_policy

NAME = "postgres_synthetic"
CONN_ID = os.environ.get("ASTRID_POSTGRES_CONN_ID", "astrid_postgres")
LAYOUT = demo_layout(NAME)
REFERENCE = sql_table(CONN_ID, "public.astrid_reference")
BATCH = sql_table(CONN_ID, "public.astrid_batch")
PUBLISHED = sql_table(CONN_ID, "public.astrid_surrogate")
RELEASE = release_asset(PUBLISHED, NAME)
# As in astrid_publish.py: a raw release, NOT protected against class disclosure; the
# per-group disclosure checks are reported, not enforced (docs/privacy.md, issue 17).
GATE_POLICY = raw_release_demo_policy(max_intact=0.01, max_accuracy_drop=0.03)

with DAG(
    dag_id="astrid_publish_postgres",
    description="Learn (if changed), shuffle, gate and publish a surrogate table in PostgreSQL",
    schedule="@daily",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": dt.timedelta(seconds=30)},
    params={
        "reference": Param(REFERENCE, type="string",
                           description="conn://CONN_ID/SCHEMA.TABLE the grouping is learned on"),
        "batch": Param(BATCH, type="string",
                       description="table to shuffle and publish (same columns)"),
        "destination": Param(PUBLISHED, type="string",
                             description="the published surrogate table"),
        "classifier": Param("svm", enum=["svm", "rf", "nb"]),
        "n_search": Param(20, type="integer", minimum=1, description="R' (paper: 100)"),
        "n_test": Param(50, type="integer", minimum=1, description="R (paper: 250)"),
        "force": Param(False, type="boolean", description="learn even if unchanged"),
        "learn_seed": Param(0, type=["null", "integer"], minimum=0),
        "seed": Param(None, type=["null", "integer"], minimum=0,
                      description="seed of shuffle and gate (null: derived from the run)"),
        "max_intact": Param(None, type=["null", "number"], minimum=0, maximum=1),
        "max_accuracy_drop": Param(None, type=["null", "number"], minimum=0, maximum=1),
        "max_largest_group_unique_share": Param(None, type=["null", "number"], minimum=0,
                                                maximum=1),
        "lock_timeout": Param(30, type="number", exclusiveMinimum=0,
                              description="seconds the swap waits for readers"),
    },
    tags=["astrid", "example", "postgres"],
    doc_md=__doc__,
) as dag:

    @task
    def demo_tables(reference: str, batch: str) -> dict:
        """Create the demo tables from the bundled CSVs when they do not exist yet."""
        from astrid_airflow.operators.demo import bundled_table
        from astrid_airflow.operators.sql import as_table, database_source

        created = {}
        for ref, csv in ((reference, "synthetic.csv"), (batch, "synthetic_batch.csv")):
            table = as_table(ref, "table")
            if table.conn_id != CONN_ID or table.table not in (
                    "public.astrid_reference", "public.astrid_batch"):
                created[str(ref)] = "not a demo table: left alone"
                continue
            created[str(ref)] = _create_demo_table(database_source(table), bundled_table(csv))
        return created

    demo = demo_tables("{{ params.reference }}", "{{ params.batch }}")
    learn = AstridLearnOperator(
        task_id="learn_if_changed",
        reference="{{ params.reference }}",
        store=LAYOUT.store,
        name=NAME,
        classifier="{{ params.classifier }}",
        n_search="{{ params.n_search }}",
        n_test="{{ params.n_test }}",
        random_state="{{ params.learn_seed }}",
        force="{{ params.force }}",
        gate_policy=GATE_POLICY,
        outlets=[artefact_alias(NAME)],
    )
    shuffle = GoldenEyeShuffleOperator(
        task_id="shuffle",
        table="{{ params.batch }}",
        store=LAYOUT.store,
        artefact=learn.output["artefact"],
        out=f"{LAYOUT.staging}/surrogate.parquet",
        random_state="{{ params.seed }}",
        inlets=[artefact_asset(LAYOUT.store, NAME)],
    )
    gate = SurrogateGateOperator(
        task_id="gate",
        original=shuffle.output["original"],
        surrogate=shuffle.output["surrogate"],
        store=LAYOUT.store,
        artefact=shuffle.output["artefact"],
        policy={
            "max_intact": "{{ params.max_intact }}",
            "max_accuracy_drop": "{{ params.max_accuracy_drop }}",
            "max_largest_group_unique_share": "{{ params.max_largest_group_unique_share }}",
        },
        random_state="{{ params.seed }}",
    )
    publish = PublishSurrogateOperator(
        task_id="publish",
        surrogate=gate.output["surrogate"],
        receipt=gate.output["receipt"],
        destination="{{ params.destination }}",
        lock_timeout="{{ params.lock_timeout }}",
        outlets=[RELEASE],
    )
    demo >> learn


def _create_demo_table(source, csv_path: str) -> str:
    """``CREATE TABLE`` + ``COPY`` of a bundled CSV, in one transaction, if missing."""
    from psycopg import sql

    from astrid_airflow.io import connect

    with connect(source) as conn, conn.transaction():
        # serialise concurrent first runs; the check below then sees the winner's table
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('astrid_demo_tables', 0))")
        if conn.execute("SELECT to_regclass(%s)", (source.table,)).fetchone()[0] is not None:
            return "exists"
        if conn.execute("SELECT to_regtype('public.astrid_label')").fetchone()[0] is None:
            conn.execute("CREATE TYPE public.astrid_label AS ENUM ('0', '1')")
        target = sql.Identifier(source.schema or "public", source.name)
        conn.execute(sql.SQL("CREATE TABLE {} (a1 numeric(9,6), "
                             "a2 double precision, a3 real, a4 double precision, "
                             "class public.astrid_label NOT NULL)").format(target))
        with conn.cursor().copy(sql.SQL("COPY {} (a1, a2, a3, a4, class) FROM STDIN "
                                        "WITH (FORMAT csv, HEADER true)").format(target)) as cp:
            with open(csv_path, "rb") as fh:
                while block := fh.read(1 << 16):
                    cp.write(block)
    return "created"
