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
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow import Grouping, make_surrogate
from astrid_airflow.release._hashing import U64 as _U64
from astrid_airflow.release._hashing import row_hashes, splitmix
from astrid_airflow.release._match_probability import match_probabilities
from astrid_airflow.release._metrics import (
    expected_intact_row_proportion,
    intact_row_proportion,
    largest_group_unique_share,
)
from astrid_airflow.release._surrogate_metrics import surrogate_metrics
from astrid_airflow.release._table_source import table_source

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
    from astrid_airflow.release._match_probability import EXACT_CAP, MU_EXACT, _p_match_chain

    m = np.sort(np.asarray(m, dtype=np.int64), axis=1)
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(m.shape[0])
    if m.shape[1] == 1:
        out[:] = 1.0
        return out
    frac = m / n[:, None]
    single = m[:, 0] == 1
    out[single] = np.prod(frac[single, 1:], axis=1)
    mu = n * np.prod(frac, axis=1)
    tiny = ~single & (mu <= MU_EXACT)
    out[tiny] = mu[tiny]
    chain = ~single & ~tiny & (m[:, 0] <= EXACT_CAP)
    if chain.any():
        out[chain] = _p_match_chain(m[chain], n[chain])
    big = ~single & ~tiny & ~chain
    if big.any():
        out[big] = -np.expm1(-mu[big])
    return out


@pytest.mark.parametrize("block", [7, 1 << 18])
def test_blocked_match_probabilities_are_bit_identical(block, monkeypatch):
    from astrid_airflow.release import _match_probability

    monkeypatch.setattr(_match_probability, "_PROB_ROWS", block)
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


# ------------------------------------------------ one-pass metrics (issue 19): paths

