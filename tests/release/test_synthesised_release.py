"""Issue 51: a release whose recipe synthesises a group, through suppression, the gate
and the choice.

The class depends on the *interaction* of two continuous columns (the sign of their
correlation flips with the class): each column alone says nothing, so binning them
apart loses the signal, and their tuples are all unique, so keeping them together
needs coarse bins. A class-conditional copula of the pair keeps it.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import GatePolicy, GroupingArtefact, choose_release, make_surrogate
from astrid_airflow.engine import Grouping
from astrid_airflow.gate import validate_surrogate
from astrid_airflow.pipeline import fit_recipe
from astrid_airflow.release import ReleaseRecipe, release_domain

GROUPS = [["a", "b"], ["c"]]
CLOSENESS = "expect_surrogate_synthetic_tuples_to_be_no_closer_than_real"


def _interaction_table(n: int = 1600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    a = rng.normal(size=n)
    b = np.where(y == 1, 0.9, -0.9) * a + 0.45 * rng.normal(size=n)
    return pd.DataFrame({"a": a.round(4), "b": b.round(4),
                         "c": rng.choice(["u", "v", "w"], n), "y": y})


def _result(groups: list) -> dict:
    return {"grouping": groups[0], "k": len(groups[0]),
            "table": [{"k": len(g), "grouping": g} for g in groups], "target": "y",
            "classifier": {"preset": "svm"}, "scoring": "accuracy", "alpha": 0.05,
            "n_search": 20, "n_test": 40, "random_state": 0}


def _given(table: pd.DataFrame, recipe: ReleaseRecipe) -> GroupingArtefact:
    art = GroupingArtefact.from_result(_result([GROUPS]), table,
                                       created_at="2026-01-01T00:00:00Z")
    return dataclasses.replace(art, release={"status": "given",
                                             "recipe": recipe.to_dict()})


@pytest.fixture(scope="module")
def synthesised():
    table = _interaction_table()
    recipe, report = fit_recipe(table, target="y", grouping=GROUPS, method="synthesise",
                                random_state=3)
    return table, recipe, report


def test_the_fit_synthesises_the_coarsened_pair_and_keeps_the_rest(synthesised):
    _, recipe, report = synthesised
    assert [s["method"] for s in recipe.steps] == ["synthesise"]
    assert recipe.steps[0]["columns"] == ["a", "b"]
    assert report[0]["remedy"] == "synthesised (gaussian_copula)"
    assert recipe.is_synthesised(["a", "b"]) and not recipe.is_synthesised(["c"])


def test_local_suppression_leaves_a_synthesised_group_alone(synthesised):
    """Every synthetic tuple is unique: counted as real ones, every row would be
    suppressed. The group is exempt; the categorical group is still counted."""
    table, recipe, _ = synthesised
    rare = table.assign(c=np.where(np.arange(len(table)) < 3, "rare", table["c"]))
    domain, found = release_domain(rare, recipe, "y", Grouping(GROUPS))
    assert domain[["a", "b"]].notna().all().all()
    by_group = {tuple(g["columns"]): g["suppressed_rows"] for g in found.groups}
    assert by_group[("a", "b")] == 0 and by_group[("c",)] == 3
    # drawn at the column's resolution (4 decimals), not the people's own values
    assert np.allclose(domain["a"], domain["a"].round(4))
    assert sorted(domain["a"]) != sorted(table["a"])
    assert len(set(domain["a"]) & set(table["a"])) < 0.5 * len(table)


def test_the_gate_passes_the_synthesised_release_and_judges_its_distance(synthesised):
    table, recipe, _ = synthesised
    art = _given(table, recipe)
    staged = make_surrogate(table, art, random_state=4)
    r = validate_surrogate(table, staged, art, random_state=0,
                           policy={"max_accuracy_drop": 0.1})
    assert r.success, r.failed
    close = next(e for e in r.expectations if e.name == CLOSENESS)
    (group,) = close.details["groups"]
    assert group["columns"] == ["a", "b"] and group["exact_copies"] == 0.0


def test_the_distance_check_refuses_a_model_that_copies(synthesised):
    """A contingency step whose cells are the reference's own tuples (one row each)
    draws real tuples: the distance check must refuse it (it exists to catch a model
    that copies)."""
    table, recipe, _ = synthesised
    step = dict(recipe.steps[0])
    values = {c: sorted(table[c].unique().tolist()) for c in ("a", "b")}
    index = {c: {v: i + 1 for i, v in enumerate(values[c])} for c in values}
    cells = []
    for c in step["classes"]:
        rows = table[table["y"] == c]
        cells.append({"tuples": [[index["a"][a], index["b"][b]]
                                 for a, b in zip(rows["a"], rows["b"])],
                      "weights": [1.0] * len(rows)})
    step.update(model="contingency", correlation=None, counts=cells,
                levels=[{"kind": "values", "values": values[c], "missing": False}
                        for c in ("a", "b")])
    copying = dataclasses.replace(recipe, steps=(step,))
    art = _given(table, copying)
    staged = make_surrogate(table, art, random_state=4)
    r = validate_surrogate(table, staged, art, random_state=0,
                           policy={"max_accuracy_drop": 0.1})
    close = next(e for e in r.expectations if e.name == CLOSENESS)
    assert not close.success and not r.success
    assert close.details["groups"][0]["exact_copies"] > 0.5


def test_a_suite_without_synthesis_has_no_distance_check():
    from astrid_airflow.gate import build_suite

    table = _interaction_table(400)
    recipe, _ = fit_recipe(table, target="y", grouping=GROUPS, k=5)
    names = [e["type"] for e in build_suite(_given(table, recipe))["expectations"]]
    assert CLOSENESS not in names


@pytest.fixture(scope="module")
def chosen():
    table = _interaction_table()
    policy = GatePolicy(max_accuracy_drop=0.05, attack_n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        art = choose_release(table, _result([GROUPS, [["a"], ["b"], ["c"]]]),
                             policy=policy, random_state=1, progress=False)
    return table, art


def test_the_choice_releases_the_pair_synthesised(chosen):
    """Split, the pair loses the class; binned to its quadrants it keeps it but leaves
    rows intact; synthesised it keeps it: the choice must release the synthesised
    candidate, and the gate pass its file."""
    table, art = chosen
    rel = art.release
    assert rel["status"] == "chosen", rel["reason"]
    chosen = rel["candidates"][rel["chosen"]]
    assert chosen["method"] == "synthesise" and chosen["grouping"] == GROUPS
    others = [c for c in rel["candidates"] if c["method"] != "synthesise"
              and c["grouping"] == GROUPS and "accuracy_drop" in c]
    # binned or microaggregated, the pair either fails a check or loses more
    assert others and all(c["failed"] or c["accuracy_drop"] > chosen["accuracy_drop"]
                          for c in others)
    assert chosen["accuracy_drop"] < 0.05  # the interaction is kept
    staged = make_surrogate(table, art, random_state=5)
    assert validate_surrogate(table, staged, art, random_state=0).success


def test_the_report_names_the_synthesised_groups_and_their_cost(chosen):
    from astrid_airflow.report._sections import tradeoff_html

    html = tradeoff_html(chosen[1].release, "")
    assert "a, b synthesised, accuracy" in html and "kept with the remedies: 0." in html


def test_generalise_keeps_a_synthesised_groups_own_values(synthesised, tmp_path):
    """``astrid generalise`` puts a record into the release's domain for an attacker or
    a held-out test: a synthesised group's draws are no person's, so the record keeps
    its own values there (drawing them by its class would hand over the label)."""
    from astrid_airflow.release import generalise_file

    table, recipe, _ = synthesised
    src, out = tmp_path / "t.parquet", tmp_path / "g.parquet"
    table.to_parquet(src, index=False)
    generalise_file(src, _given(table, recipe), out)
    got = pd.read_parquet(out)
    pd.testing.assert_frame_equal(got[["a", "b", "y"]], table[["a", "b", "y"]])
