"""Exact disclosure measures: per group (k, share below k, class disclosure) and per pair
of groups (linked share and its expectation), checked against brute force."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import (
    DataError,
    GroupDisclosure,
    Grouping,
    PairLinkage,
    ParameterError,
    cross_group_linkage,
    disclosure_risk,
    group_disclosure,
    make_surrogate,
    make_synthetic,
    worst_group,
    worst_pair,
)
from astrid_airflow.privacy._linkage_moments import expected_min_hypergeometric

pytestmark = pytest.mark.filterwarnings(
    "ignore::astrid_airflow.release._surrogate.ProtectsNothingWarning")


# ------------------------------------------------------------------------ brute force

def brute_groups(t: pd.DataFrame, target: str, groups, k: int) -> list[tuple]:
    out = []
    for g in groups:
        rows = [tuple(r) for r in t[list(g)].itertuples(index=False)]
        ys = list(t[target])
        eq = Counter(zip(rows, ys))
        classes: dict = {}
        for r, y in zip(rows, ys):
            classes.setdefault(r, set()).add(y)
        n = len(t)
        out.append((tuple(g), min(eq.values()),
                    sum(c for c in eq.values() if c < k) / n,
                    sum(1 for r in rows if len(classes[r]) == 1) / n))
    return out


def brute_linked(o: pd.DataFrame, r: pd.DataFrame, target: str, a, b) -> float:
    def keys(t):
        return Counter(zip(t[list(a)].itertuples(index=False, name=None),
                           t[list(b)].itertuples(index=False, name=None), t[target]))
    ko, kr = keys(o), keys(r)
    return sum(min(c, ko[key]) for key, c in kr.items()) / len(r)


def brute_expected(o: pd.DataFrame, target: str, a, b) -> float:
    """Exact expectation by enumerating every relative permutation within each class
    (the linked count depends only on pi_B o pi_A^-1; classes add up)."""
    total = 0.0
    for _, part in o.groupby(target, sort=False):
        ta = list(part[list(a)].itertuples(index=False, name=None))
        tb = list(part[list(b)].itertuples(index=False, name=None))
        orig = Counter(zip(ta, tb))
        perms = list(itertools.permutations(range(len(part))))
        acc = 0
        for p in perms:
            rel = Counter((ta[i], tb[p[i]]) for i in range(len(part)))
            acc += sum(min(c, orig[key]) for key, c in rel.items())
        total += acc / len(perms)
    return total / len(o)


small_tables = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
        st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n),
        st.lists(st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 1)),
                 min_size=n, max_size=n),
        st.lists(st.integers(0, 2), min_size=n, max_size=n),
        st.lists(st.integers(0, 2), min_size=n, max_size=n),
    )).map(lambda cols: pd.DataFrame({"a": cols[0], "b": cols[1], "c": cols[2],
                                      "d": cols[3], "y": cols[4]}))
groupings = st.sampled_from(["a;b;c;d", "a,b;c;d", "a,b,c;d", "a;b,c,d", "a,d;b,c"])


# ------------------------------------------------------------------------ per group

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=small_tables, text=groupings, k=st.integers(1, 6))
def test_group_measures_equal_brute_force(t, text, k):
    g = Grouping.parse(text)
    got = group_disclosure(t, target="y", grouping=g, k=k)
    want = brute_groups(t, "y", g.groups, k)
    assert [(d.columns, d.k_min) for d in got] == [(w[0], w[1]) for w in want]
    for d, w in zip(got, want):
        assert d.k == k and d.n_rows == len(t)
        assert d.share_below_k == pytest.approx(w[2])
        assert d.class_disclosure_share == pytest.approx(w[3])


def test_group_measures_are_the_same_for_any_surrogate_and_container(tmp_path):
    t = make_synthetic(100, random_state=0)
    g = "a1,a2;a3;a4"
    s = make_surrogate(t, g, target="class", random_state=1)
    path = tmp_path / "s.parquet"
    s.to_parquet(path)
    ref = group_disclosure(t, target="class", grouping=g)
    assert group_disclosure(s, target="class", grouping=g) == ref
    assert group_disclosure(pa.Table.from_pandas(s), target="class", grouping=g) == ref
    assert group_disclosure(str(path), target="class", grouping=g) == ref
    # continuous values as published: every row is its own equivalence class
    assert all(d.k_min == 1 and d.share_below_k == 1.0 for d in ref)
    assert all(d.class_disclosure_share == 1.0 for d in ref)


def test_worst_group_and_pair_helpers():
    a = GroupDisclosure(("a",), 5, 3, 0.2, 0.1, 10)
    b = GroupDisclosure(("b",), 5, 1, 0.1, 0.3, 10)
    assert worst_group([a, b]).columns == ("b",)
    assert worst_group([a, b], "share_below_k").columns == ("a",)
    assert worst_group([a, b], "k_min").columns == ("b",)
    assert worst_group([]) is None
    with pytest.raises(ParameterError):
        worst_group([a], "k")
    p = PairLinkage((("a",), ("b",)), 0.5, 0.1, 0.01, 10)
    q = PairLinkage((("a",), ("c",)), 0.9, 0.8, 0.01, 10)
    assert worst_pair([q, p]) is p and worst_pair([]) is None
    assert p.excess == pytest.approx(0.4)
    assert p.to_dict()["groups"] == [["a"], ["b"]]


# ---------------------------------------------------------------------------- linkage

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=small_tables, text=groupings, seed=st.integers(0, 2**16),
       how=st.sampled_from(["shuffle", "identity", "one_column", "random_rows"]))
def test_linked_share_equals_brute_force(t, text, seed, how):
    g = Grouping.parse(text)
    rng = np.random.default_rng(seed)
    if how == "shuffle":
        r = make_surrogate(t, g, target="y", random_state=seed)
    elif how == "identity":
        r = t.copy()
    elif how == "one_column":  # coarser than the artefact: only column d moves
        r = make_surrogate(t, [["a", "b", "c"], ["d"]], target="y", random_state=seed)
    else:  # not a shuffle at all: rows drawn with replacement (duplicates)
        r = t.iloc[rng.integers(0, len(t), len(t))].reset_index(drop=True)
    got = cross_group_linkage(t, r, target="y", grouping=g)
    pairs = list(itertools.combinations(g.groups, 2))
    assert [p.groups for p in got] == pairs
    for p, (a, b) in zip(got, pairs):
        assert p.linked_share == pytest.approx(brute_linked(t, r, "y", a, b))
        assert 0.0 <= p.expected_linked_share <= 1.0


@pytest.mark.parametrize("dense", [True, False])
def test_sorting_and_counting_paths_agree(dense, monkeypatch):
    import astrid_airflow.privacy._exact_linkage as mod

    if not dense:  # force the sort-based path of large key spaces
        monkeypatch.setattr(mod, "DENSE_FACTOR", 0)
        monkeypatch.setattr(mod, "DENSE_SLACK", 0)
    rng = np.random.default_rng(5)
    n = 300
    t = pd.DataFrame({"a": rng.integers(0, 5, n), "b": rng.integers(0, 4, n),
                      "c": rng.integers(0, 30, n), "y": rng.integers(0, 3, n)})
    r = t.iloc[rng.integers(0, n, n)].reset_index(drop=True)
    r["y"] = t["y"]
    got = cross_group_linkage(t, r, target="y", grouping="a;b;c")
    for p, (a, b) in zip(got, itertools.combinations([["a"], ["b"], ["c"]], 2)):
        assert p.linked_share == pytest.approx(brute_linked(t, r, "y", a, b))
    s = make_surrogate(t, "a;b;c", target="y", random_state=0)
    ref = [(p.expected_linked_share, p.sd_linked_share)
           for p in cross_group_linkage(t, s, target="y", grouping="a;b;c")]
    monkeypatch.setattr(mod, "DENSE_FACTOR", 10**9)
    other = [(p.expected_linked_share, p.sd_linked_share)
             for p in cross_group_linkage(t, s, target="y", grouping="a;b;c")]
    assert np.ravel(other) == pytest.approx(np.ravel(ref))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_per_class=st.integers(1, 6), n_classes=st.integers(1, 2),
       seed=st.integers(0, 2**16))
def test_expected_linked_share_equals_enumeration(n_per_class, n_classes, seed):
    rng = np.random.default_rng(seed)
    n = n_per_class * n_classes
    t = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n),
                      "c": rng.integers(0, 3, n), "y": np.repeat(range(n_classes),
                                                                  n_per_class)})
    got = cross_group_linkage(t, t, target="y", grouping="a;b,c")
    assert got[0].expected_linked_share == pytest.approx(
        brute_expected(t, "y", ["a"], ["b", "c"]), rel=1e-6, abs=1e-9)


def test_expected_min_hypergeometric_matches_scipy():
    from scipy.stats import hypergeom

    n, ka, kb, m = (np.array(v) for v in ([10, 10, 7, 30], [4, 6, 7, 12], [5, 6, 3, 20],
                                          [2, 3, 3, 11]))
    want = [sum(min(h, mm) * hypergeom.pmf(h, nn, a, b) for h in range(0, min(a, b) + 1))
            for nn, a, b, mm in zip(n, ka, kb, m)]
    assert expected_min_hypergeometric(n, ka, kb, m) == pytest.approx(want)


def test_expectation_and_sd_agree_with_simulation():
    rng = np.random.default_rng(3)
    n = 400  # duplicates on both sides, so the hypergeometric terms matter
    t = pd.DataFrame({"a": rng.integers(0, 4, n), "b": rng.integers(0, 3, n),
                      "c": rng.normal(size=n).round(1), "y": rng.integers(0, 3, n)})
    g = "a;b;c"
    expected = cross_group_linkage(t, t, target="y", grouping=g)
    sims = np.array([[p.linked_share for p in cross_group_linkage(
        t, make_surrogate(t, g, target="y", random_state=s), target="y", grouping=g)]
        for s in range(200)])
    for j, p in enumerate(expected):
        se = sims[:, j].std(ddof=1) / math.sqrt(len(sims))
        assert abs(sims[:, j].mean() - p.expected_linked_share) < 4 * se + 1e-12, p
        # the sd ignores covariances, but not by more than a factor ~2 (LINKAGE_Z
        # covers it) and no genuine shuffle comes near the gate's tolerance
        assert sims[:, j].std(ddof=1) <= 2.0 * p.sd_linked_share, p
        assert np.all(sims[:, j] - p.expected_linked_share < p.tolerance(0.03)), p


def test_coarser_release_and_identity_are_linked_far_above_expectation():
    t = make_synthetic(300, random_state=0)
    g = "a1,a2;a3;a4"
    ok = cross_group_linkage(t, make_surrogate(t, g, target="class", random_state=0),
                             target="class", grouping=g)
    assert max(p.excess for p in ok) < 0.02
    one = make_surrogate(t, "a1,a2,a3;a4", target="class", random_state=0)
    coarse = {p.groups: p for p in cross_group_linkage(t, one, target="class", grouping=g)}
    assert coarse[(("a1", "a2"), ("a3",))].linked_share == 1.0
    assert coarse[(("a1", "a2"), ("a4",))].linked_share < 0.05
    same = cross_group_linkage(t, t, target="class", grouping=g)
    assert all(p.linked_share == 1.0 and p.expected_linked_share < 0.01 for p in same)


def test_disclosure_risk_combines_both_and_serialises():
    t = make_synthetic(50, random_state=0)
    r = make_surrogate(t, "a1,a2;a3;a4", target="class", random_state=0)
    risk = disclosure_risk(t, r, target="class", grouping="a1,a2;a3;a4", k=3)
    assert list(risk.groups) == group_disclosure(r, target="class",
                                                 grouping="a1,a2;a3;a4", k=3)
    assert list(risk.pairs) == cross_group_linkage(t, r, target="class",
                                                   grouping="a1,a2;a3;a4")
    d = risk.to_dict()
    assert set(d) == {"k", "groups", "pairs"} and len(d["pairs"]) == 3
    assert set(d["groups"][0]) >= {"columns", "k_min", "share_below_k",
                                   "class_disclosure_share"}
    assert set(d["pairs"][0]) >= {"groups", "linked_share", "expected_linked_share"}
    assert cross_group_linkage(t, r, target="class", grouping=[list(t.columns[:4])]) == []


def test_bad_input_is_a_typed_error():
    t = make_synthetic(10, random_state=0)
    with pytest.raises(DataError, match="lacks"):
        group_disclosure(t.drop(columns="a3"), target="class", grouping="a1,a2;a3;a4")
    with pytest.raises(DataError, match="empty"):
        group_disclosure(t.iloc[:0], target="class", grouping="a1,a2;a3;a4")
    with pytest.raises(ParameterError):
        group_disclosure(t, target="class", grouping="a1,a2;a3;a4", k=0)
    with pytest.raises(ParameterError):
        group_disclosure(t, grouping="a1,a2;a3;a4")
    with pytest.raises(DataError, match="lacks"):
        cross_group_linkage(t, t.drop(columns="class"), target="class",
                            grouping="a1,a2;a3;a4")


# ------------------------------------------------------ large tables (sampled pairs)

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(t=small_tables, text=groupings, k=st.integers(1, 6))
def test_large_table_path_keeps_group_measures_exact(t, text, k):
    import astrid_airflow.privacy._disclosure_measure as mod

    g = Grouping.parse(text)
    with pytest.MonkeyPatch.context() as mp:  # every table takes the large-table path
        mp.setattr(mod, "PAIR_SAMPLE_ROWS", 0)
        got = group_disclosure(t, target="y", grouping=g, k=k)
    for d, w in zip(got, brute_groups(t, "y", g.groups, k)):
        assert (d.columns, d.k_min) == (w[0], w[1])
        assert d.share_below_k == pytest.approx(w[2])
        assert d.class_disclosure_share == pytest.approx(w[3])


def _mixed(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"f": rng.normal(size=n), "g": rng.normal(size=n),
                         "i": rng.integers(0, n // 4, n), "c": rng.integers(0, 4, n),
                         "s": rng.choice(["u", "v", "w"], n),
                         "y": rng.choice([0, 1, 2], n, p=[.5, .3, .2])})


def test_sampled_pairs_keep_the_decision(monkeypatch):
    import astrid_airflow.privacy._disclosure_measure as mod

    n, g = 20_000, "f;g;i;c;s"
    t = _mixed(n, 0)
    ok = make_surrogate(t, g, target="y", random_state=1)
    exact = cross_group_linkage(t, ok, target="y", grouping=g)
    monkeypatch.setattr(mod, "PAIR_SAMPLE_ROWS", 2_000)  # 10 % of the keys
    sampled = cross_group_linkage(t, ok, target="y", grouping=g, n_jobs=1)
    assert sampled == cross_group_linkage(t, ok, target="y", grouping=g, n_jobs=2)
    for e, s in zip(exact, sampled):
        assert e.groups == s.groups
        if {e.groups[0][0], e.groups[1][0]} <= {"c", "s"}:  # few keys: counted exactly
            assert s == e
            continue
        assert s.sample_fraction == pytest.approx(0.1)
        assert s.sd_linked_share >= e.sd_linked_share
        assert abs(s.excess - e.excess) < 4 * s.sd_linked_share + 1e-12, (e, s)
    # genuine shuffles pass the gate's rule; the original and a coarser release fail
    for seed in range(5):
        r = make_surrogate(t, g, target="y", random_state=seed)
        assert all(p.excess <= p.tolerance(0.03)
                   for p in cross_group_linkage(t, r, target="y", grouping=g))
    same = cross_group_linkage(t, t, target="y", grouping=g)
    assert all(p.excess > p.tolerance(0.03) for p in same
               if not {p.groups[0][0], p.groups[1][0]} <= {"c", "s"})
    one = make_surrogate(t, "f,g,i,c;s", target="y", random_state=0)
    failing = {p.groups for p in cross_group_linkage(t, one, target="y", grouping=g)
               if p.excess > p.tolerance(0.03)}
    assert {(("f",), ("g",)), (("f",), ("i",)), (("g",), ("i",))} <= failing
    assert not any(("s",) in p for p in failing)


@pytest.mark.parametrize("how", ["shuffle", "random_rows"])
def test_large_table_shortcuts_do_not_change_the_result(how, monkeypatch):
    # The few-keys guess and the multiset fingerprint only choose how to count: forcing
    # every path gives the same figures (a release drawn with replacement has another
    # multiset of keys, so the original is sorted on its own there).
    import astrid_airflow.privacy._disclosure_measure as mod

    n, g = 6_000, "f;g;i;c;s"
    t = _mixed(n, 1)
    r = make_surrogate(t, g, target="y", random_state=2) if how == "shuffle" else \
        t.iloc[np.random.default_rng(3).integers(0, n, n)].reset_index(drop=True)
    monkeypatch.setattr(mod, "PAIR_SAMPLE_ROWS", 1_000)
    want = disclosure_risk(t, r, target="y", grouping=g, k=3)
    for name, value in (("_few_keys", lambda key: True), ("_few_keys", lambda key: False),
                        ("_fingerprint", lambda mixed: object())):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(mod, name, value)
            assert disclosure_risk(t, r, target="y", grouping=g, k=3) == want, name
    for d, w in zip(want.groups, brute_groups(r, "y", Grouping.parse(g).groups, 3)):
        assert (d.columns, d.k_min) == (w[0], w[1])
        assert (d.share_below_k, d.class_disclosure_share) == pytest.approx(w[2:])
