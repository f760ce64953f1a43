"""The attacker model in the gate policy: declared roles are recorded, none declared
keeps the policy's bytes and digest exactly as before (issue 49)."""

from __future__ import annotations

import json

import pytest

from astrid_airflow._errors import ParameterError
from astrid_airflow.gate import GatePolicy
from astrid_airflow.release import AttackerModel
from astrid_airflow.release._receipt import policy_sha256

#: ``policy_sha256(GatePolicy().to_dict())`` of the code before the attacker model.
DEFAULT_POLICY_SHA256 = "4404fcf0e22e63fc32d60b862c8a2a6d486c75eabbe36e7d048a139506bf2e85"


def test_undeclared_policy_keeps_its_keys_and_digest():
    policy = GatePolicy()
    assert not set(policy.to_dict()) & {"identifiers", "quasi_identifiers", "sensitive"}
    assert policy_sha256(policy.to_dict()) == DEFAULT_POLICY_SHA256
    assert policy.attacker_model == AttackerModel()
    assert not policy.attacker_model.declared


def test_declared_model_is_recorded_and_round_trips():
    policy = GatePolicy.from_json(json.dumps(
        {"identifiers": ["id"], "quasi_identifiers": ["age", "sex"],
         "sensitive": ["creatinine"]}))
    assert policy.identifiers == ("id",)  # JSON lists become tuples
    assert policy.quasi_identifiers == ("age", "sex")
    data = policy.to_dict()
    assert data["identifiers"] == ["id"] and data["sensitive"] == ["creatinine"]
    assert data["quasi_identifiers"] == ["age", "sex"]
    assert GatePolicy.from_json(policy.to_json()) == policy
    assert policy_sha256(data) != DEFAULT_POLICY_SHA256
    assert policy.attacker_model == AttackerModel(("id",), ("age", "sex"), ("creatinine",))
    # the GX suite parameters stay numeric thresholds only
    assert not set(policy.parameters()) & {"identifiers", "quasi_identifiers", "sensitive"}


@pytest.mark.parametrize("roles", [
    {"identifiers": ["a"], "sensitive": ["a"]},           # a column in two roles
    {"quasi_identifiers": ["a", "a"]},                    # named twice
    {"identifiers": [""]},                                # empty name
    {"sensitive": 3},                                     # not a list
])
def test_bad_declaration_in_policy_is_parameter_error(roles):
    with pytest.raises(ParameterError):
        GatePolicy.from_dict(roles)


def _synthetic():
    from pathlib import Path

    import pandas as pd

    import astrid_airflow

    return pd.read_csv(Path(astrid_airflow.__file__).parent / "data" / "synthetic.csv")


@pytest.mark.parametrize("roles", [
    {"identifiers": ["nope"]},                            # unknown column
    {"identifiers": ["class"]},                           # class as identifier
    {"quasi_identifiers": ["class"]},                     # class as quasi-identifier
    {"identifiers": ["a1", "a2", "a3", "a4"]},            # every attribute an identifier
])
def test_learn_refuses_a_bad_declaration_before_any_fit(roles, tmp_path):
    from astrid_airflow import LearnRequest, learn_release
    from astrid_airflow.release import ArtefactStore

    def run(*_):
        raise AssertionError("the search ran")

    store = ArtefactStore(tmp_path / "store")
    with pytest.raises(ParameterError):
        learn_release(LearnRequest(table=_synthetic(), store=store, name="syn",
                                   policy=roles, run=run, remedies=None))
    assert not list((tmp_path / "store").rglob("artefact.json"))


def test_learn_drops_identifiers_and_records_the_model(tmp_path):
    from astrid_airflow import LearnRequest, learn_release
    from astrid_airflow.release import ArtefactStore

    store = ArtefactStore(tmp_path / "store")
    settings = dict(classifier="nb", n_search=5, n_test=10, progress=False)
    learned = learn_release(LearnRequest(
        table=_synthetic(), settings=settings, store=store, name="syn", remedies=None,
        random_state=0, policy={"identifiers": ["a1"], "sensitive": ["a4"]}))
    artefact = learned.artefact
    assert "a1" not in json.dumps(artefact.to_dict()["grouping"])
    assert "a1" not in [c["name"] for c in artefact.schema]
    version = tmp_path / "store" / "syn" / learned.version
    record = json.loads((version / "learn.json").read_text())
    assert record["policy"]["identifiers"] == ["a1"]
    assert record["policy"]["sensitive"] == ["a4"]
    assert '"identifiers"' in (version / "suite.json").read_text()
