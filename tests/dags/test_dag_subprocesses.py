"""The publishing DAG run in a fresh interpreter: under the OpenLineage listener, and as
`make demo` runs it (scripts/demo.sh).

Apart from ``test_dags.py`` so that, with the suite spread over workers (pytest-xdist,
``--dist loadfile``), these two whole runs go on beside that module's in-process runs
rather than after them. Both start from the DAG's learned store, built once per test
run (``tests/shared_artefacts.py``): the learn task keeps it, and the runs shuffle, gate
and publish its chosen release; ``test_dags.py`` runs the DAG's real learn and choice.
Their timeouts are hang guards, not speed targets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO

DAGS = REPO / "dags"
PUBLISH = "astrid_publish_diabetes"


@pytest.mark.airflow
@pytest.mark.e2e
def test_openlineage_listener_emits_the_gates_assertions_and_the_datasets(tmp_path,
                                                                         tmp_path_factory):
    """With the OpenLineage provider on (file transport), a real run's events carry them.

    A fresh interpreter: the provider reads its transport when the listener starts. The
    demo root starts with the DAG's learned store (built once per test run), so the
    learn task keeps it (its output facets when it learns: tests/operators/
    test_operators.py::TestOpenLineage; the DAG's real learn: tests/dags/test_dags.py).
    """
    from shared_artefacts import copy_into, diabetes_store

    copy_into(diabetes_store(tmp_path_factory, signing_key=None),
              tmp_path / "demo" / "artefacts")
    from astrid_airflow.operators.demo import bundled_table

    events = tmp_path / "events.jsonl"
    code = textwrap.dedent(f"""
        from airflow.utils import db
        db.resetdb()
        try:
            from airflow.dag_processing.dagbag import DagBag
        except ImportError:  # Airflow 3.1
            from airflow.models.dagbag import DagBag
        dr = DagBag(dag_folder={str(DAGS)!r}).dags[{PUBLISH!r}].test(run_conf={{"seed": 1}})
        assert str(dr.state) == "success", dr.state
    """)
    transport = {"type": "file", "log_file_path": str(events), "append": True}
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "home"),
           "ASTRID_DEMO_ROOT": str(tmp_path / "demo"),
           "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
           "AIRFLOW__OPENLINEAGE__NAMESPACE": "astrid-test"}
    # a script file, not `python -c`: PySpark (imported by GX) takes a __main__ without a
    # __file__ for a doctest run and exits the task with status 0
    script = tmp_path / "run.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=1800)  # a hang guard: the run learns first
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    complete = {e["job"]["name"].rsplit(".", 1)[-1]: e
                for e in map(json.loads, events.read_text().splitlines())
                if e["eventType"] == "COMPLETE"}
    (surrogate,) = [d for d in complete["gate"]["inputs"]
                    if "dataQualityAssertions" in d.get("inputFacets", {})]
    # the gate task's receipt (publish gating again writes its own in *.publish-gate/)
    (receipt,) = [p for p in (tmp_path / "demo").rglob("staging/**/surrogate.gate.json")
                  if not p.parent.name.endswith(".publish-gate")]
    expectations = json.loads(receipt.read_text())["expectations"]
    assertions = surrogate["inputFacets"]["dataQualityAssertions"]["assertions"]
    assert [(a["assertion"], a["success"]) for a in assertions] == [
        (e["name"], e["success"]) for e in expectations]
    metrics = surrogate["facets"]["astrid_metrics"]["metrics"]
    assert {"intact_row_proportion", "accuracy_drop"} <= set(metrics)
    assert surrogate["name"] == str(receipt.parent / "surrogate.parquet")
    published = {d["name"] for d in complete["publish"]["outputs"]}
    assert str(tmp_path / "demo" / "published" / "diabetes" / "surrogate.parquet") in published
    # the learn task kept the stored version: its event names the reference it read
    assert [d["name"] for d in complete["learn_if_changed"]["inputs"]] == [
        bundled_table("diabetes.csv")]
    assert complete["shuffle"]["outputs"][0]["name"] == surrogate["name"]


def test_demo_summary_reports_a_missing_release(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "demo_summary.py"),
                          str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "did not publish" in out.stderr


@pytest.mark.airflow
@pytest.mark.slow
@pytest.mark.e2e
def test_make_demo_script_runs_the_publishing_dag_end_to_end(tmp_path, tmp_path_factory):
    """What `make demo` runs: fresh AIRFLOW_HOME, db migrate, airflow dags test, summary.

    The demo root starts with the DAG's learned store (built once per test run), so the
    learn task keeps it; the OpenLineage run above learns and chooses for real."""
    from shared_artefacts import copy_into, diabetes_store

    copy_into(diabetes_store(tmp_path_factory, signing_key=None),
              tmp_path / "astrid_demo" / "artefacts")
    env = {**os.environ, "ASTRID_DEMO_HOME": str(tmp_path), "VENV": str(Path(sys.executable)
                                                                        .parents[1])}
    for var in ("AIRFLOW_HOME", "AIRFLOW__CORE__DAGS_FOLDER", "ASTRID_DEMO_ROOT"):
        env.pop(var, None)
    out = subprocess.run(["bash", str(REPO / "scripts" / "demo.sh")], env=env,
                         capture_output=True, text=True, timeout=1800)  # a hang guard
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    for label in ("Artefact", "Surrogate", "Validation", "Data Docs",
                  "intact rows that disclose someone", "P_anon", "class disclosure share",
                  "singling-out risk", "Release gate    PASSED",
                  "policy: the default GatePolicy()",
                  # the declared model and what it guarantees (issue 49)
                  "Attacker model  identifiers none (dropped); quasi-identifiers age, preg, "
                  "mass; sensitive plas, insu", "guaranteed on every published group tuple"):
        assert label in out.stdout
    published = tmp_path / "astrid_demo" / "published" / "diabetes" / "surrogate.parquet"
    assert published.is_file()
    assert (tmp_path / "airflow" / "airflow.db").is_file()  # SQLite, in the temp home
