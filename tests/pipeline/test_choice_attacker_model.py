"""The release choice under a declared attacker model (issue 49): only the
quasi-identifiers are remedied, the attacks take them as the attacker's knowledge, the
record says which model was used and flags the unknown columns that single people out,
and with no declaration nothing changes."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import ParameterError, astrid
from astrid_airflow.gate import GatePolicy
from astrid_airflow.pipeline import choose_release

KNOWN = ("age", "sex", "year")


def clinic(n: int, seed: int = 0) -> pd.DataFrame:
    """A clinic's table: age, sex and year of sampling are public, the serum markers
    (to three digits, so near-unique) are not; death is the class."""
    rng = np.random.default_rng(seed)
    age, sex = rng.integers(20, 90, n), rng.integers(0, 2, n)
    creatinine = rng.lognormal(0, 0.3, n) + 0.01 * age
    marker = rng.normal(size=n) + 0.5 * sex
    risk = 0.04 * (age - 55) + 1.5 * (creatinine - 1.5) + 0.8 * marker
    death = rng.random(n) < 1 / (1 + np.exp(-risk))
    return pd.DataFrame({"age": age, "sex": sex, "year": rng.integers(2010, 2020, n),
                         "creatinine": creatinine.round(3), "marker": marker.round(3),
                         "death": np.where(death, "dead", "alive")})


@pytest.fixture(scope="module")
def learned():
    table = clinic(1_200)
    return table, astrid(table, target="death", n_search=10, n_test=20, random_state=0,
                         classifier="nb")


def test_a_declared_release_keeps_the_markers_and_records_the_model(learned, caplog):
    table, result = learned
    policy = GatePolicy(quasi_identifiers=KNOWN)
    with caplog.at_level(logging.WARNING):
        art = choose_release(table, result, policy=policy, random_state=0, progress=False)
    release = art.release
    assert release["status"] == "chosen", release["reason"]
    assert release["attacker_model"] == policy.attacker_model.to_dict()
    assert art.recipe.attacker_model == policy.attacker_model
    assert not {"creatinine", "marker"} & set(art.recipe.columns)  # published as they are
    chosen = release["candidates"][release["chosen"]]
    assert chosen["accuracy_drop"] <= policy.max_accuracy_drop
    flagged = {f["column"] for f in release["singling_out_columns"]}
    assert flagged == {"creatinine", "marker"}
    assert "'marker' is declared insensitive but singles people out" in caplog.text
    # ... and the report shows them beside the model, before anything is published
    from astrid_airflow.report._sections import _facts

    facts = _facts(result, art, None)
    assert "not declared known, yet singling people out" in facts
    assert "marker (insensitive, " in facts and "creatinine (insensitive, " in facts


def test_no_declaration_records_no_model_key(learned):
    # 200 of the rows: a choice of seconds (refused here); chosen or refused, a declared
    # model would be recorded
    table, result = learned
    art = choose_release(table.head(200), result, policy=GatePolicy(), random_state=0,
                         progress=False)
    assert art.release is not None and art.release["status"] in ("chosen", "refused")
    assert "attacker_model" not in art.release and "singling_out_columns" not in art.release
    assert art.recipe is None or art.recipe.attacker_model is None


@pytest.mark.parametrize("roles, message", [
    ({"quasi_identifiers": ("age", "pulse")}, "unknown column"),
    ({"quasi_identifiers": ("death",)}, "is the class"),
    ({"identifiers": ("age", "sex", "year", "creatinine", "marker")}, "every attribute"),
])
def test_a_bad_declaration_is_refused_before_the_choice_runs(learned, roles, message):
    table, result = learned
    with pytest.raises(ParameterError, match=message):
        choose_release(table, result, policy=GatePolicy(**roles), random_state=0,
                       progress=False)
