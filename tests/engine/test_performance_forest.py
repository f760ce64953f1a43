"""The rf preset's lean forest is scikit-learn's randomForest-style forest, only faster."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from astrid_airflow import ParameterError, make_classifier, make_synthetic
from astrid_airflow.engine._classifiers import classifier_spec
from astrid_airflow.engine._forest import (
    RandomForest,
    default_backend,
    grow_tree,
    onedal_available,
)


def _data(seed, n=300, m=6, k=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).round(1).astype(np.float32)  # ties, as in real data
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int) + (X[:, 3] > 1) * (k - 2)
    return X, y


@pytest.mark.parametrize("seed", range(4))
def test_each_tree_is_the_decision_tree_sklearn_grows(seed):
    X, y = _data(seed)
    counts = np.bincount(np.random.default_rng(seed).integers(0, len(y), len(y)),
                         minlength=len(y)).astype(np.float64)
    ref = DecisionTreeClassifier(max_features=2, random_state=seed).fit(
        X, y, sample_weight=counts)
    tree = grow_tree(X, y.reshape(-1, 1).astype(np.float64), counts,
                     np.array([3], dtype=np.intp), 2, np.random.RandomState(seed))
    assert tree.node_count == ref.tree_.node_count
    np.testing.assert_array_equal(tree.feature, ref.tree_.feature)
    np.testing.assert_array_equal(tree.threshold, ref.tree_.threshold)
    np.testing.assert_array_equal(tree.value, ref.tree_.value)


def test_forest_is_reproducible_and_seed_dependent():
    X, y = _data(0)
    a = RandomForest(30, 2, random_state=1).fit(X, y).predict_proba(X)
    b = RandomForest(30, 2, random_state=1).fit(X, y).predict_proba(X)
    c = RandomForest(30, 2, random_state=2).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_allclose(a.sum(axis=1), 1.0)
    assert len(RandomForest(30, 2, random_state=1).fit(X, y).trees_) == 30


def test_lean_and_sklearn_backends_agree_in_distribution():
    # Same algorithm, different random numbers: held-out accuracies over seeds agree.
    t = make_synthetic(150, random_state=0)
    X, y = t[["a1", "a2", "a3", "a4"]].to_numpy(), t["class"].to_numpy()
    acc = {}
    for backend in ["lean", "sklearn"]:
        acc[backend] = np.array([
            (RandomForest(60, 2, backend=backend, random_state=s).fit(X[::2], y[::2])
             .predict(X[1::2]) == y[1::2]).mean() for s in range(12)])
    assert abs(acc["lean"].mean() - acc["sklearn"].mean()) < 0.03
    assert acc["lean"].mean() > 0.75  # the forest learns the interaction


def test_rf_preset_uses_the_default_backend_with_paper_settings():
    model = make_classifier("rf", n_attributes=10).named_steps["model"]
    assert isinstance(model, RandomForest)
    expected = "onedal" if onedal_available() else "lean"
    assert default_backend() == expected
    assert (model.n_estimators, model.max_features, model.backend) == (500, 3, expected)
    # results and artefacts say which forest ran; an explicit choice wins
    assert classifier_spec("rf")["backend"] == expected
    assert classifier_spec("rf", {"backend": "lean"})["backend"] == "lean"
    assert make_classifier("rf", params={"backend": "lean"}).named_steps["model"].backend \
        == "lean"
    assert "backend" not in classifier_spec("svm")


def test_unknown_backend_and_missing_onedal():
    X, y = _data(0, n=40)
    with pytest.raises(ParameterError, match="Unknown random forest backend"):
        RandomForest(3, backend="gpu").fit(X, y)
    if not onedal_available():
        with pytest.raises(ParameterError, match="scikit-learn-intelex"):
            RandomForest(3, backend="onedal").fit(X, y)


@pytest.mark.skipif(not onedal_available(), reason="scikit-learn-intelex not installed")
def test_onedal_backend_is_a_forest_of_the_same_quality():
    t = make_synthetic(150, random_state=0)
    X, y = t[["a1", "a2", "a3", "a4"]].to_numpy(), t["class"].to_numpy()
    acc = {b: np.mean([(RandomForest(60, 2, backend=b, random_state=s).fit(X[::2], y[::2])
                        .predict(X[1::2]) == y[1::2]).mean() for s in range(8)])
           for b in ["lean", "onedal"]}
    assert abs(acc["lean"] - acc["onedal"]) < 0.04
