"""The grouping test and the ASTRID search: formulas, invariants, errors."""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, balanced_accuracy_score, f1_score

from astrid_airflow import (
    AstridResult,
    DataError,
    Grouping,
    ParameterError,
    astrid,
    make_classifier,
    make_synthetic,
    test_grouping,
)
from astrid_airflow.engine._forest import default_backend
from astrid_airflow.engine._scoring import score
from astrid_airflow.engine._test import empirical_p_value


@pytest.fixture(scope="module")
def synthetic():
    return make_synthetic(random_state=0)


def test_empirical_p_value_closed_forms():
    assert empirical_p_value(0.9, np.array([])) == 1.0
    assert empirical_p_value(0.9, np.full(99, 0.5)) == pytest.approx(1 / 100)  # best attainable
    assert empirical_p_value(0.9, np.full(99, 0.95)) == 1.0
    # ties count as "at least as extreme"
    assert empirical_p_value(0.8, np.array([0.8, 0.7, 0.9, 0.6])) == pytest.approx(3 / 5)
    # float rounding of equal counts is not a difference
    assert empirical_p_value(0.1 + 0.2, np.array([0.3])) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_scores_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    y, p = rng.integers(0, 4, 200), rng.integers(0, 4, 200)
    assert score("accuracy", y, p, 4) == pytest.approx(accuracy_score(y, p))
    assert score("balanced_accuracy", y, p, 4) == pytest.approx(balanced_accuracy_score(y, p))
    assert score("f1_macro", y, p, 4) == pytest.approx(f1_score(y, p, average="macro"))


def test_grouping_test_p_value_is_the_formula(synthetic):
    r = test_grouping(synthetic, target="class", grouping="a1,a2;a3;a4", n_permutations=40,
                      random_state=3)
    assert r.null_accuracies.shape == (40,)
    hits = np.sum(r.null_accuracies >= r.accuracy - 1e-12)
    assert r.p_value == pytest.approx((1 + hits) / 41)
    assert r.n_fits == 41
    d = r.to_dict()
    assert set(d) >= {"p_value", "accuracy", "null_accuracies"}
    json.dumps(d)


def test_grouping_test_detects_the_interaction(synthetic):
    true = test_grouping(synthetic, target="class", grouping="a1,a2;a3;a4",
                         n_permutations=60, random_state=1)
    broken = test_grouping(synthetic, target="class", grouping="a1;a2;a3;a4",
                           n_permutations=60, random_state=1)
    assert broken.p_value < 0.05 < true.p_value
    assert broken.null_accuracies.mean() < true.null_accuracies.mean() - 0.1


def test_grouping_test_n_jobs_invariance(synthetic):
    kw = dict(target="class", grouping="a1;a2;a3,a4", n_permutations=24, random_state=11)
    a = test_grouping(synthetic, n_jobs=1, **kw)
    b = test_grouping(synthetic, n_jobs=2, **kw)
    c = test_grouping(synthetic, n_jobs=2, backend="threading", **kw)
    np.testing.assert_array_equal(a.null_accuracies, b.null_accuracies)
    np.testing.assert_array_equal(a.null_accuracies, c.null_accuracies)
    assert a.p_value == b.p_value == c.p_value


def test_encode_once_equals_refit_on_permuted_table(synthetic):
    # The preset path permutes encoded rows; a user pipeline refits on permuted raw rows.
    # Both must see the same data (encoding commutes with GoldenEye permutations).
    kw = dict(target="class", grouping="a1;a2;a3;a4", n_permutations=20, random_state=5)
    fast = test_grouping(synthetic, classifier="svm", **kw)
    slow = test_grouping(synthetic, classifier=make_classifier("svm"), **kw)
    assert fast.accuracy == slow.accuracy
    assert np.abs(fast.null_accuracies - slow.null_accuracies).max() <= 2 / 500


def test_astrid_structure_and_fit_count(synthetic):
    r = astrid(synthetic, target="class", n_search=5, n_test=8, random_state=0)
    m = 4
    assert [row.k for row in r.table] == [1, 2, 3, 4]
    assert r.table[0].p is None and r.table[0].acc_ave == r.baseline_accuracy
    assert r.p_og == r.table[-1].p
    assert r.table[-1].grouping == Grouping.singletons(list(r.columns))
    assert all(row.grouping.k == row.k for row in r.table)
    assert sorted(r.order) == ["a1", "a2", "a3", "a4"]
    # sorting (last step free) + 2-splits + T̂ per k + p per k + baseline
    sorting = sum(range(2, m + 1)) * 5
    assert r.n_fits == sorting + (m - 1) * 5 + (m - 1) * 5 + (m - 1) * 8 + 1
    assert r.split == {"train": 500, "search": 250, "test": 250}
    chosen = max([1] + [row.k for row in r.table[1:] if row.p >= r.alpha])
    assert r.k == chosen and r.grouping == r.table[chosen - 1].grouping


def test_astrid_json_round_trip(synthetic):
    r = astrid(synthetic, target="class", n_search=4, n_test=6, random_state=2)
    d = json.loads(json.dumps(r.to_dict()))
    for key in ["grouping", "k", "table", "baseline_accuracy", "p_og", "n_fits", "seconds"]:
        assert key in d
    for row in d["table"]:
        assert set(row) >= {"k", "acc_ave", "acc_min", "acc_max", "sd", "p", "grouping"}
    back = AstridResult.from_dict(d)
    assert back == r or back.to_dict() == r.to_dict()
    assert "acc_ave" in r.format_table()


