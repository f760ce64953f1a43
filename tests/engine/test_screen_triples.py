"""The triple screen (issue 50): three-way interactions given the class that no pair
shows, such as a parity of three attributes, join one block of the screen."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow import ParameterError, astrid, make_planted
from astrid_airflow.engine._screen import (
    ALPHA,
    blocks_of,
    no_three_way_g,
    screen_pairs,
    screen_triples,
)

PARITY = ["q0a", "q0b", "q0c"]


@pytest.fixture(scope="module")
def planted():
    table, groups = make_planted(20_002, 14, n_parity=1, random_state=3)
    return table.drop(columns="class"), table["class"].to_numpy(), groups


def _names(X: pd.DataFrame, blocks: list[list[int]]) -> list[list[str]]:
    return [[X.columns[i] for i in b] for b in blocks]


def test_every_pair_of_the_parity_triple_is_independent_given_the_class(planted):
    X, y, groups = planted
    assert groups[-1] == PARITY
    p = screen_pairs(X, y)
    idx = [X.columns.get_loc(c) for c in PARITY]
    assert all(p[i, j] >= ALPHA for i in idx for j in idx if i < j)  # the pairs miss it
    assert PARITY not in _names(X, blocks_of(p))


def test_the_triple_screen_puts_the_parity_triple_in_one_block(planted):
    X, y, _ = planted
    pair_blocks = blocks_of(screen_pairs(X, y))
    found = screen_triples(X, y, pair_blocks)
    names = [sorted(X.columns[[i, j, k]]) for _, i, j, k in found["found"]]
    assert names == [sorted(PARITY)], names  # the parity, and nothing else of the noise
    assert found["tested"] > 0 and found["threshold"] == ALPHA / found["tested"]
    blocks = _names(X, blocks_of(screen_pairs(X, y), [t[1:] for t in found["found"]]))
    assert PARITY in blocks


def test_pairwise_dependence_is_not_a_three_way_interaction():
    # a chain u - v - w (each pair correlated, no three-way term) and independent noise:
    # the no-three-way model fits it, so no triple is found
    rng = np.random.default_rng(0)
    n = 20_000
    u = rng.normal(size=n)
    v = 0.6 * u + 0.8 * rng.normal(size=n)
    w = 0.6 * v + 0.8 * rng.normal(size=n)
    X = pd.DataFrame({"u": u, "v": v, "w": w, "z": rng.normal(size=n),
                      "cat": np.array(["a", "b", "c"])[rng.integers(0, 3, n)]})
    y = rng.integers(0, 2, n)
    blocks = [[i] for i in range(X.shape[1])]  # as if the pairs had found nothing
    assert screen_triples(X, y, blocks)["found"] == []


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 4), st.integers(2, 4), st.integers(2, 4))
def test_a_table_with_no_three_way_term_has_g_zero(seed, a, b, c):
    # n_ijk = x_ij * y_ik * z_jk is in the no-three-way family: IPF recovers it exactly
    rng = np.random.default_rng(seed)
    x, y, z = rng.uniform(1, 50, (a, b)), rng.uniform(1, 50, (a, c)), rng.uniform(1, 50, (b, c))
    table = x[:, :, None] * y[:, None, :] * z[None, :, :]
    g, df = no_three_way_g(table[None])
    assert g[0] == pytest.approx(0.0, abs=1e-6 * table.sum())
    assert df[0] == (a - 1) * (b - 1) * (c - 1)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_g_is_never_negative_and_a_parity_table_is_far_from_the_model(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 30, (3, 4, 4, 4)).astype(float)
    g, _ = no_three_way_g(counts)
    assert (g >= -1e-9).all()
    parity = np.fromfunction(lambda i, j, k: ((i + j + k) % 2 == 0) * 100.0 + 1, (2, 2, 2))
    assert no_three_way_g(parity[None])[0][0] > 100


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 9).flatmap(lambda m: st.tuples(
    st.just(m), st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, m - 1)),
                         max_size=6),
    st.lists(st.tuples(*(st.integers(0, m - 1),) * 3), max_size=4))))
def test_blocks_partition_the_attributes_and_keep_every_pair_and_triple_together(case):
    m, pairs, triples = case
    p = np.ones((m, m))
    for i, j in pairs:
        if i != j:
            p[i, j] = p[j, i] = ALPHA / 10
    blocks = blocks_of(p, triples)
    assert sorted(i for b in blocks for i in b) == list(range(m))
    where = {i: n for n, b in enumerate(blocks) for i in b}
    assert all(where[i] == where[j] for i, j in pairs)
    assert all(where[i] == where[j] == where[k] for i, j, k in triples)
    # a coarsening of the pair screen's blocks
    assert all(any(set(b0) <= set(b) for b in blocks) for b in [blocks_of(p)] for b0 in b)


def test_the_search_records_the_triples_and_keeps_the_parity_in_one_block():
    # the large-table path screens by itself; nb on a 2,000-row sample keeps this short
    # (the hgb search learning the parity: benchmarks/bench_screen_auto.py --parity)
    table, _ = make_planted(20_002, 12, n_parity=1, random_state=5)
    result = astrid(table, target="class", classifier="nb", sample=2_000, n_search=2,
                    n_test=2, random_state=0)
    triples = result.screen["triples"]
    assert triples["tested"] > 0 and triples["n_found"] >= 1
    assert sorted(PARITY) in [sorted(t[:3]) for t in triples["found"]]
    assert any(set(PARITY) <= set(b) for b in result.screen["blocks"])
    assert result.estimate["screen_triples"] == {"tested": triples["tested"],
                                                 "found": triples["n_found"]}


def test_make_planted_refuses_a_bad_parity_count():
    with pytest.raises(ParameterError, match="n_parity"):
        make_planted(100, 20, n_parity=-1)
    default, _ = make_planted(200, 20, random_state=0)
    assert not any(c.startswith("q") for c in default.columns)  # none unless asked


def test_classes_too_sparse_for_the_test_leave_nothing_tested():
    # fewer than 640 rows (10 per cell of the 4 x 4 x 4 table) in every class
    table, _ = make_planted(1_000, 12, n_parity=1, random_state=0)
    X, y = table.drop(columns="class"), table["class"].to_numpy()
    out = screen_triples(X, y, [[i] for i in range(X.shape[1])])
    assert out == {"tested": 0, "threshold": ALPHA, "found": []}


def _shape(kind: str, rng: np.random.Generator, n: int = 6_000):
    """A three-way interaction no pair shows, of another shape than make_planted's."""
    y = rng.integers(0, 3 if kind == "categorical, 3 classes" else 2, n)
    sign, flip = np.where(y == 0, 1, -1), np.where(rng.random(n) < 0.9, 1, -1)
    if kind.startswith("categorical"):  # (a + b + class) mod 3, 80 % of the time
        a, b = rng.integers(0, 3, n), rng.integers(0, 3, n)
        c = np.where(rng.random(n) < 0.8, (a + b + y) % 3, rng.integers(0, 3, n))
        levels = np.array(["x", "y", "z"])
        cols = {"a": levels[a], "b": levels[b], "c": levels[c]}
    elif kind == "mixed":  # two numeric signs and a yes/no column
        a, b = rng.normal(size=n), rng.normal(size=n)
        cols = {"a": a, "b": b, "c": np.where(sign * np.sign(a) * np.sign(b) * flip > 0,
                                              "yes", "no")}
    else:  # skewed columns around their medians, 5 % missing in one
        a, b = rng.lognormal(size=n), rng.lognormal(size=n)
        c = sign * np.sign(a - np.median(a)) * np.sign(b - np.median(b)) * flip * \
            np.abs(rng.normal(size=n))
        a[rng.random(n) < 0.05] = np.nan
        cols = {"a": a, "b": b, "c": c}
    noise = {f"n{i}": rng.normal(size=n) for i in range(12)}
    return pd.DataFrame({**cols, **noise}), y


@pytest.mark.parametrize("kind", ["categorical, 2 classes", "categorical, 3 classes",
                                  "mixed", "skewed with missing values"])
def test_the_triple_screen_finds_interactions_of_other_shapes(kind):
    X, y = _shape(kind, np.random.default_rng(1))
    p = screen_pairs(X, y)
    assert all(p[i, j] >= ALPHA for i in range(3) for j in range(i + 1, 3))
    found = screen_triples(X, y, blocks_of(p))["found"]
    assert [sorted(X.columns[[i, j, k]]) for _, i, j, k in found] == [["a", "b", "c"]]
