"""Attack-based risks (Giomi et al. 2023): known small cases, seeds, extremes."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import DataError, ParameterError, make_surrogate
from astrid_airflow.engine._grouping import Grouping
from astrid_airflow.privacy._attack_tables import nearest as _nearest
from astrid_airflow.privacy._attacks import AttackRisk, residual_risk
from astrid_airflow.privacy._inference import inference_risk
from astrid_airflow.privacy._linkability import linkability_risk, linkability_split
from astrid_airflow.privacy._singling_out import singling_out_risk

Z = 1.959963984540054  # probit(0.975)


def _independent(n: int, d: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = pd.DataFrame(rng.normal(size=(n, d)), columns=[f"x{i}" for i in range(d)])
    t["class"] = rng.integers(0, 2, n)
    return t


def _halves(seed: int = 0, n: int = 600, d: int = 6):
    t = _independent(n, d, seed)
    return t.iloc[: n // 2].reset_index(drop=True), t.iloc[n // 2:].reset_index(drop=True)


# ----------------------------------------------------------------------- statistics

def test_residual_risk_by_hand():
    # 10 of 10 on training, 0 of 10 on control; Wilson centres (s + z²/2) / (n + z²).
    z2 = Z * Z
    r_t, r_c = (10 + z2 / 2) / (10 + z2), (z2 / 2) / (10 + z2)
    e = (Z / (10 + z2)) * math.sqrt(z2 / 4)  # both sides: s(n - s)/n = 0
    value = (r_t - r_c) / (1 - r_c)
    err = math.hypot(e / (1 - r_c), e * (r_t - 1) / (1 - r_c) ** 2)
    risk, ci = residual_risk(10, 10, 0)
    assert risk == pytest.approx(value) == pytest.approx(0.8388748419)
    assert ci == pytest.approx((value - err, 1.0))


def test_residual_risk_equal_success_is_zero_and_interval_bounded():
    risk, (lo, hi) = residual_risk(50, 20, 20)
    assert risk == 0.0 and lo == 0.0 and 0.0 < hi < 1.0
    assert residual_risk(0, 0, 0) == (0.0, (0.0, 0.0))
    risk, (lo, hi) = residual_risk(200, 0, 50)  # control better than training: clipped
    assert risk == 0.0 and lo == 0.0 and hi == 0.0


# ------------------------------------------------------------------- known small cases

def test_singling_out_univariate_by_hand():
    train = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    control = pd.DataFrame({"a": [1.0, 1.0, 5.0, 5.0]})
    # Predicates from the release (= training): a<=1, a>=4, a==1, a==2, a==3, a==4; each
    # isolates one training row; none isolates one control row.
    r = singling_out_risk(train, train, control, mode="univariate", random_state=0)
    assert (r.n_attacks, r.n_success, r.n_control_success) == (200, 6, 0)
    assert (r.risk, r.ci) == residual_risk(200, 6, 0)
    assert "only 6 of 200" in r.note
    r = singling_out_risk(train, train, control, mode="univariate", n_attacks=6,
                          random_state=0)
    assert (r.risk, r.ci) == residual_risk(6, 6, 0) and not r.note


def test_singling_out_categorical_and_missing_by_hand():
    train = pd.DataFrame({"c": ["x", "y", "y", None]})
    control = pd.DataFrame({"c": ["x", "x", None, None]})
    # c == 'x' and c isna single out in training; in control both match two rows.
    r = singling_out_risk(train, train, control, mode="univariate", n_attacks=2,
                          random_state=0)
    assert (r.n_attacks, r.n_success, r.n_control_success) == (2, 2, 0)


def test_linkability_by_hand():
    # The release is the training table: both halves of every target find its own row.
    train = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [0.0, 10.0, 20.0, 30.0]})
    # Control rows sit between the released ones in a and b in opposite directions.
    control = pd.DataFrame({"a": [0.1, 1.1, 2.1, 2.9], "b": [9.0, 19.0, 29.0, 0.5]})
    r = linkability_risk(train, train, control, aux_columns=(["a"], ["b"]), random_state=0)
    assert (r.n_attacks, r.n_success, r.n_control_success) == (4, 4, 0)


def test_inference_by_hand_and_numeric_tolerance():
    released = pd.DataFrame({"k": [0.0, 10.0, 20.0], "s": [100.0, 200.0, -50.0],
                             "c": ["u", "v", "w"]})
    train = pd.DataFrame({"k": [0.0, 10.0, 20.0], "s": [104.0, 211.0, -52.0],
                          "c": ["u", "v", "x"]})
    control = train.assign(k=[20.0, 0.0, 10.0])
    # Numeric: |guess - secret| <= 0.05 |guess|: 104 vs 100 yes, 211 vs 200 no, -52 vs -50 yes.
    r = inference_risk(train, released, control, secret="s", aux_columns=["k"], random_state=0)
    assert (r.n_attacks, r.n_success) == (3, 2)
    assert r.n_control_success == 0
    r = inference_risk(train, released, control, secret="c", aux_columns=["k"], random_state=0)
    assert (r.n_success, r.n_control_success) == (2, 0)


def test_nearest_breaks_ties_at_random():
    cand = np.zeros((4, 1))
    picks = {int(_nearest(np.zeros((1, 1)), cand, np.array([True]), np.array([False]),
                          np.random.default_rng(s))[0]) for s in range(40)}
    assert picks == {0, 1, 2, 3}


def test_nearest_is_gower_like():
    # numeric |a-b| (values already divided by the range) plus 0/1 per category;
    # a missing value is a full mismatch; the same with the fast (no-missing) path
    cand = np.array([[0.0, 0.0], [0.5, 1.0], [np.nan, 0.0]])
    q = np.array([[0.45, 0.0], [0.9, 1.0]])
    idx = _nearest(q, cand, np.array([True, False]), np.array([True, False]),
                   np.random.default_rng(0))
    # row 0: d = 0.45 (cand 0), 0.05 + 1 (cand 1), 1 (cand 2) -> 0; row 1: cand 1
    assert idx.tolist() == [0, 1]
    idx = _nearest(q, cand[:2], np.array([True, False]), np.array([False, False]),
                   np.random.default_rng(0))
    assert idx.tolist() == [0, 1]


def test_linkability_split_cuts_largest_group():
    cols = ["a", "b", "c", "d", "e", "f"]
    g = Grouping([["a"], ["b", "c", "d", "e"], ["f"]])
    left, right = linkability_split(cols, g)
    assert set(left) | set(right) == set(cols) and not set(left) & set(right)
    assert {"b", "c"} <= set(left) and {"d", "e"} <= set(right)
    a, b = linkability_split(cols, how="random_split", random_state=3)
    assert sorted(a + b) == sorted(cols) and abs(len(a) - len(b)) <= 1
    assert (a, b) == linkability_split(cols, how="random_split", random_state=3)
    with pytest.raises(ParameterError):
        linkability_split(["a"])
    with pytest.raises(ParameterError):
        linkability_split(cols, how="halves")


# --------------------------------------------------------------------- seeds, extremes

def test_reproducible_for_a_seed():
    train, control = _halves(1)
    cols = [c for c in train.columns if c != "class"]
    for f, kw in ((singling_out_risk, {"mode": "multivariate"}),
                  (linkability_risk, {"aux_columns": (cols[:3], cols[3:])}),
                  (inference_risk, {"secret": "class", "aux_columns": cols})):
        a = f(train, train, control, n_attacks=50, random_state=7, **kw)
        b = f(train, train, control, n_attacks=50, random_state=7, **kw)
        assert a == b and isinstance(a, AttackRisk)
        assert a.ci[0] <= a.risk <= a.ci[1]


def test_original_released_as_is_is_high_risk():
    train, control = _halves(2)
    cols = [c for c in train.columns if c != "class"]
    link = linkability_risk(train, train, control, aux_columns=(cols[:3], cols[3:]),
                            random_state=0)
    inf = inference_risk(train, train, control, secret=cols[0], aux_columns=cols[1:],
                         random_state=0)
    so = singling_out_risk(train, train, control, mode="multivariate", random_state=0)
    for r in (link, inf, so):
        assert r.ci[0] > 0.8, r
        assert r.ci[0] <= r.risk <= r.ci[1]


def test_singletons_surrogate_of_independent_data_is_low_risk():
    train, control = _halves(3, n=2000)
    cols = [c for c in train.columns if c != "class"]
    # A few levels per column: no value is rare within a class, so the within-class
    # shuffle leaves nothing to link or infer (exact continuous values would still
    # disclose the class of a row holding one, which is a real leak, not noise).
    train[cols], control[cols] = (train[cols] * 2).round() / 2, (control[cols] * 2).round() / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = make_surrogate(train, Grouping.singletons(cols), target="class",
                             random_state=1)
    kw = {"n_attacks": 800, "random_state": 0}
    link = linkability_risk(train, rel, control, aux_columns=(cols[:3], cols[3:]), **kw)
    inf_class = inference_risk(train, rel, control, secret="class", aux_columns=cols, **kw)
    inf_col = inference_risk(train, rel, control, secret=cols[0], aux_columns=cols[1:],
                             **kw)
    for r in (link, inf_class, inf_col):
        assert r.risk < 0.1 and r.ci[1] < 0.2, r
        assert r.ci[0] <= r.risk <= r.ci[1]


def test_sampling_is_stated_and_bad_parameters_raise():
    train, control = _halves(4)
    r = inference_risk(train, train, control, secret="class",
                       aux_columns=["x0"], n_attacks=20, random_state=0)
    assert r.n_attacks == 20 and "sampled" in r.note
    assert r.to_dict()["ci"] == [r.ci[0], r.ci[1]] and r.to_dict()["secret"] == "class"
    with pytest.raises(ParameterError):
        inference_risk(train, train, control, secret="nope", aux_columns=["x0"])
    with pytest.raises(ParameterError):
        inference_risk(train, train, control, secret="x0", aux_columns=["x0"])
    with pytest.raises(ParameterError):
        singling_out_risk(train, train, control, mode="bivariate")
    with pytest.raises(ParameterError):
        linkability_risk(train, train, control, aux_columns=(["x0"], ["x0"]))
    with pytest.raises(ParameterError):
        linkability_risk(train, train, control, aux_columns=(["x0"], ["x1"]), n_attacks=0)


# ----------------------------------------------- class from one column, exact

def test_nearest_draws_a_tie_for_each_query():
    # one query value tied with 50 rows: the queries do not all get the same row
    cand = np.zeros((50, 1))
    idx = _nearest(np.zeros((200, 1)), cand, np.array([True]), np.array([False]),
                   np.random.default_rng(0))
    assert len(set(idx.tolist())) > 30


def test_class_from_column_risks_exact_figures():
    from astrid_airflow.privacy import class_from_column_risks

    rng = np.random.default_rng(0)
    n = 600
    y = np.tile(["a", "b"], n // 2)
    t = pd.DataFrame({
        "unique": rng.permutation(n).astype(float),  # raw: every value its own
        "bins6": np.repeat(np.arange(n // 6), 6).astype(float),  # 3 a + 3 b per value
        "const": np.zeros(n),
        "cat": np.repeat([f"c{i}" for i in range(n // 20)], 20),
        "class": y})
    r = {x.aux_columns[0]: x for x in class_from_column_risks(t, target="class")}
    assert r["unique"].risk > 0.9 and r["unique"].ci[0] > 0.8
    # values shared by m = 6 rows of mixed classes: (1/2 - 2/5) / (1 - 2/5) = 1/m
    assert r["bins6"].risk == pytest.approx(1 / 6, abs=1e-9)
    assert r["const"].risk < 0.01 and r["cat"].risk < 0.06
    assert all(x.variant == "class_from_one_column_exact" and x.n_attacks == n
               for x in r.values())
    # deterministic, and a GoldenEye shuffle of a singleton keeps the figure
    again = class_from_column_risks(t.sample(frac=1, random_state=1), target="class")
    assert [x.risk for x in again] == pytest.approx([x.risk for x in r.values()])
    with pytest.raises(ParameterError, match="Unknown column"):
        class_from_column_risks(t, target="class", columns=["nope"])
    with pytest.raises(DataError, match="Target column"):
        class_from_column_risks(t, target="nope")


def test_shadow_attacks_pool_the_releases_and_cover_their_spread():
    from scipy.stats import t as student_t

    from astrid_airflow import make_synthetic
    from astrid_airflow.privacy import shadow_attacks
    from astrid_airflow.privacy._risk import SHADOW_RELEASES, _run_attacks

    table = make_synthetic(300, random_state=0)
    g = Grouping([["a1", "a2"], ["a3"], ["a4"]])
    pooled = shadow_attacks(table, target="class", grouping=g, n_attacks=60, random_state=4)
    assert pooled == shadow_attacks(table, target="class", grouping=g, n_attacks=60,
                                    random_state=4)
    assert pooled["shadow"]["releases"] == SHADOW_RELEASES
    # the releases after the first run on threads: the same outcome for any n_jobs
    from astrid_airflow.privacy import measure_risk

    by_jobs = [measure_risk(table, table, target="class", grouping=g, n_attacks=60,
                            random_state=4, n_jobs=j).to_dict() for j in (1, 2)]
    assert by_jobs[0] == by_jobs[1]
    assert by_jobs[0]["inference"] == pooled["inference"]
    # the same attacks as on one shadow release (the first of the ten)
    single = _run_attacks(table, None, None, "class", g, 60, 4, 20_000, shadow_releases=1)[0]
    quantile = student_t.ppf(0.975, SHADOW_RELEASES - 1) / math.sqrt(SHADOW_RELEASES)
    for kind in ("singling_out", "linkability", "inference"):
        assert [(r["variant"], r.get("secret")) for r in pooled[kind]] == \
            [(r.variant, r.secret) for r in single[kind]]
        for r in pooled[kind]:
            assert r["shadow_releases"] == SHADOW_RELEASES
            assert r["n_attacks"] <= 60 * SHADOW_RELEASES
            lo, hi = r["ci"]
            assert lo <= r["risk"] <= hi
            # the interval covers the releases' spread as well as the pooled counts'
            assert hi >= min(1.0, r["risk"] + quantile * r["risk_sd"]) - 1e-12
            assert lo <= max(0.0, r["risk"] - quantile * r["risk_sd"]) + 1e-12


def test_pooled_counts_by_hand():
    from astrid_airflow.privacy._risk import _pooled

    each = [AttackRisk("inference", *residual_risk(100, s, c), 100, n_success=s,
                       n_control_success=c) for s, c in ((80, 70), (90, 70), (75, 72))]
    p = _pooled(each)
    assert (p.n_attacks, p.n_success, p.n_control_success) == (300, 245, 212)
    assert p.risk == residual_risk(300, 245, 212)[0] and p.shadow_releases == 3
    assert p.risk_sd == pytest.approx(np.std([r.risk for r in each], ddof=1))
    assert _pooled(each[:1]) is each[0]


def test_round_that_draws_the_plan_attacks_like_a_round_given_it():
    # Every shadow release must use the same stream per attack: the first release draws
    # the linkability splits, and must not use up its attack's stream doing so.
    from astrid_airflow.privacy._attack_tables import AttackTables
    from astrid_airflow.privacy._risk import _attack_round

    train, control = _halves(seed=3, n=400, d=5)
    g = Grouping([["x0", "x1"], ["x2", "x3"], ["x4"]])
    t = AttackTables.encode(train, train, control)

    def one(plan):
        return _attack_round(t, train, "class", g, 80, np.random.SeedSequence(11), plan)

    drawn, plan = one(None)
    given, _ = one(plan)
    assert [k for k, _ in drawn].count("linkability") == 2
    assert drawn == given