def test_astrid_n_jobs_invariance(synthetic):
    kw = dict(target="class", n_search=6, n_test=10, random_state=42)
    a = astrid(synthetic, n_jobs=1, **kw).to_dict()
    b = astrid(synthetic, n_jobs=2, **kw).to_dict()
    for d in (a, b):
        d.pop("seconds"), d.pop("estimate")  # timings
    assert a == b


def test_astrid_seed_changes_draws(synthetic):
    a = astrid(synthetic, target="class", n_search=4, n_test=6, random_state=1)
    b = astrid(synthetic, target="class", n_search=4, n_test=6, random_state=2)
    assert a.search_scores != b.search_scores


def test_search_seed_hook_changes_only_the_search(synthetic):
    # Benchmark hook (--search-seed): other search draws, same split and p-value draws.
    kw = dict(target="class", n_search=4, n_test=6, random_state=1)
    base = astrid(synthetic, **kw)
    other = astrid(synthetic, _search_seed=7, **kw)
    assert other.search_scores != base.search_scores
    assert other.split == base.split and other.baseline_accuracy == base.baseline_accuracy
    assert astrid(synthetic, _search_seed=7, **kw).search_scores == other.search_scores


def test_custom_classifier_and_params(synthetic):
    r = test_grouping(synthetic, target="class", grouping="a1,a2;a3;a4",
                      classifier=LogisticRegression(), n_permutations=5, random_state=0)
    assert 0 < r.p_value <= 1
    r = astrid(synthetic.iloc[::5], target="class", classifier="rf",
               classifier_params={"n_estimators": 5}, n_search=2, n_test=3, random_state=0)
    assert r.classifier == {"preset": "rf", "params": {"n_estimators": 5},
                            "backend": default_backend()}
    with pytest.raises(ParameterError, match="Invalid classifier parameters"):
        astrid(synthetic, target="class", classifier="svm",
               classifier_params={"bogus": 1}, n_search=2, n_test=2)


def test_missing_values_and_categoricals_are_handled():
    rng = np.random.default_rng(0)
    n = 120
    t = pd.DataFrame({"x": rng.normal(size=n), "c": rng.choice(["a", "b", None], n),
                      "k": pd.Categorical(rng.choice(["u", "v"], n)),
                      "y": rng.choice(["p", "q"], n)})
    t.loc[::7, "x"] = np.nan
    for clf in ["svm", "nb", "rf"]:
        r = test_grouping(t, target="y", grouping="x;c,k", classifier=clf,
                          classifier_params={"n_estimators": 5} if clf == "rf" else None,
                          n_permutations=3, random_state=0)
        assert 0 < r.p_value <= 1
    assert t["x"].isna().sum() > 0  # the engine never drops or fills the caller's table


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        pytest.param(dict(target="nope"), DataError, "Target column 'nope'", id="unknown target"),
        pytest.param(dict(n_search=0), ParameterError, "n_search", id="zero R'"),
        pytest.param(dict(n_test=-3), ParameterError, "n_test", id="negative R"),
        pytest.param(dict(alpha=1.5), ParameterError, "alpha", id="alpha > 1"),
        pytest.param(dict(alpha=0), ParameterError, "alpha", id="alpha 0"),
        pytest.param(dict(classifier="knn"), ParameterError, "Unknown classifier", id="clf"),
        pytest.param(dict(scoring="auc"), ParameterError, "Unknown scoring", id="scoring"),
        pytest.param(dict(n_jobs=0), ParameterError, "n_jobs", id="n_jobs 0"),
        pytest.param(dict(random_state=-1), ParameterError, "random_state", id="seed"),
    ],
)
def test_astrid_bad_parameters(synthetic, kwargs, error, match):
    args = dict(target="class", n_search=2, n_test=2) | kwargs
    with pytest.raises(error, match=match):
        astrid(synthetic, **args)


def test_astrid_bad_tables(synthetic):
    with pytest.raises(DataError, match="single class"):
        astrid(synthetic.assign(**{"class": 1}), target="class")
    with pytest.raises(DataError, match="fewer than 4 rows"):
        astrid(pd.concat([synthetic, synthetic.iloc[:2].assign(**{"class": 9})]),
               target="class")
    with pytest.raises(DataError, match="empty"):
        astrid(synthetic.iloc[:0], target="class")
    with pytest.raises(DataError, match="at least two attribute"):
        astrid(synthetic[["a1", "class"]], target="class")
    with pytest.raises(DataError, match="missing value"):
        astrid(synthetic.assign(**{"class": synthetic["class"].where(synthetic.a1 > -3)}),
               target="class")
    with pytest.raises(DataError, match="Unreadable file"):
        astrid("/nonexistent/table.csv", target="class")


def test_table_names_a_release_chosen_from_another_k(synthetic):
    # an artefact's result after the privacy-aware choice took another grouping must not
    # call it "the highest k with p >= alpha"
    r = astrid(synthetic.iloc[::4], target="class", n_search=3, n_test=5, random_state=0)
    assert r.learned_k == r.k and "highest k with p >=" in r.format_table()
    singletons = [[c] for c in r.columns]
    released = singletons if r.k < len(r.columns) else [list(r.columns)]
    other = AstridResult.from_dict({**r.to_dict(), "grouping": released,
                                    "k": len(released)})
    text = other.format_table()
    assert f"released grouping (k = {len(released)}, chosen for privacy" in text
    assert f"ASTRID's choice was k = {r.k}," in text
