"""A near-unique integer ID is never binned: one duplicated value must not hide it.

A ``patient_id`` unique but for one duplicate was once binned into bins whose
representatives were real patient IDs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from astrid_airflow import apply_recipe, fit_recipe
from astrid_airflow.pipeline._fit_recipe import identifier_columns


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
    assert apply_recipe(t, recipe)["patient_id"].isna().all()
    assert "fully suppressed" in report[0]["remedy"]


def test_an_integer_measurement_with_repeated_values_is_no_identifier():
    rng = np.random.default_rng(1)
    t = pd.DataFrame({"glucose": rng.integers(40, 200, 768)})
    assert identifier_columns(t, ["glucose"]) == []
