"""The operators' signing key comes from an Airflow connection (issue 29)."""

from __future__ import annotations

import hashlib
import json
import types

import pandas as pd
import pytest
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.publish import PublishSurrogateOperator

from astrid_airflow.release import seal_receipt
from tests.keys import without_any_key

CONN_KEY = "connection-key-0123456789abcdef"


def _ctx(run_id="manual__1"):
    """The part of an Airflow context the operator reads (as in test_operators)."""
    ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id="publish", map_index=-1)
    return {"ti": ti, "run_id": run_id}


def _staged(tmp_path, key: str | None):
    path = tmp_path / "staging" / "s.csv"
    path.parent.mkdir(parents=True)
    pd.DataFrame({"a": [0.5, 1.25, 2.0], "class": ["x", "y", "x"]}).to_csv(path, index=False)
    receipt = {"success": True, "surrogate": "file://" + str(path), "failed": [],
               "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
               "artefact": "syn@v0001", "expectations": [], "policy": {}}
    if key is not None:
        receipt = seal_receipt(receipt, stem="s", artefact_sha256=None, suite_sha256=None,
                               gate_files={}, key=key.encode())
    (path.parent / "s.gate.json").write_text(json.dumps(receipt))
    return path


def _op(path, dest, **kw):
    return PublishSurrogateOperator(task_id="publish", surrogate=str(path),
                                    destination=str(dest), **kw)


def test_the_key_of_the_connection_verifies_the_receipt(tmp_path, monkeypatch):
    from astrid_airflow.operators._signing import signing_key_from_connection

    monkeypatch.delenv("ASTRID_SIGNING_KEY", raising=False)
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_SIGNING",
                       json.dumps({"conn_type": "generic", "password": CONN_KEY}))
    assert signing_key_from_connection() == CONN_KEY.encode()
    assert signing_key_from_connection("no_such_connection") is None
    dest = tmp_path / "pub" / "s.csv"
    out = _op(_staged(tmp_path, CONN_KEY), dest).execute(_ctx())
    assert out["sha256"] == hashlib.sha256(dest.read_bytes()).hexdigest()
    manifest = json.loads((tmp_path / "pub" / "s.release.json").read_text())
    assert manifest["receipt_trust"] == "signed"


def test_without_any_key_a_receipt_is_not_trusted(tmp_path, monkeypatch):
    without_any_key(monkeypatch, tmp_path)
    dest = tmp_path / "pub" / "s.csv"
    with pytest.raises(AirflowFailException, match="no signing key is configured"):
        _op(_staged(tmp_path, None), dest, signing_conn_id=None).execute(_ctx())
    assert not dest.exists()


def test_a_receipt_signed_with_another_key_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_SIGNING",
                       json.dumps({"conn_type": "generic", "password": CONN_KEY}))
    dest = tmp_path / "pub" / "s.csv"
    with pytest.raises(AirflowFailException, match="another key"):
        _op(_staged(tmp_path, "the staging user's own key 0123"), dest).execute(_ctx())
    assert not dest.exists()


def test_an_empty_signing_connection_fails_clearly(monkeypatch):
    from astrid_airflow.operators._signing import signing_key_from_connection

    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_SIGNING", json.dumps({"conn_type": "generic"}))
    with pytest.raises(AirflowFailException, match="holds no key"):
        signing_key_from_connection()


def test_an_unsigned_store_is_read_only_with_allow_unsigned(tmp_path):
    """Stores are signed by default (issue 53): the shuffle operator refuses a version
    no key signed, and reads it with ``allow_unsigned=True`` (templated text too)."""
    from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

    from tests.operators.test_lineage_release import synthetic_store
    from tests.release.test_store_integrity import unsign

    _, data = synthetic_store(tmp_path / "store")
    unsign(tmp_path / "store" / "syn" / "v0001")
    data.to_csv(tmp_path / "batch.csv", index=False)

    def shuffle(**kw):
        return GoldenEyeShuffleOperator(
            task_id="shuffle", table=str(tmp_path / "batch.csv"),
            store=str(tmp_path / "store"), artefact="syn", utility=False,
            out=str(tmp_path / "out" / "s.parquet"), random_state=0, **kw).execute(_ctx())

    with pytest.raises(AirflowFailException, match=r"it is not signed.*--allow-unsigned"):
        shuffle()
    assert not (tmp_path / "out" / "s.parquet").exists()
    assert shuffle(allow_unsigned="true")["rows"] == len(data)
