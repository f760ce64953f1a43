"""OpenLineage of releases and of failed runs (issue 30).

* A publish event's outputs carry the release's version (its id), the sha256 of the
  published bytes and the gate's verdict (custom ``astrid_release`` facet); its input,
  the staged surrogate, the gate's assertions from the receipt.
* A failed run names its inputs (a failed shuffle: the batch it read, and the artefact
  once resolved; a failed gate and publish: what they were given).

The receipt here is written as the gate writes it (the gate's own facets are tested in
tests/operators/test_operators.py); only the publish step runs.
"""

from __future__ import annotations

import hashlib
import json
import types

import pandas as pd
import pytest
from astrid_airflow.operators._common import as_path
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator
from openlineage.client.serde import Serde

from astrid_airflow import ArtefactStore, Grouping, GroupingArtefact, make_synthetic

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")

EXPECTATIONS = [
    {"name": "expect_surrogate_intact_row_proportion_to_be_at_most", "category": "privacy",
     "success": True, "observed_value": 0.01, "threshold": 0.05},
    {"name": "expect_surrogate_accuracy_drop_to_be_at_most", "category": "utility",
     "success": True, "observed_value": 0.004, "threshold": 0.02},
]


def ctx(run_id: str = "r1") -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id="t", map_index=-1)
    return {"ti": ti, "run_id": run_id}


@pytest.fixture(autouse=True)
def signing_key(monkeypatch):
    # a deployment with a key: publish trusts the sealed receipt (issue 29)
    monkeypatch.setenv("ASTRID_SIGNING_KEY", "lineage-test-key-0123456789")


@pytest.fixture
def gated(tmp_path, signing_key):
    """A staged surrogate with a passing receipt beside it: ``(path, sha256)``."""
    path = tmp_path / "stage" / "surrogate.csv"
    path.parent.mkdir()
    make_synthetic(50, random_state=0).to_csv(path, index=False)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    receipt = {"success": True, "surrogate": str(as_path(str(path), "surrogate")),
               "sha256": digest, "artefact": "syn@v0001", "failed": [],
               "expectations": EXPECTATIONS, "validation": None, "data_docs": None,
               "report": None}
    # sealed and signed as the gate seals it (a hand-written receipt is refused)
    from astrid_airflow.release import seal_receipt

    validation = b"{}"
    (path.parent / "surrogate.validation.json").write_bytes(validation)
    receipt = seal_receipt(receipt, stem="surrogate", artefact_sha256=None, suite_sha256=None,
                           gate_files={"surrogate.validation.json": validation},
                           key=b"lineage-test-key-0123456789")
    (path.parent / "surrogate.gate.json").write_text(json.dumps(receipt))
    return path, digest


def test_publish_outputs_carry_version_sha256_and_the_gates_verdict(tmp_path, gated):
    path, _ = gated
    dest = tmp_path / "pub" / "surrogate.csv"
    op = PublishSurrogateOperator(task_id="publish", surrogate=str(path),
                                  destination=str(dest))
    op.execute(ctx("r1"))
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [d.name for d in lineage.outputs] == [
        str(dest), str(tmp_path / "pub" / "releases" / "r1" / dest.name)]
    for out in lineage.outputs:
        assert out.facets["version"].datasetVersion == "r1"
        release = out.facets["astrid_release"]
        # the published bytes are the canonical form of the judged values (issue 29)
        assert release.sha256 == hashlib.sha256(dest.read_bytes()).hexdigest()
        assert (release.releaseId, release.artefact) == ("r1", "syn@v0001")
        assert release.gateSuccess is True and release.gateFailed == []
        assert release.gateExpectations == len(EXPECTATIONS)
        json.dumps(Serde.to_dict(out))  # the custom facet serialises
    (surrogate,) = lineage.inputs
    assertions = surrogate.inputFacets["dataQualityAssertions"].assertions
    assert [(a.assertion, a.success) for a in assertions] == [
        (e["name"], e["success"]) for e in EXPECTATIONS]


def test_a_failed_publish_names_its_input(tmp_path, gated):
    path, _ = gated
    path.write_text(path.read_text() + "0,0,0,0,0\n")  # not the bytes the gate passed
    op = PublishSurrogateOperator(task_id="publish", surrogate=str(path),
                                  destination=str(tmp_path / "pub" / "s.csv"))
    with pytest.raises(AirflowFailException):
        op.execute(ctx())
    lineage = op.get_openlineage_facets_on_failure(None)
    assert [d.name for d in lineage.inputs] == [str(path)] and not lineage.outputs


@pytest.fixture
def store(tmp_path):
    """A store holding ``syn@v0001`` (a grouping of the synthetic table)."""
    return synthetic_store(tmp_path / "store")


def synthetic_store(root):
    """``(root, table)``: a store at ``root`` holding ``syn@v0001``, a grouping of the
    synthetic table, and that table."""
    data = make_synthetic(200, random_state=0)
    g = Grouping.parse("a1,a2;a3;a4")
    result = {"grouping": g.to_list(), "k": g.k, "table": [], "target": "class",
              "classifier": "svm", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, data, created_at="2026-01-01T00:00:00Z")
    ArtefactStore(str(root)).save("syn", art)
    return root, data


def test_a_failed_shuffle_names_the_batch_and_the_artefact(tmp_path, store):
    root, data = store
    batch = tmp_path / "batch.csv"
    data.drop(columns=["a3"]).to_csv(batch, index=False)  # not the artefact's schema
    op = GoldenEyeShuffleOperator(task_id="shuffle", table=str(batch), store=str(root),
                                  artefact="syn", out=str(tmp_path / "out.parquet"),
                                  random_state=0)
    with pytest.raises(AirflowFailException):
        op.execute(ctx())
    lineage = op.get_openlineage_facets_on_failure(None)
    names = {d.name: d for d in lineage.inputs}
    assert str(batch) in names and str(root / "syn") in names
    assert names[str(root / "syn")].facets["version"].datasetVersion == "v0001"
    assert not lineage.outputs


def test_a_shuffle_that_fails_before_the_artefact_still_names_the_batch(tmp_path, store):
    root, data = store
    batch = tmp_path / "batch.csv"
    data.to_csv(batch, index=False)
    op = GoldenEyeShuffleOperator(task_id="shuffle", table=str(batch), store=str(root),
                                  artefact="missing", out=str(tmp_path / "out.parquet"))
    with pytest.raises(AirflowFailException):
        op.execute(ctx())
    assert [d.name for d in op.get_openlineage_facets_on_failure(None).inputs] == [
        str(batch)]


def test_a_gate_that_fails_on_bad_input_names_both_tables(tmp_path, store):
    root, data = store
    original, surrogate = tmp_path / "orig.csv", tmp_path / "surr.csv"
    data.to_csv(original, index=False)
    pd.DataFrame({"x": [1, 2]}).to_csv(surrogate, index=False)  # not a surrogate of it
    op = SurrogateGateOperator(task_id="gate", original=str(original),
                               surrogate=str(surrogate), store=str(root), artefact="syn",
                               out_dir=str(tmp_path / "gate"), random_state=0)
    with pytest.raises(AirflowFailException):
        op.execute(ctx())
    names = [d.name for d in op.get_openlineage_facets_on_failure(None).inputs]
    assert names[:2] == [str(original), str(surrogate)]
