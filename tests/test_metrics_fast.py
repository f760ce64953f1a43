"""The hash-counting metrics against the implementation they replaced (sort-based).

``reference_*`` below are the functions of ``_metrics`` before the speed work (main at
72cbcfc), kept verbatim on top of :func:`row_hashes` (unchanged). Ratios of counts
(intact-row proportion, unique share) must be equal exactly; the expectation is a mean
over the distinct rows, now summed in order of first appearance instead of in order of
the row hash, so it may differ in the last bits: relative tolerance 1e-12.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from astrid_airflow import Grouping, make_surrogate
from astrid_airflow.release._metrics import (
    _U64,
    expected_intact_row_proportion,
    intact_row_proportion,
    largest_group_unique_share,
    match_probabilities,
    row_hashes,
    splitmix,
    surrogate_metrics,
    table_source,
)

pytestmark = pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")


def reference_intact(orig, surr, cols):
    unique = np.unique(row_hashes(orig, cols))
    return float(np.isin(unique, row_hashes(surr, cols)).mean())


def reference_expected(table, grouping, target):
    src = table_source(table, "table")
    if grouping.k == 1:
        return 1.0
    h = row_hashes(src, [target])
    _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
    class_hash, sizes = splitmix(h + _U64(1)), counts[inverse]
    _, first = np.unique(row_hashes(src, [*grouping.columns, target]), return_index=True)
    out = np.empty((first.shape[0], grouping.k), dtype=np.uint32)
    for g, cols in enumerate(grouping.groups):
        key = splitmix(row_hashes(src, cols) ^ class_hash)
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        out[:, g] = counts[inverse[first]]
    return float(match_probabilities(out, sizes[first]).mean())


def reference_unique_share(table, grouping):
    largest = max(grouping.groups, key=len)
    _, inverse, counts = np.unique(row_hashes(table, largest), return_inverse=True,
                                   return_counts=True)
    return float(np.mean(counts[inverse] == 1))


def random_table(n: int, seed: int) -> pd.DataFrame:
    """Duplicates (few levels), NaN and missing strings, a categorical, a bool, 3 classes."""
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n).round(1)
    f[rng.random(n) < 0.1] = np.nan
    s = rng.choice(np.array(["p", "q", "r", "s"], dtype=object), n)
    s[rng.random(n) < 0.1] = None
    t = pd.DataFrame({
        "a": rng.integers(0, 3, n),
        "f": f,
        "s": pd.Series(s, dtype="str"),
        "c": pd.Categorical(rng.choice(list("xyz"), n)),
        "b": rng.random(n) < 0.4,
        "u": rng.normal(size=n),
        "y": rng.choice(["u", "v", "w"], n, p=[0.6, 0.3, 0.1]),
    })
    k = max(1, n // 10)
    dup = rng.integers(0, n, 2 * k)  # whole duplicated rows too
    t.iloc[dup[:k]] = t.iloc[dup[k:]].to_numpy()
    return t.astype({"a": "int64", "f": "float64", "u": "float64", "b": "bool"})


GROUPINGS = ["a,f;s,c;b,u", "a;f;s;c;b;u", "a,f,s,c,b,u", "u;a,f,s;c,b", "a,b;f;s,c,u"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("container", ["pandas", "arrow", "parquet"])
def test_same_values_as_the_sort_based_implementation(seed, container, tmp_path):
    n = [30, 200, 1000, 3000, 57, 500][seed]
    t = random_table(n, seed)
    grouping = Grouping.parse(GROUPINGS[seed % len(GROUPINGS)])
    s = make_surrogate(t, grouping, target="y", random_state=seed)
    cols = [*grouping.columns, "y"]
    if container == "arrow":
        t, s = pa.Table.from_pandas(t, preserve_index=False), \
            pa.Table.from_pandas(s, preserve_index=False)
    elif container == "parquet":
        pq.write_table(pa.Table.from_pandas(t, preserve_index=False), tmp_path / "t.parquet")
        pq.write_table(pa.Table.from_pandas(s, preserve_index=False), tmp_path / "s.parquet")
        t, s = str(tmp_path / "t.parquet"), str(tmp_path / "s.parquet")
    intact = reference_intact(t, s, cols)
    expected = reference_expected(t, grouping, "y")
    share = reference_unique_share(t, grouping)
    assert intact_row_proportion(t, s, columns=cols) == intact
    assert expected_intact_row_proportion(t, grouping, "y") == pytest.approx(expected,
                                                                            rel=1e-12)
    assert largest_group_unique_share(t, grouping) == share
    d = surrogate_metrics(t, s, grouping, target="y", utility=False).to_dict()
    assert d["intact_row_proportion"] == intact
    assert d["expected_intact_row_proportion"] == pytest.approx(expected, rel=1e-12)
    assert d["largest_group_unique_share"] == share
    # The surrogate against itself: every row intact (catches a side hashed differently).
    assert surrogate_metrics(t, t, grouping, target="y",
                             utility=False).intact_row_proportion == 1.0


def reference_match(m, n):
    from astrid_airflow.release._metrics import EXACT_CAP, _p_match_chain

    m = np.sort(np.asarray(m, dtype=np.int64), axis=1)
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(m.shape[0])
    if m.shape[1] == 1:
        out[:] = 1.0
        return out
    frac = m / n[:, None]
    single = m[:, 0] == 1
    out[single] = np.prod(frac[single, 1:], axis=1)
    chain = ~single & (m[:, 0] <= EXACT_CAP)
    if chain.any():
        out[chain] = _p_match_chain(m[chain], n[chain])
    big = ~single & ~chain
    if big.any():
        mu = n[big] * np.prod(frac[big], axis=1)
        out[big] = -np.expm1(-mu)
    return out


@pytest.mark.parametrize("block", [7, 1 << 18])
def test_blocked_match_probabilities_are_bit_identical(block, monkeypatch):
    from astrid_airflow.release import _metrics

    monkeypatch.setattr(_metrics, "_PROB_ROWS", block)
    rng = np.random.default_rng(3)
    n = rng.choice([50, 120, 400], 300)
    kind = rng.integers(0, 4, 300)  # all ones, one 1, chain (2..64), big (> 64)
    m = np.where(kind[:, None] == 0, 1, rng.integers(1, 40, (300, 4)))
    m[kind == 1, 0] = 1
    m[kind == 2] = rng.integers(2, 60, ((kind == 2).sum(), 4))
    m[kind == 3] = rng.integers(65, 100, ((kind == 3).sum(), 4))
    m = np.minimum(m, n[:, None])
    np.testing.assert_array_equal(match_probabilities(m, n), reference_match(m, n))


def test_metrics_do_not_depend_on_the_thread_count(monkeypatch):
    from astrid_airflow.engine import _permutation

    t = random_table(800, 9)
    grouping = Grouping.parse("a;f;s,c;b;u")
    s = make_surrogate(t, grouping, target="y", random_state=1)
    got = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(_permutation, "THREADS", threads)
        got.append(surrogate_metrics(t, s, grouping, target="y", utility=False).to_dict())
    assert got[0] == got[1] == got[2]
