"""
### ASTRID on PostgreSQL: reference table → artefact → shuffle → gate → published table

The same pipeline as `astrid_publish_diabetes`, on the same bundled UCI diabetes table
and the same default gate policy, reading from and publishing to a PostgreSQL database
behind the Airflow connection `astrid_postgres` (set `$ASTRID_POSTGRES_CONN_ID` to use
another one):

0. **demo_tables** creates the demo table from the bundled data *if it is missing*
   (`public.astrid_diabetes`: `preg smallint`, `plas`, `pres`, `skin`, `insu integer`,
   `mass numeric(4,1)`, `pedi double precision`, `age smallint`, `class
   astrid_diabetes_class` (an enum)). It is both the reference and the batch by
   default. Point the params at your own tables and it does nothing.
1. **learn_if_changed** streams the reference table (in primary-key or full-column
   order, so unchanged content means an unchanged fingerprint) and, only if the table
   changed, learns a grouping and chooses the remedied release that passes the default
   gate policy.
2. **shuffle** streams the batch table into the run's staging directory and writes the
   remedied GoldenEye surrogate there (a Parquet file that keeps the SQL column types).
3. **gate** validates the staged file against the batch table.
4. **publish** loads the gated file into a staging table with the batch table's column
   types and swaps it in as `public.astrid_diabetes_surrogate` in one transaction:
   readers see the previous release or the new one, never a missing or half-loaded
   table. A failed gate leaves the published table untouched. It trusts the gate's
   receipt only when signed: the deployment needs a signing key (`$ASTRID_SIGNING_KEY`
   or the Airflow connection `astrid_signing`), since the original is a table and
   publish cannot gate the file again itself.

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

NAME = "postgres_diabetes"
CONN_ID = os.environ.get("ASTRID_POSTGRES_CONN_ID", "astrid_postgres")
LAYOUT = demo_layout(NAME)
DEMO_TABLE = "public.astrid_diabetes"
REFERENCE = BATCH = sql_table(CONN_ID, DEMO_TABLE)
PUBLISHED = sql_table(CONN_ID, "public.astrid_diabetes_surrogate")
RELEASE = release_asset(PUBLISHED, NAME)
# As in astrid_publish.py: None = the default GatePolicy(), privacy checks enforced; the
# learn step chooses the remedied release that passes it.
GATE_POLICY = None

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
        "max_share_below_k": Param(None, type=["null", "number"], minimum=0, maximum=1),
        "max_singling_out_risk": Param(None, type=["null", "number"], minimum=0,
                                       maximum=1),
        # a threshold looser than the default policy's is refused unless this is true
        # (and then recorded in the receipt and the release record; docs/gate.md)
        "allow_weaker_policy": Param(False, type="boolean"),
        "lock_timeout": Param(30, type="number", exclusiveMinimum=0,
                              description="seconds the swap waits for readers"),
    },
    tags=["astrid", "example", "postgres"],
    doc_md=__doc__,
) as dag:

    @task
    def demo_tables(reference: str, batch: str) -> dict:
        """Create the demo table from the bundled CSV when it does not exist yet."""
        from astrid_airflow.operators.demo import bundled_table
        from astrid_airflow.operators.sql import as_table, database_source

        created = {}
        for ref in dict.fromkeys((reference, batch)):  # the same table by default
            table = as_table(ref, "table")
            if table.conn_id != CONN_ID or table.table != DEMO_TABLE:
                created[str(ref)] = "not a demo table: left alone"
                continue
            created[str(ref)] = _create_demo_table(database_source(table),
                                                   bundled_table("diabetes.csv"))
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
            "max_share_below_k": "{{ params.max_share_below_k }}",
            "max_singling_out_risk": "{{ params.max_singling_out_risk }}",
        },
        allow_weaker_policy="{{ params.allow_weaker_policy }}",
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


#: The demo table's columns, in the CSV's order: integers, a fixed-point and a float
#: column, and an enum class, so the published table shows the types are kept.
DEMO_COLUMNS = (("preg", "smallint"), ("plas", "integer"), ("pres", "integer"),
                ("skin", "integer"), ("insu", "integer"), ("mass", "numeric(4,1)"),
                ("pedi", "double precision"), ("age", "smallint"),
                ("class", "public.astrid_diabetes_class NOT NULL"))


def _create_demo_table(source, csv_path: str) -> str:
    """``CREATE TABLE`` + ``COPY`` of a bundled CSV, in one transaction, if missing."""
    from psycopg import sql

    from astrid_airflow.io import connect

    with connect(source) as conn, conn.transaction():
        # serialise concurrent first runs; the check below then sees the winner's table
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('astrid_demo_tables', 0))")
        if conn.execute("SELECT to_regclass(%s)", (source.table,)).fetchone()[0] is not None:
            return "exists"
        if conn.execute("SELECT to_regtype('public.astrid_diabetes_class')"
                        ).fetchone()[0] is None:
            conn.execute("CREATE TYPE public.astrid_diabetes_class AS ENUM "
                         "('tested_negative', 'tested_positive')")
        target = sql.Identifier(source.schema or "public", source.name)
        conn.execute(sql.SQL("CREATE TABLE {} (" + ", ".join(
            f"{name} {kind}" for name, kind in DEMO_COLUMNS) + ")").format(target))
        columns = sql.SQL(", ").join(sql.Identifier(name) for name, _ in DEMO_COLUMNS)
        with conn.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN "
                                        "WITH (FORMAT csv, HEADER true)").format(
                                            target, columns)) as cp:
            with open(csv_path, "rb") as fh:
                while block := fh.read(1 << 16):
                    cp.write(block)
    return "created"
