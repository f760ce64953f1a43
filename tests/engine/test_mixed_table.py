"""``make_mixed_table``: the shape of a data platform's table, deterministic for a seed,
the class planted only jointly in each planted group (issue 33). A second or two."""

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import ParameterError, make_mixed_table


@pytest.fixture(scope="module")
def mixed():
    return make_mixed_table(20_000, random_state=0)


def test_shape_dtypes_and_levels(mixed):
    table, planted = mixed
    assert table.shape == (20_000, 31) and table.columns[-1] == "class"
    numeric = [c for c in table.columns[:-1] if pd.api.types.is_numeric_dtype(table[c])]
    text = [c for c in table.columns[:-1] if pd.api.types.is_string_dtype(table[c])]
    assert len(numeric) == 18 and len(text) == 12
    assert all(isinstance(table[c].iloc[0], str) for c in text)  # string labels
    levels = {c: table[c].nunique() for c in text}
    assert min(levels.values()) == 2 and max(levels.values()) == 300, levels
    assert table["age"].between(18, 90).all() and table["age"].dtype == np.int64
    assert (table["amount"] == 0).mean() > 0.03 and (table["amount"] >= 0).all()
    for ratio in ("utilisation", "discount_ratio", "share_online", "completion_rate"):
        assert table[ratio].between(0, 1).all(), ratio
    for count in ("n_orders", "n_logins", "tenure_months"):
        assert table[count].dtype == np.int64 and (table[count] >= 0).all(), count
    assert set(table["class"].unique()) == {0, 1} and 0.3 < table["class"].mean() < 0.5
    assert planted == [["amount", "region"], ["tenure_months", "utilisation"],
                       ["channel", "product"]]
    assert {c for g in planted for c in g} <= set(table.columns)


def test_levels_are_skewed(mixed):
    table, _ = mixed
    shares = table["postcode_area"].value_counts(normalize=True)
    assert shares.iloc[0] > 20 * shares.iloc[-1]  # Zipf-like: a head and a thin tail


def test_deterministic_for_a_seed_and_different_for_another(mixed):
    table, _ = mixed
    pd.testing.assert_frame_equal(make_mixed_table(20_000, random_state=0)[0], table)
    assert not make_mixed_table(20_000, random_state=1)[0].equals(table)


def test_each_planted_group_carries_the_class_jointly(mixed):
    """Each planted column alone is (nearly) independent of the class; its group is not."""
    table, _ = mixed
    y = table["class"].to_numpy()
    up = np.log(table["amount"].where(table["amount"] > 0)) > 3.5
    polarity = table.groupby("region")["class"].transform("mean")  # region alone: ~flat
    assert polarity.std() < 0.05
    # tenure x utilisation: the sign of their rank correlation flips with the class
    r = [table[y == k][["tenure_months", "utilisation"]].corr("spearman").iloc[0, 1]
         for k in (0, 1)]
    assert r[0] > 0.6 and r[1] < -0.6
    assert abs(table.loc[up.to_numpy(), "class"].mean() - y.mean()) < 0.03  # amount alone


@pytest.mark.parametrize("bad", [0, 7, -1, 2.5, "100", True, None])
def test_bad_row_counts_are_refused(bad):
    with pytest.raises(ParameterError, match="n_rows"):
        make_mixed_table(bad)
