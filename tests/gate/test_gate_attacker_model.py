"""The gate judges a release under the attacker model its recipe was chosen for (issue
49): the per-group checks count quasi-identifier projections, the checks of what an
attacker's knowledge links get the projected grouping, and a declared sensitive column
shown with one value next to a projection fails the disclosure check."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import GroupingArtefact, ReleaseRecipe, make_surrogate, validate_surrogate
from astrid_airflow.gate._suite import build_suite
from astrid_airflow.release import AttackerModel

BELOW_K = "expect_surrogate_group_share_below_k_to_be_at_most"
CLASS_DISC = "expect_surrogate_group_class_disclosure_share_to_be_at_most"
UNIQUE = "expect_surrogate_largest_group_unique_share_to_be_at_most"
ONE_COLUMN = "expect_surrogate_class_from_one_column_risk_to_be_at_most"
SAME_ACCURACY = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}
MODEL = AttackerModel(quasi_identifiers=("age", "sex"), sensitive=("death",))


def _clinic(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(3, 8, n) * 10, "sex": rng.integers(0, 2, n),
                         "marker": rng.normal(size=n).round(5),  # unique per person
                         "death": rng.integers(0, 2, n), "class": rng.integers(0, 2, n)})


def _released(table: pd.DataFrame, model) -> GroupingArtefact:
    result = {"grouping": [["age", "marker"], ["sex", "death"]], "k": 2, "table": [],
              "target": "class", "classifier": "nb", "scoring": "accuracy", "alpha": 0.05,
              "n_search": 20, "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")
    recipe = ReleaseRecipe(k=5, steps=(), target="class", attacker_model=model)
    return dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict(),
                                             "policy": {"max_suppressed_share": 1.0}})


def _outcome(result, name):
    (found,) = [e for e in result.expectations if e.name == name]
    return found


def test_the_gate_counts_what_the_declared_attacker_knows():
    table = _clinic()
    declared = _released(table, MODEL)
    s = make_surrogate(table, declared, random_state=1)
    assert s["marker"].notna().all()  # the marker is published: not known, not suppressed
    r = validate_surrogate(table, s, declared, random_state=0, metrics=SAME_ACCURACY)
    for name in (BELOW_K, CLASS_DISC, UNIQUE, ONE_COLUMN):
        assert _outcome(r, name).success, name
    # the same surrogate judged as if every column were known fails the per-group check
    plain = _released(table, None)
    r = validate_surrogate(table, s, plain, random_state=0, metrics=SAME_ACCURACY)
    assert not _outcome(r, BELOW_K).success and not _outcome(r, UNIQUE).success


def test_a_sensitive_value_shown_alone_fails_the_disclosure_check():
    table = _clinic()
    table.loc[table["sex"] == 1, "death"] = 1  # sex 1 gives death away
    declared = _released(table, MODEL)
    raw = make_surrogate(table, declared, random_state=1, remedies=False)
    r = validate_surrogate(table, raw, declared, random_state=0, metrics=SAME_ACCURACY,
                           remedies=False)
    disclosure = _outcome(r, CLASS_DISC)
    assert not disclosure.success
    # the release itself suppresses those rows and passes
    s = make_surrogate(table, declared, random_state=1)
    assert not (s["sex"] == 1).any()  # every (sex 1, death) tuple is published missing
    assert s["sex"].isna().sum() == (table["sex"] == 1).sum()
    r = validate_surrogate(table, s, declared, random_state=0, metrics=SAME_ACCURACY)
    assert _outcome(r, CLASS_DISC).success


def test_the_suite_of_a_declared_release_gets_the_known_projection():
    table = _clinic(100)
    suite = build_suite(_released(table, MODEL))
    kwargs = {e["type"]: e["kwargs"] for e in suite["expectations"]}
    assert kwargs[UNIQUE]["grouping"] == [["age"], ["sex"]]
    assert kwargs[BELOW_K]["grouping"] == [["age", "marker"], ["sex", "death"]]
    plain = build_suite(_released(table, None))
    assert {e["type"]: e["kwargs"] for e in plain["expectations"]}[UNIQUE]["grouping"] == \
        [["age", "marker"], ["sex", "death"]]


def test_a_policy_declaring_another_model_than_the_release_is_refused():
    from astrid_airflow import ParameterError
    from astrid_airflow.release import release_attacker_model

    declared = _released(_clinic(50), MODEL)
    assert release_attacker_model(declared, None) == MODEL
    assert release_attacker_model(_released(_clinic(50), None), MODEL) == MODEL
    with pytest.raises(ParameterError, match="another attacker model"):
        release_attacker_model(declared, AttackerModel(quasi_identifiers=("age",)))


INTACT = "expect_surrogate_intact_row_proportion_to_be_at_most"


def test_the_intact_check_counts_only_the_rows_that_disclose_someone():
    # fails before: every distinct row counted, so the common score profiles found
    # intact failed the check (P_anon well above max_intact) under the declared model too
    from tests.release.test_disclosing_intact import _scores_table

    table = _scores_table().rename(columns={"y": "class"})
    model = AttackerModel(quasi_identifiers=("age_band", "sex"))
    result = {"grouping": [["age_band"], ["sex"], ["score0", "score1"]], "k": 3,
              "table": [], "target": "class", "classifier": "nb", "scoring": "accuracy",
              "alpha": 0.05, "n_search": 20, "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")
    recipe = ReleaseRecipe(k=1, steps=(), target="class", attacker_model=model)
    art = dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict(),
                                            "policy": {"max_intact": 0.01}})
    s = make_surrogate(table, art, random_state=3)
    r = validate_surrogate(table, s, art, random_state=0, metrics=SAME_ACCURACY)
    found = _outcome(r, INTACT)
    assert found.success and found.observed_value <= 0.01
    assert found.details["intact_row_proportion_all_rows"] > 0.5  # P_anon, beside
    # the same surrogate judged with every column known counts every distinct row
    plain = dataclasses.replace(art, release={**art.release, "recipe": ReleaseRecipe(
        k=1, steps=(), target="class").to_dict()})
    r = validate_surrogate(table, s, plain, random_state=0, metrics=SAME_ACCURACY)
    assert not _outcome(r, INTACT).success
    assert "intact_row_proportion_all_rows" not in _outcome(r, INTACT).details
