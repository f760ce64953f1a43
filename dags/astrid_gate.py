"""
### ASTRID: gate a surrogate produced elsewhere, then release it

For surrogates made outside this Airflow (e.g. by `astrid shuffle` on another system):
validate the file against its original with the release gate of a stored artefact
version, and publish it only if every expectation passes. Nothing is learned or
shuffled here. Trigger it with a conf naming the files, e.g.

```json
{"original": "/data/batch.csv", "surrogate": "/incoming/surrogate.parquet",
 "artefact": "diabetes@v0001", "max_intact": 0.005}
```

Defaults point at `$ASTRID_DEMO_ROOT` (see `docs/airflow.md`).
"""

from __future__ import annotations

import datetime as dt

from airflow.sdk import DAG, Param
from astrid_airflow.operators.assets import release_asset
from astrid_airflow.operators.demo import bundled_table, demo_layout
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator

NAME = "diabetes"
LAYOUT = demo_layout(NAME)
EXTERNAL = demo_layout(f"{NAME}-external", root=LAYOUT.root)
RELEASE = release_asset(EXTERNAL.published, f"{NAME}_external")

with DAG(
    dag_id="astrid_gate_external",
    description="Gate a surrogate made elsewhere against a stored artefact, then release it",
    schedule=None,
    start_date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    params={
        "original": Param(bundled_table("diabetes.csv"), type="string",
                          description="the table the surrogate was made from"),
        "surrogate": Param(LAYOUT.incoming, type="string",
                           description="the surrogate to validate (.parquet or .csv)"),
        "artefact": Param(f"{NAME}@latest", type="string", description="NAME@VERSION"),
        "store": Param(LAYOUT.store, type="string", description="artefact store root"),
        # null: the threshold stored with the artefact's gate suite applies
        "max_intact": Param(None, type=["null", "number"], minimum=0, maximum=1),
        "max_accuracy_drop": Param(None, type=["null", "number"], minimum=0, maximum=1),
        "max_largest_group_unique_share": Param(None, type=["null", "number"], minimum=0,
                                                maximum=1),
        # a threshold looser than the default policy's is refused unless this is true
        # (and then recorded in the receipt and the release record; docs/gate.md)
        "allow_weaker_policy": Param(False, type="boolean"),
    },
    tags=["astrid", "example"],
    doc_md=__doc__,
) as dag:
    gate = SurrogateGateOperator(
        task_id="gate",
        original="{{ params.original }}",
        surrogate="{{ params.surrogate }}",
        store="{{ params.store }}",
        artefact="{{ params.artefact }}",
        policy={
            "max_intact": "{{ params.max_intact }}",
            "max_accuracy_drop": "{{ params.max_accuracy_drop }}",
            "max_largest_group_unique_share": "{{ params.max_largest_group_unique_share }}",
        },
        allow_weaker_policy="{{ params.allow_weaker_policy }}",
    )
    publish = PublishSurrogateOperator(
        task_id="publish",
        surrogate=gate.output["surrogate"],
        receipt=gate.output["receipt"],
        # gated again here when no signing key is configured (receipts untrusted)
        original="{{ params.original }}",
        store="{{ params.store }}",
        artefact="{{ params.artefact }}",
        destination=EXTERNAL.published,
        outlets=[RELEASE],
    )