def wide_table(n: int, seed: int) -> pd.DataFrame:
    """Every encoding path of the one-pass metrics: integer codes (small span, nulls,
    -0.0, integer-valued floats), hashes only (wide span, continuous), dictionaries of
    strings and of integers with missing values, dates, and a numeric class."""
    rng = np.random.default_rng(seed)
    ni = pd.array(rng.integers(-5, 5, n), dtype="Int64")
    ni[rng.random(n) < 0.2] = pd.NA
    fi = rng.integers(-3, 3, n).astype(float)
    fi[fi == 0] = -0.0
    fi[rng.random(n) < 0.1] = np.nan
    s = rng.choice(np.array(["p", "q", "", "r"], dtype=object), n)
    s[rng.random(n) < 0.1] = None
    t = pd.DataFrame({
        "ni": ni, "fi": fi, "wide": rng.integers(0, 2**40, n),
        "u": rng.normal(size=n).round(int(rng.integers(0, 3))),
        "s": pd.Series(s, dtype="str"),
        "ci": pd.Categorical(rng.choice([1, 2, 3, None], n)),
        "d": pd.to_datetime(rng.integers(0, 5, n), unit="D"),
        "b": rng.random(n) < 0.3,
        "y": rng.choice([0.5, 1.25, -3.0], n) if seed % 2 else rng.integers(0, 40, n),
    })
    k = max(1, n // 10)
    dup = rng.integers(0, n, 2 * k)
    t.iloc[dup[:k]] = t.iloc[dup[k:]].to_numpy()
    return t.astype({"ni": "Int64", "wide": "int64", "b": "bool"})


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("squeeze", [False, True])
def test_one_pass_paths_match_the_reference(seed, squeeze, monkeypatch, tmp_path):
    # squeeze: tiny code tables and sample, and the general probability path for all
    from astrid_airflow.release import _counting, _hashing, _match_probability

    if squeeze:  # code_cap and BLOCK are read in _hashing and _counting: patched in both
        monkeypatch.setattr(_hashing, "code_cap", lambda n: 12)
        monkeypatch.setattr(_counting, "code_cap", lambda n: 12)
        monkeypatch.setattr(_counting, "_SAMPLE", 40)
        monkeypatch.setattr(_match_probability, "_TINY", 1.0)
        monkeypatch.setattr(_hashing, "BLOCK", 7)
        monkeypatch.setattr(_counting, "BLOCK", 7)
    n = [40, 300, 1000, 2500][seed]
    t = wide_table(n, seed)
    groupings = ["ni;fi;wide;u;s;ci;d;b", "ni,fi;wide,u;s,ci,d,b", "ni,fi,wide,u,s,ci,d,b",
                 "u;ni,s;fi,ci;wide,d,b"]
    grouping = Grouping.parse(groupings[seed])
    s = make_surrogate(t, grouping, target="y", random_state=seed)
    pq.write_table(pa.Table.from_pandas(t, preserve_index=False), tmp_path / "t.parquet",
                   row_group_size=max(1, n // 3))
    pq.write_table(pa.Table.from_pandas(s, preserve_index=False), tmp_path / "s.parquet",
                   row_group_size=max(1, n // 4))
    cols = [*grouping.columns, "y"]
    for a, b in [(t, s), (str(tmp_path / "t.parquet"), str(tmp_path / "s.parquet")),
                 (t, t)]:
        d = surrogate_metrics(a, b, grouping, target="y", utility=False)
        assert d.intact_row_proportion == reference_intact(a, b, cols)
        assert d.expected_intact_row_proportion == pytest.approx(
            reference_expected(a, grouping, "y"), rel=1e-12)
        assert d.largest_group_unique_share == reference_unique_share(a, grouping)


@pytest.mark.parametrize("block", [7, 1 << 16])
def test_encodings_hash_as_row_hashes_and_codes_follow_hashes(block, tmp_path, monkeypatch):
    from astrid_airflow.release import _hashing
    from astrid_airflow.release._hashing import _Column, _column_hash
    from astrid_airflow.release._hashing import read_column as _read_column

    monkeypatch.setattr(_hashing, "BLOCK", block)

    t = wide_table(500, 3)
    t["none"] = pd.Series([None] * 500, dtype=object)  # Arrow's null type
    pq.write_table(pa.Table.from_pandas(t, preserve_index=False), tmp_path / "t.parquet",
                   row_group_size=90)
    parquet = table_source(str(tmp_path / "t.parquet"), "t")
    for c in t.columns:
        want = _column_hash(t[c])
        for col in (_Column(t[c], codes=True), _read_column(parquet, c, codes=True)):
            blocks = np.zeros(0, dtype=np.uint64)
            for lo, z in col.blocks():
                assert lo == blocks.shape[0]
                blocks = np.concatenate([blocks, z])
            np.testing.assert_array_equal(blocks, want)
            h, codes, levels = col.hashes(), col.codes, col.levels
            np.testing.assert_array_equal(h, want)
            if codes is not None:  # equal codes exactly where hashes are equal
                assert codes.min() >= 0 and codes.max() < levels
                pairs = pd.DataFrame({"h": h, "c": codes}).drop_duplicates()
                assert pairs["h"].is_unique and pairs["c"].is_unique


def test_all_distinct_and_share_found_are_exact():
    from astrid_airflow.release._counting import _all_distinct
    from astrid_airflow.release._counting import share_found as _share_found

    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 3000))
        # few distinct top halves: the rows sharing them are compared in full
        top = rng.integers(0, int(rng.choice([2, 50, 2**32])), n, dtype=np.uint64)
        low = rng.integers(0, int(rng.choice([3, 2**32])), n, dtype=np.uint64)
        keys = (top << _U64(32)) | low
        if rng.random() < 0.5:
            keys = rng.permutation(np.unique(keys))
        assert _all_distinct(keys) == (np.unique(keys).shape[0] == keys.shape[0])
        pool = rng.integers(0, 2**64, int(rng.integers(1, 4000)), dtype=np.uint64)
        unique = np.unique(rng.choice(pool, n))
        other = rng.choice(pool, int(rng.integers(0, 3000)))
        assert _share_found(unique, other) == np.isin(unique, other).sum() / unique.shape[0]
    # a few top halves shared (compared in full): distinct, then one true duplicate
    keys = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    keys[1:4] = (keys[0] & _U64(0xFFFFFFFF00000000)) | _U64(7) * np.arange(1, 4, dtype=np.uint64)
    assert _all_distinct(keys)
    keys[4000] = keys[2]
    assert not _all_distinct(keys)


def test_coded_counts_by_brute_force(monkeypatch):
    from astrid_airflow.release import _counting

    rng = np.random.default_rng(1)
    done = set()
    for _ in range(300):
        n, levels = int(rng.integers(1, 300)), int(rng.choice([1, 4, 30, 500]))
        n_classes, cap = int(rng.choice([1, 2, 5])), int(rng.choice([8, 40, 10**6]))
        monkeypatch.setattr(_counting, "code_cap", lambda n, cap=cap: cap)
        codes, classes = rng.integers(0, levels, n), rng.integers(0, n_classes, n)
        share = bool(rng.random() < 0.5)
        got = _counting.coded_counts(codes.copy(), levels, classes, n_classes, share, True)
        if got is None:  # too many repeated values for this cap: hashes count instead
            done.add("refused")
            continue
        done.add("remapped" if levels * n_classes > cap else "direct")
        per_value = pd.Series(codes).map(pd.Series(codes).value_counts()).to_numpy()
        pairs = pd.Series(list(zip(codes, classes)))
        per_pair = pairs.map(pairs.value_counts()).to_numpy()
        assert got[1] == (np.count_nonzero(per_value == 1) / n if share else None)
        if per_pair.max() == 1:
            assert got[0] is None
        else:
            np.testing.assert_array_equal(got[0], per_pair)
    assert done == {"refused", "remapped", "direct"}


@pytest.mark.parametrize("n", [0, 5, 1 << 16, (1 << 16) + 3, 200_001])
def test_blocked_splitmix_is_bit_identical(n):
    rng = np.random.default_rng(n)
    x = rng.integers(0, 2**64, n, dtype=np.uint64)
    z = x + _U64(0x9E3779B97F4A7C15)  # the textbook finaliser, whole-array steps
    z ^= z >> _U64(30)
    z *= _U64(0xBF58476D1CE4E5B9)
    z ^= z >> _U64(27)
    z *= _U64(0x94D049BB133111EB)
    z ^= z >> _U64(31)
    np.testing.assert_array_equal(splitmix(x), z)
    y = x.copy()
    splitmix(y, out=y)
    np.testing.assert_array_equal(y, z)


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_the_chain_gives_each_row_the_probability_it_has_alone(data):
    """A row's exact probability depends on its own counts and class size alone: the
    chain over a batch of rows (whose transition matrices are shared by the rows with
    the same class size and group count) gives every row the bits it gets on its own."""
    from astrid_airflow.release._match_probability import EXACT_CAP, _p_match_chain

    rows = data.draw(st.integers(1, 40))
    groups = data.draw(st.integers(2, 6))
    sizes = data.draw(st.lists(st.integers(2, 150), min_size=1, max_size=3))
    n = np.array(data.draw(st.lists(st.sampled_from(sizes), min_size=rows, max_size=rows)))
    m = np.array([[data.draw(st.integers(1, min(int(c), EXACT_CAP if g == 0 else int(c))))
                   for g in range(groups)] for c in n])
    m = np.sort(m, axis=1)
    batch = _p_match_chain(m, n)
    alone = np.array([_p_match_chain(m[i:i + 1], n[i:i + 1])[0] for i in range(rows)])
    np.testing.assert_array_equal(batch, alone)
