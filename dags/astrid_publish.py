"""
### ASTRID: learn → shuffle → gate → publish (daily), on the UCI diabetes table

1. **learn_if_changed** learns an ASTRID grouping on the reference table and saves it as
   a new artefact version, *only* if the table's fingerprint differs from the latest
   version's (or `force` is set). With the grouping it chooses the release (grouping +
   per-group remedies: class-aware bins, suppression) that passes the **default** gate
   policy; the artefact Asset gets an event only when it learned.
2. **shuffle** applies that release recipe to the batch and writes its GoldenEye
   surrogate into a per-run staging directory, with its privacy and utility metrics.
3. **gate** runs the release gate (Great Expectations suite stored with the artefact:
   the default `GatePolicy()`, privacy checks included) and writes the validation result
   and Data Docs beside the staged file. A failure fails the task without retries and
   names every failed expectation.
4. **publish** promotes the gated file atomically and emits the release Asset event
   that `astrid_consume_diabetes` is scheduled on. A failed gate publishes nothing.

The data is the bundled UCI Pima Indians Diabetes table (768 rows, 8 attributes;
`astrid_airflow/data/DIABETES.md`); by default the batch is the reference table itself
(a surrogate of the table the grouping was learned on); point `batch` at a new table of
the same columns to publish it with the stored grouping and recipe. Files live under
`$ASTRID_DEMO_ROOT` (default `$AIRFLOW_HOME/astrid_demo`). The small ASTRID settings
(`n_search=20`, `n_test=50`) keep a run short (about a minute to learn and choose);
the paper used `n_search=100`, `n_test=250` (trigger with that conf to reproduce it).
For a large table, trigger with `{"classifier": "auto", "n_search": null, "n_test": null}`:
the library's defaults for its size, as `astrid learn` without flags
(`benchmarks/bench_release_scale.py` does).
The search seed is fixed (`learn_seed=0`) so the artefact is reproducible; shuffle and
gate seeds are derived from the run unless `seed` is given.
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param
from astrid_airflow.operators.assets import artefact_alias, artefact_asset, release_asset
from astrid_airflow.operators.demo import (
    DEMO_ATTACKER_MODEL,
    bundled_table,
    demo_layout,
)
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

NAME = "diabetes"
LAYOUT = demo_layout(NAME)
RELEASE = release_asset(LAYOUT.published, NAME)
# Stored with every learned version as its gate suite: the library's default
# GatePolicy() thresholds, privacy checks enforced, under a declared attacker model (age,
# pregnancies and BMI known; glucose and insulin sensitive, as the class is). The learn
# step chooses a remedied release that passes it (or refuses, and then nothing is
# published); no threshold is loosened here.
GATE_POLICY = dict(DEMO_ATTACKER_MODEL)

with DAG(
    dag_id="astrid_publish_diabetes",
    description="Learn (if changed), shuffle, gate and publish a GoldenEye surrogate",
    schedule="@daily",
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": dt.timedelta(seconds=30)},
    params={
        "reference": Param(bundled_table("diabetes.csv"), type="string",
                           description="reference table the grouping is learned on"),
        "batch": Param(bundled_table("diabetes.csv"), type="string",
                       description="table to shuffle and publish (same schema; default: "
                       "the reference table itself)"),
        "classifier": Param("svm", enum=["svm", "rf", "nb", "hgb", "auto"],
                            description="auto: the library's defaults for the table's size "
                            "(svm up to 20,000 rows; above, hgb in adaptive mode)"),
        "n_search": Param(20, type=["null", "integer"], minimum=1,
                          description="R' (paper: 100; null: the library's default, 100)"),
        "n_test": Param(50, type=["null", "integer"], minimum=1,
                        description="R (paper: 250; null: the library's default, 250)"),
        "force": Param(False, type="boolean", description="learn even if unchanged"),
        "learn_seed": Param(0, type=["null", "integer"], minimum=0,
                            description="seed of the search (null: derived from the run)"),
        "seed": Param(None, type=["null", "integer"], minimum=0,
                      description="seed of shuffle and gate (null: derived from the run, "
                      "so a retry reproduces the same surrogate)"),
        # Gate thresholds of this run; null = the policy stored with the artefact (GATE_POLICY)
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
    },
    tags=["astrid", "example"],
    doc_md=__doc__,
) as dag:
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
        # gated again here when no signing key is configured (receipts untrusted)
        original=shuffle.output["original"],
        store=LAYOUT.store,
        artefact=shuffle.output["artefact"],
        destination=LAYOUT.published,
        outlets=[RELEASE],
    )
