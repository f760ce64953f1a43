"""Invariants of the GoldenEye permutation (paper Sec. 3.2.2, Lemma 1)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow import DataError, goldeneye_indices, goldeneye_permute


def _table(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x": rng.normal(size=n),
        "y": rng.integers(0, 5, n),
        "cat": pd.Categorical(rng.choice(list("abc"), n)),
        "s": rng.choice(["u", "v", None], n),
        "w": rng.normal(size=n),
        "label": rng.choice(["p", "q", "r"], n),
    })


def _txt(series):
    # missing values compare equal to each other in this text form
    return [repr(v) if not pd.isna(v) else "<NA>" for v in series.astype(object)]


def test_per_class_multisets_and_alignment():
    t = _table()
    t.loc[3, "x"] = np.nan
    out = goldeneye_permute(t, target="label", grouping="x,y;cat,s;w", random_state=1)
    assert list(out.columns) == list(t.columns)
    assert (out.dtypes == t.dtypes).all()
    assert out["label"].equals(t["label"])
    for _, idx in t.groupby("label").groups.items():
        for c in ["x", "y", "cat", "s", "w"]:
            a = sorted(_txt(t.loc[idx, c]))
            b = sorted(_txt(out.loc[idx, c]))
            assert a == b, c
    # columns of one group stay aligned: (x, y) pairs are the original pairs within class
    for _, idx in t.groupby("label").groups.items():
        orig = sorted(zip(_txt(t.loc[idx, "x"]), _txt(t.loc[idx, "y"])))
        perm = sorted(zip(_txt(out.loc[idx, "x"]), _txt(out.loc[idx, "y"])))
        assert orig == perm
    assert not out["w"].equals(t["w"])  # it did permute


def test_indices_are_within_class_permutations():
    codes = np.array([0, 1, 0, 2, 1, 0, 2, 2, 1, 0])
    perm = goldeneye_indices(codes, 4, np.random.default_rng(0))
    assert perm.shape == (4, codes.size)
    for row in perm:
        assert sorted(row) == list(range(codes.size))
        assert (codes[row] == codes).all()


def test_indices_uniform_over_within_class_permutations():
    # one class of 3 rows: all 6 permutations equally likely (Lemma 1)
    codes = np.zeros(3, dtype=int)
    rng = np.random.default_rng(123)
    draws = goldeneye_indices(codes, 60000, rng)
    counts = pd.Series([tuple(r) for r in draws]).value_counts()
    assert len(counts) == 6
    assert counts.min() > 9500 and counts.max() < 10500  # 10000 ± 5 sd


def test_groups_permuted_independently():
    codes = np.zeros(1000, dtype=int)
    perm = goldeneye_indices(codes, 2, np.random.default_rng(5))
    # independent uniform permutations agree in about one position on average
    assert (perm[0] == perm[1]).sum() < 10


def test_seed_reproducible():
    t = _table()
    a = goldeneye_permute(t, target="label", grouping="x,y;cat,s;w", random_state=7)
    b = goldeneye_permute(t, target="label", grouping="x,y;cat,s;w", random_state=7)
    pd.testing.assert_frame_equal(a, b)


def test_errors():
    t = _table()
    with pytest.raises(DataError, match="Target column 'nope'"):
        goldeneye_permute(t, target="nope", grouping="x", random_state=0)
    t2 = t.copy()
    t2.loc[0, "label"] = None
    with pytest.raises(DataError, match="missing value"):
        goldeneye_permute(t2, target="label", grouping="x,y;cat,s;w", random_state=0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.integers(1, 5),
       st.integers(0, 2**32 - 1))
def test_property_within_class_permutation(codes, n_groups, seed):
    codes = np.asarray(codes)
    perm = goldeneye_indices(codes, n_groups, np.random.default_rng(seed))
    for row in perm:
        assert np.array_equal(np.sort(row), np.arange(codes.size))
        assert np.array_equal(codes[row], codes)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(2, 80), data=st.data())
def test_a_frame_of_some_output_positions_is_those_rows_of_the_whole(seed, n, data):
    """``shuffle_frame(positions=p)`` is ``shuffle_frame(...).iloc[p]``: the same values,
    dtypes, index and attrs, built without the other rows (issue 33's peak memory)."""
    from astrid_airflow.engine import (
        as_grouping,
        pandas_class_codes,
        release_permutations,
        shuffle_frame,
    )

    t = _table(n, seed).set_index(pd.Index(np.arange(n) * 3 + 7))
    t.attrs["note"] = "kept"
    grouping = as_grouping("x,y;cat,s;w")
    codes = pandas_class_codes(t["label"], "label")
    rows, perms = release_permutations(codes, grouping.k, np.random.SeedSequence(seed))
    positions = np.sort(np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=n,
                                                    unique=True)), dtype=np.int64))
    for order in (rows, None):  # the class gathered too, or kept in place
        whole = shuffle_frame(t, grouping, perms, "label", order)
        part = shuffle_frame(t, grouping, perms, "label", order, positions=positions)
        pd.testing.assert_frame_equal(part, whole.iloc[positions])
        assert part.attrs == whole.attrs
