"""Published bin values say nothing about one person, and IDs are never binned.

A recipe's bin edges and representatives are published (the file, the stored recipe,
the validation JSON). A value that between 1 and k - 1 reference rows hold tells that
someone with that exact value is in the table; a near-unique integer ID (one duplicate
slipped in) was once binned into bins whose representatives were real IDs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import apply_recipe, fit_recipe
from astrid_airflow.pipeline._fit_recipe import disclosing_bin_columns, identifier_columns


def _held_by_few(table: pd.DataFrame, recipe, k: int) -> list[tuple[str, float, int]]:
    """Every published bin edge or value held by 1..k-1 reference rows."""
    bad = []
    for step in recipe.to_dict()["steps"]:
        if step["method"] != "bins":
            continue
        counts = pd.to_numeric(table[step["column"]]).value_counts()
        for x in [*step["edges"], *step["values"]]:
            held = int(counts.get(float(x), counts.get(x, 0)))
            if 0 < held < k:
                bad.append((step["column"], x, held))
    return bad


_COLUMN = st.sampled_from(["ids", "dense", "counts", "floats", "ties"])


def _column(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "ids":  # consecutive integers: every value one row's
        return rng.permutation(np.arange(1000, 1000 + n))
    if kind == "dense":  # integers about as many as rows
        return rng.integers(0, n, n)
    if kind == "counts":  # a small integer range, values shared
        return rng.integers(0, 40, n)
    if kind == "ties":  # one-decimal measurements with ties
        return np.round(rng.normal(50, 10, n), 1)
    return rng.normal(size=n)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(60, 400), st.integers(2, 8), _COLUMN, _COLUMN,
       st.sampled_from(["a;b", "a,b"]))
def test_no_published_bin_value_is_held_by_fewer_than_k_rows(seed, n, k, kind_a, kind_b,
                                                             grouping):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    t = pd.DataFrame({"a": _column(kind_a, n, rng), "b": _column(kind_b, n, rng), "y": y})
    recipe, _ = fit_recipe(t, target="y", grouping=grouping, k=k)
    assert _held_by_few(t, recipe, k) == []
    assert disclosing_bin_columns(t, recipe.to_dict()["steps"], k) == []


def test_an_integer_id_with_one_duplicate_is_suppressed_not_binned():
    rng = np.random.default_rng(0)
    n = 768
    ids = np.arange(100_000, 100_000 + n)
    ids[5] = ids[6]  # one duplicated ID must not hide the column
    t = pd.DataFrame({"patient_id": rng.permutation(ids), "x": rng.normal(size=n),
                      "y": rng.integers(0, 2, n)})
    assert identifier_columns(t, ["patient_id", "x"]) == ["patient_id"]
    recipe, report = fit_recipe(t, target="y", grouping="patient_id;x", k=5)
    steps = {s["column"]: s for s in recipe.to_dict()["steps"]}
    assert steps["patient_id"]["method"] == "suppress" and steps["patient_id"]["keep"] == []
    published = apply_recipe(t, recipe)
    assert published["patient_id"].isna().all()
    assert "fully suppressed" in report[0]["remedy"]


def test_a_bin_with_no_safe_value_suppresses_its_column():
    # near-unique integers that are not flagged as IDs (80 % distinct): every integer
    # of a bin's range is held by fewer than k rows, so no bin value is safe to publish
    rng = np.random.default_rng(3)
    n = 500
    values = rng.permutation(np.r_[np.arange(400), np.arange(100)])
    t = pd.DataFrame({"amount": values, "y": rng.integers(0, 2, n)})
    assert identifier_columns(t, ["amount"]) == []
    recipe, _ = fit_recipe(t, target="y", grouping="amount", k=5)
    assert _held_by_few(t, recipe, 5) == []
