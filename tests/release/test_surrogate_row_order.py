"""A release publishes its rows in a random order (docs/privacy.md, first section).

Before, row i of a surrogate carried the true class of row i of the reference table, so
whoever knew the reference's row order read every class. These tests check that the
published order carries nothing of the source order, that the release is exactly
"class at sigma(j), group g at pi_g(sigma(j))", and that the seed conventions held.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.stats import spearmanr

from astrid_airflow import goldeneye_permute, make_surrogate, shuffle_file
from astrid_airflow.engine import (
    _permutation,
    group_permutations,
    pandas_class_codes,
    release_permutations,
    row_order,
    seed_of_copies,
)

GROUPING = "pos;a,b;c"


def sorted_reference(n: int = 4000, n_classes: int = 8, seed: int = 0) -> pd.DataFrame:
    """A reference table sorted by class (the worst case: order = class), with its
    source position as an attribute of its own group."""
    rng = np.random.default_rng(seed)
    y = np.sort(rng.integers(0, n_classes, n))
    a = rng.normal(size=n)
    return pd.DataFrame({"pos": np.arange(n), "a": a, "b": a + rng.normal(size=n),
                         "c": rng.choice(["u", "v", "w"], n), "y": y})


def test_release_is_class_at_sigma_and_groups_at_pi_of_sigma():
    t = sorted_reference(500)
    s = make_surrogate(t, GROUPING, target="y", random_state=3)
    seed = seed_of_copies(3, 1)[0]
    codes = pandas_class_codes(t["y"], "y")
    sigma = row_order(len(t), 3, seed)
    pi = group_permutations(codes, 3, seed_of_copies(3, 1)[0])  # class in place
    np.testing.assert_array_equal(s["y"], t["y"].to_numpy()[sigma])
    np.testing.assert_array_equal(s["pos"], pi[0][sigma])
    np.testing.assert_array_equal(s["a"], t["a"].to_numpy()[pi[1][sigma]])
    np.testing.assert_array_equal(s["c"], t["c"].to_numpy()[pi[2][sigma]])
    # release_permutations is that composition, and sigma is child k of the copy seed
    rows, composed = release_permutations(codes, 3, seed_of_copies(3, 1)[0])
    np.testing.assert_array_equal(rows, sigma)
    np.testing.assert_array_equal(composed, pi[:, sigma])
    child = seed_of_copies(3, 1)[0].spawn(4)[3]
    expected = np.arange(len(t), dtype=np.int32)
    np.random.default_rng(child).shuffle(expected)
    np.testing.assert_array_equal(sigma, expected)
    # goldeneye_permute (the paper's permutation) is the same rows, class in place
    g = goldeneye_permute(t, target="y", grouping=GROUPING, random_state=3)
    pd.testing.assert_frame_equal(s, g.iloc[sigma].set_axis(t.index))


def test_output_position_carries_no_source_position():
    t = sorted_reference()
    n = len(t)
    s = make_surrogate(t, GROUPING, target="y", random_state=1)
    # Without the row order both correlations are ~1 (the reference is sorted by class).
    assert abs(goldeneye_permute(t, target="y", grouping=GROUPING, random_state=1)
               ["pos"].corr(pd.Series(np.arange(n)), method="spearman")) > 0.9
    # Under a uniform row order the rank correlation is ~N(0, 1/(n-1)): 5 sd.
    bound = 5 / np.sqrt(n - 1)
    assert abs(spearmanr(np.arange(n), s["pos"])[0]) < bound
    assert abs(spearmanr(np.arange(n), s["y"])[0]) < bound


def test_class_sequence_of_the_reference_is_not_preserved():
    t = sorted_reference()
    s = make_surrogate(t, GROUPING, target="y", random_state=2)
    # Knowing the reference's order, one reads a row's class no better than by chance:
    # the share of positions with the reference's class is sum_c p_c^2 (+- 5 sd).
    p = t["y"].value_counts(normalize=True).to_numpy()
    chance = float(np.sum(p ** 2))
    hits = float(np.mean(s["y"].to_numpy() == t["y"].to_numpy()))
    assert abs(hits - chance) < 5 * np.sqrt(chance * (1 - chance) / len(t))
    # and the published class column is not sorted any more
    assert np.count_nonzero(np.diff(s["y"].to_numpy())) > len(t) / 4


def test_seed_determinism_copy_zero_and_thread_invariance(monkeypatch):
    t = sorted_reference(3000)
    one = make_surrogate(t, GROUPING, target="y", random_state=9)
    pd.testing.assert_frame_equal(one, make_surrogate(t, GROUPING, target="y",
                                                      random_state=9))
    three = make_surrogate(t, GROUPING, target="y", random_state=9, n_copies=3)
    pd.testing.assert_frame_equal(three[0], one)  # copy 0 == the single copy
    assert not np.array_equal(three[1]["y"], three[2]["y"])  # own row order per copy
    for threads in (1, 3):
        monkeypatch.setattr(_permutation, "THREADS", threads)
        pd.testing.assert_frame_equal(
            make_surrogate(t, GROUPING, target="y", random_state=9), one)


def test_row_order_ignores_children_already_spawned():
    seed = np.random.SeedSequence(5)
    before = row_order(100, 2, seed)
    seed.spawn(7)
    np.testing.assert_array_equal(row_order(100, 2, seed), before)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_shuffle_file_publishes_the_same_order(tmp_path, monkeypatch, fmt):
    t = sorted_reference(2500)
    src = tmp_path / "in.parquet"
    t.to_parquet(src)
    monkeypatch.setattr("astrid_airflow.release._surrogate.CHUNK_ROWS", 700)
    outs = []
    for threads in (1, 2):
        monkeypatch.setattr(_permutation, "THREADS", threads)
        out = tmp_path / f"o{threads}.{fmt}"
        shuffle_file(src, GROUPING, out, target="y", random_state=4)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    got = pd.read_parquet(tmp_path / f"o1.{fmt}") if fmt == "parquet" else \
        pd.read_csv(tmp_path / f"o1.{fmt}")
    expected = make_surrogate(t, GROUPING, target="y", random_state=4)
    np.testing.assert_array_equal(got["y"], expected["y"])
    np.testing.assert_array_equal(got["pos"], expected["pos"])
    assert abs(spearmanr(np.arange(len(t)), got["pos"])[0]) < 5 / np.sqrt(len(t) - 1)


def test_arrow_release_has_the_same_order():
    t = sorted_reference(800)
    arrow = pa.Table.from_pandas(t, preserve_index=False)
    s = make_surrogate(arrow, GROUPING, target="y", random_state=6)
    pd.testing.assert_frame_equal(
        s.to_pandas(), make_surrogate(t, GROUPING, target="y", random_state=6))
