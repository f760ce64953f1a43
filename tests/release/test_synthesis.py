"""The ``synthesise`` step (``release._synthesis``) and its budget (``_dp_accounting``).

What is shown, on planted tables whose truth is known:

1. the draws come from the fitted model (level frequencies, within-bin positions and
   normal-score correlations of the draws against the step's numbers), and the model
   reproduces each class's marginals, correlations and joint frequencies;
2. no synthetic value or tuple equals a real one beyond the chance rate, and small
   cells are never drawn;
3. the Gaussian noise is calibrated: recorded sigmas follow the sensitivities, and the
   empirical noise on counts over many fits has the recorded sigma;
4. a step re-applies to any batch by (class, rank in class) alone;
5. each bad setting gets one clear ``RecipeError``;
6. on random small tables, fitted steps are valid recipes that keep rows, kinds,
   classes and the absence of missing values.

Every statistical tolerance is ``Z`` standard errors computed from the row counts, with
``Z`` a Bonferroni bound for a family-wise false-alarm rate of ``ALPHA`` over the
comparisons of one test (the seeds are fixed, so the tests are deterministic).

Without a budget a contingency model draws only tuples that at least ``min_count``
rows of the class share (its cells are the reference's), so the chance-rate test runs
it with a budget; the cells' floor has its own test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import ndtri

from astrid_airflow import AstridError, RecipeError, ReleaseRecipe, apply_recipe
from astrid_airflow.release._dp_accounting import (
    Budget,
    check_budget,
    epsilon_of,
    gaussian_sigma,
    rho_of,
)
from astrid_airflow.release._remedies import published_type
from astrid_airflow.release._synthesis import (
    BLOCK,
    CLIP,
    MAX_CELLS,
    fit_synthesis,
    synthesised_values,
)
from astrid_airflow.release._table_schema import dtype_kind

ALPHA = 1e-3
CLASSES = ("a", "b", "c")
#: Synthetic draws per class when a model's distribution is estimated.
M = 20_000


def _z(comparisons: int) -> float:
    """The two-sided normal quantile of a family of ``comparisons`` at level ALPHA."""
    return float(stats.norm.isf(ALPHA / (2 * comparisons)))


def _fit(frame, columns, *, min_count=1, seed=0, rho=None, target="y"):
    types = [published_type(frame[c]) for c in columns]
    return fit_synthesis(frame, frame[target], columns, types, min_count=min_count,
                         random_state=np.random.SeedSequence(seed), rho=rho)


def _recipe(step, target="y"):
    return ReleaseRecipe(k=1, steps=(step,), target=target)


def _cdf(weights):
    w = np.asarray(weights, dtype=float)
    return np.concatenate([[0.0], np.cumsum(w) / w.sum()])


BINNED = ("bins", "class_bins")  # pooled bins (with a budget), or each class's own


def _edges(level, ci: int) -> np.ndarray:
    """Class ``ci``'s bin edges of a numeric level set."""
    e = level["edges"][ci] if level["kind"] == "class_bins" else level["edges"]
    return np.asarray(e, dtype=float)


def _bin_codes(x, edges):
    """Each value's level in a binned level set (1-based; 0 is the missing level)."""
    e = np.asarray(edges, dtype=float)
    return np.clip(np.searchsorted(e, x, side="right") - 1, 0, len(e) - 2) + 1


# -------------------------------------------------------------------- planted tables

MEANS = {"a": 0.0, "b": 2.0, "c": -1.5}
CORR = {"a": 0.8, "b": -0.8, "c": 0.8}
G_PROBS = {"a": [0.6, 0.3, 0.1], "b": [0.2, 0.3, 0.5], "c": [0.1, 0.7, 0.2]}
COPULA_COLUMNS = ["x1", "x2", "g", "k"]


def _planted(n: int = 3000, seed: int = 1) -> pd.DataFrame:
    """3 classes; x1, x2 floats with class means (MEANS, -MEANS), unit sds and a
    correlation of class-dependent sign (CORR); g categorical (G_PROBS); k an integer
    with a class-dependent mean and a wide range (so it is binned)."""
    rng = np.random.default_rng(seed)
    y = rng.choice(CLASSES, n)
    x1, x2, k = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    g = np.empty(n, dtype=object)
    for c in CLASSES:
        at = y == c
        z = rng.multivariate_normal([0, 0], [[1, CORR[c]], [CORR[c], 1]], at.sum())
        x1[at], x2[at] = MEANS[c] + z[:, 0], -MEANS[c] + z[:, 1]
        g[at] = rng.choice(["p", "q", "r"], at.sum(), p=G_PROBS[c])
        k[at] = np.round(50 + 6 * MEANS[c] + 10 * rng.standard_normal(at.sum()))
    return pd.DataFrame({"x1": x1, "x2": x2, "g": pd.Categorical(g), "k": k, "y": y})


def _planted_categorical(n: int = 3000, seed: int = 0, sizes=(8, 8, 6)) -> pd.DataFrame:
    """3 classes; categorical columns c0, c1, ... with skewed class-dependent
    frequencies (Dirichlet(0.7)), c1 a copy of c0 in half the rows (so the group's
    columns depend on each other): many rare tuples."""
    rng = np.random.default_rng(seed)
    y = rng.choice(CLASSES, n)
    cols = {}
    for j, size in enumerate(sizes):
        values = np.array([f"v{i}" for i in range(size)], dtype=object)
        col = np.empty(n, dtype=object)
        for c in CLASSES:
            at = y == c
            col[at] = rng.choice(values, at.sum(), p=rng.dirichlet(np.full(size, 0.7)))
        cols[f"c{j}"] = col
    if len(sizes) > 1:  # c0's values are among c1's (sizes[0] <= sizes[1])
        cols["c1"] = np.where(rng.random(n) < 0.5, cols["c0"], cols["c1"])
    return pd.DataFrame({**cols, "y": y})


@pytest.fixture(scope="module")
def planted():
    table = _planted()
    step = _fit(table, COPULA_COLUMNS, seed=11)
    labels = np.repeat(CLASSES, M)
    return table, step, labels, synthesised_values(step, labels)


# -------------------------------------------------- 1. draws follow the fitted model

def test_planted_copula_fits_what_was_planted(planted):
    step = planted[1]
    assert step["model"] == "gaussian_copula" and step["classes"] == list(CLASSES)
    kinds = [lv["kind"] for lv in step["levels"]]
    assert kinds[2] == "values" and all(kinds[j] in BINNED for j in (0, 1, 3))
    assert not any(lv["missing"] for lv in step["levels"])
    for ci, c in enumerate(CLASSES):  # the sign of the planted correlation is kept
        assert np.sign(step["correlation"][ci][0][1]) == np.sign(CORR[c])


def test_copula_draws_follow_the_fitted_model(planted):
    """Per class and column, the drawn levels have the step's weights (chi-square),
    a numeric value is uniform within its bin (KS), and the draws' normal scores have
    the step's correlation."""
    _, step, labels, values = planted
    z_tol = _z(len(CLASSES))
    p_min = ALPHA / (len(CLASSES) * 5)
    for ci, c in enumerate(CLASSES):
        at = labels == c
        scores = {}
        for j, col in enumerate(COPULA_COLUMNS[:3]):  # k is rounded: its level is fuzzy
            lv, w = step["levels"][j], np.asarray(step["counts"][ci][j])
            x = values[col][at]
            if lv["kind"] in BINNED:
                e = _edges(lv, ci)
                codes = _bin_codes(x, e)
            else:
                codes = np.array([lv["values"].index(v) + 1 for v in x])
            observed = np.bincount(codes, minlength=len(w))
            assert len(observed) == len(w), (c, col)
            assert observed[w == 0].sum() == 0, (c, col)  # a 0-weight level: never
            expected = w[w > 0] / w.sum() * at.sum()
            assert stats.chisquare(observed[w > 0], expected).pvalue > p_min, (c, col)
            if lv["kind"] in BINNED:
                t = (x - e[codes - 1]) / (e[codes] - e[codes - 1])
                assert stats.kstest(t, "uniform").pvalue > p_min, (c, col)
                cdf = _cdf(w)
                scores[col] = ndtri(cdf[codes] + t * (cdf[codes + 1] - cdf[codes]))
        r = step["correlation"][ci][0][1]
        drawn = np.corrcoef(scores["x1"], scores["x2"])[0, 1]
        assert abs(drawn - r) < z_tol * (1 - r ** 2) / math.sqrt(at.sum()), (c, drawn, r)


def _moment_checks(real: pd.DataFrame, values, labels, stats_of, *, step=None):
    """(name, synthetic, real, standard error) per class for the statistics named in
    ``stats_of`` ("mean x1", "sd k", "corr", "freq g"); with ``step``, numeric values
    (real and synthetic alike) are first winsorised at the class's second and
    last-but-one bin edges (what lies in the two open-ended bins is set to their inner
    edge)."""
    out = []
    for ci, c in enumerate(CLASSES):
        rc, at = real[real["y"] == c], labels == c
        n, m = len(rc), int(at.sum())
        cols = {}
        for col in ("x1", "x2", "k"):
            r, s = rc[col].to_numpy(dtype=float), values[col][at].astype(float)
            if step is not None:
                e = _edges(step["levels"][COPULA_COLUMNS.index(col)], ci)
                r, s = np.clip(r, e[1], e[-2]), np.clip(s, e[1], e[-2])
            cols[col] = (r, s)
            sd = r.std(ddof=1)
            if f"mean {col}" in stats_of:
                out.append((f"{c} mean {col}", s.mean(), r.mean(),
                            sd * math.sqrt(1 / n + 1 / m)))
            if f"sd {col}" in stats_of:
                out.append((f"{c} sd {col}", s.std(ddof=1), sd,
                            sd * math.sqrt(1 / (2 * n) + 1 / (2 * m))))
        if "corr" in stats_of:
            rr = np.corrcoef(cols["x1"][0], cols["x2"][0])[0, 1]
            rs = np.corrcoef(cols["x1"][1], cols["x2"][1])[0, 1]
            out.append((f"{c} corr x1 x2", rs, rr,
                        (1 - rr ** 2) * math.sqrt(1 / n + 1 / m)))
        if "freq g" in stats_of:
            for v in ("p", "q", "r"):
                p = float((rc["g"] == v).mean())
                out.append((f"{c} P(g={v})", float((values["g"][at] == v).mean()), p,
                            math.sqrt(p * (1 - p) * (1 / n + 1 / m))))
    return out


def _failures(checks):
    """The checks off by more than Z standard errors (Z for the whole family)."""
    z = _z(len(checks))
    return [(name, round(s, 4), round(r, 4), round((s - r) / se, 1))
            for name, s, r, se in checks if abs(s - r) > z * se]


def test_copula_reproduces_class_means_correlations_and_frequencies(planted):
    table, _, labels, values = planted
    checks = _moment_checks(table, values, labels,
                            ("mean x1", "mean x2", "mean k", "corr", "freq g"))
    assert len(checks) == 3 * 7
    assert not _failures(checks)


def test_copula_reproduces_class_moments_inside_the_end_bins(planted):
    """Winsorised at each class's second and last-but-one bin edges, the float columns'
    means, sds and correlation match the real ones: what the model gets wrong about the
    sds (the next test) is in its two open-ended bins."""
    table, step, labels, values = planted
    assert not _failures(_moment_checks(
        table, values, labels, ("mean x1", "sd x1", "mean x2", "sd x2", "corr"), step=step))


def test_copula_class_sds_within_sampling_error():
    table = _planted(n=30_000, seed=5)
    step = _fit(table, COPULA_COLUMNS, seed=11)
    labels = np.repeat(CLASSES, 50_000)
    values = synthesised_values(step, labels)
    assert not _failures(_moment_checks(table, values, labels, ("sd x1", "sd x2", "sd k")))


def test_integer_draws_are_unbiased():
    rng = np.random.default_rng(0)
    n = 40_000
    table = pd.DataFrame({"k": np.round(50 + 10 * rng.standard_normal(n)).astype(int),
                          "y": rng.choice(["a", "b"], n)})
    for rho in (None, 1.0):
        step = _fit(table, ["k"], rho=rho)
        assert step["levels"][0]["kind"] in BINNED
        labels = np.repeat(["a", "b"], 200_000)
        drawn = synthesised_values(step, labels)["k"]
        for c in ("a", "b"):
            real, syn = table["k"][table["y"] == c], drawn[labels == c]
            assert np.array_equal(syn, np.round(syn))
            se = real.std() * math.sqrt(1 / len(real) + 1 / len(syn))
            assert abs(syn.mean() - real.mean()) < _z(4) * se, (rho, c)


def test_contingency_reproduces_joint_class_frequencies():
    table = _planted_categorical(n=3000, seed=3, sizes=(3, 4))
    step = _fit(table, ["c0", "c1"], seed=5)
    assert step["model"] == "contingency"
    labels = np.repeat(CLASSES, M)
    values = synthesised_values(step, labels)
    for ci, c in enumerate(CLASSES):
        real = table[table["y"] == c].groupby(["c0", "c1"]).size()
        at = labels == c
        drawn = pd.Series(list(zip(values["c0"][at], values["c1"][at]))).value_counts()
        # without budget and min_count 1 the model's weights are the real counts
        cell = step["counts"][ci]
        lv = [step["levels"][j]["values"] for j in range(2)]
        model = {(lv[0][a - 1], lv[1][b - 1]): w for (a, b), w in
                 zip(cell["tuples"], cell["weights"])}
        assert model == {key: float(v) for key, v in real.items()}
        assert set(drawn.index) <= set(real.index)
        observed = drawn.reindex(real.index, fill_value=0).to_numpy()
        expected = real.to_numpy() / real.sum() * at.sum()
        assert stats.chisquare(observed, expected).pvalue > ALPHA / len(CLASSES), c
        # and each cell within its binomial error of the real share (n real, m drawn)
        p, q = real.to_numpy() / real.sum(), observed / at.sum()
        se = np.sqrt(p * (1 - p) * (1 / real.sum() + 1 / at.sum()))
        assert (np.abs(q - p) <= _z(len(p) * len(CLASSES)) * se).all(), c


# ------------------------------------------------------ 2. no real tuple beyond chance

def test_float_draws_never_equal_a_reference_value(planted):
    table, _, _, values = planted
    for col in ("x1", "x2"):
        assert np.isfinite(values[col]).all()
        assert np.isin(values[col], table[col].to_numpy()).mean() == 0.0, col


def _share_in(tuples, reference: set) -> float:
    return float(np.mean([t in reference for t in tuples]))


@pytest.mark.parametrize("sizes, eps", [
    pytest.param((6, 6, 5), 1.0, id="contingency-eps1"),
    pytest.param((6, 6, 5), 5.0, id="contingency-eps5"),
    pytest.param((8, 8, 8, 8), None, id="copula-over-max-cells"),
])
def test_categorical_tuples_hit_the_reference_at_chance_rate(sizes, eps):
    """Fitted on one half of a planted table, the synthetic tuples (with their class)
    are among the half's tuples no more often than the other half's are (the chance
    rate), up to a binomial margin."""
    table = _planted_categorical(n=3000, seed=0, sizes=sizes)
    names = [f"c{j}" for j in range(len(sizes))]
    ref, held = table.iloc[:1500].reset_index(drop=True), table.iloc[1500:]
    rho = None if eps is None else rho_of(eps, 1e-5)
    step = _fit(ref, names, min_count=1, seed=2, rho=rho)
    # joint counts where a class's cells hold min_count rows on average, else a copula
    cells = math.prod(s + 1 for s in sizes)
    assert step["model"] == ("contingency" if cells <= min(MAX_CELLS, len(ref) / 3)
                             else "gaussian_copula")
    seen = set(map(tuple, ref[[*names, "y"]].to_numpy().tolist()))
    chance = _share_in(map(tuple, held[[*names, "y"]].to_numpy().tolist()), seen)
    assert chance < 0.95  # many rare tuples: a chance rate well below 1
    labels = np.repeat(held["y"].to_numpy(), 10)
    values = synthesised_values(step, labels)
    share = _share_in(zip(*(values[c] for c in names), labels), seen)
    margin = _z(1) * math.sqrt(chance * (1 - chance) * (1 / len(held) + 1 / len(labels)))
    assert share <= chance + margin, (share, chance, margin)


def test_small_cells_are_never_drawn():
    """Without a budget, a (class, tuple) of a contingency model, or a (class, level)
    of a copula's column, with fewer than min_count reference rows is never drawn."""
    table = _planted_categorical(n=1500, seed=4, sizes=(6, 6))
    min_count = 5
    counts = table.groupby(["y", "c0", "c1"]).size()
    assert ((counts > 0) & (counts < min_count)).sum() > 20  # there are small cells
    step = _fit(table, ["c0", "c1"], min_count=min_count, seed=3)
    assert step["model"] == "contingency"
    labels = np.repeat(CLASSES, M)
    values = synthesised_values(step, labels)
    drawn = set(zip(labels, values["c0"], values["c1"]))
    assert min(counts[t] for t in drawn) >= min_count
    assert drawn == set(counts[counts >= min_count].index)  # and the others are

    table["x"] = np.random.default_rng(0).normal(size=len(table))  # a copula group
    step = _fit(table, ["c0", "x"], min_count=min_count, seed=3)
    assert step["model"] == "gaussian_copula"
    values = synthesised_values(step, labels)
    level_counts = table.groupby(["y", "c0"]).size()
    assert ((level_counts > 0) & (level_counts < min_count)).any()
    drawn = set(zip(labels, values["c0"]))
    assert min(level_counts[t] for t in drawn) >= min_count


def test_a_class_below_min_count_does_not_publish_its_values():
    rng = np.random.default_rng(0)
    x = rng.normal(size=500) * 10
    x[-1] = 37.123456789
    table = pd.DataFrame({"x": x, "y": ["big"] * 499 + ["solo"]})
    step = _fit(table, ["x"], min_count=5)
    drawn = synthesised_values(step, np.array(["solo"] * 1000))["x"]
    assert np.isclose(drawn, x[-1], rtol=1e-6, atol=0).mean() < 0.5


# -------------------------------------------------------------------------- 3. DP

@pytest.mark.parametrize("columns, model, parts", [
    (["g"], "contingency", {"counts": 1.0}),
    (["g", "k"], "gaussian_copula", {"counts": math.sqrt(2),
                                     "score_products": 2 * CLIP ** 2}),
    (["x1"], "gaussian_copula", {"counts": 1.0}),
    (["x1", "x2", "g"], "gaussian_copula", {"counts": math.sqrt(3),
                                            "score_products": 3 * CLIP ** 2}),
])
def test_recorded_sigma_follows_the_sensitivity(planted, columns, model, parts):
    table = planted[0]
    rho = rho_of(1.0, 1e-6)
    step = _fit(table, columns, rho=rho, seed=1)
    assert step["model"] == model
    dp = step["dp"]
    assert dp["mechanism"] == "gaussian" and dp["rho"] == rho
    got = dp["measurements"]
    assert set(got) == set(parts)
    assert math.isclose(sum(m["rho"] for m in got.values()), rho)  # composition
    for name, sens in parts.items():
        m = got[name]
        assert math.isclose(m["sensitivity"], sens), name
        assert math.isclose(m["sigma"], gaussian_sigma(sens, rho / len(parts))), name
        assert math.isclose(m["sensitivity"] ** 2 / (2 * m["sigma"] ** 2), m["rho"])
    assert _fit(table, columns, seed=1)["dp"] is None  # no budget: no noise


def _noise_residuals(table, columns, column, rho, fits, min_true):
    """Over ``fits`` fits with different seeds: noisy weight - true count of the
    (class, level of ``column``) cells whose true count is at least ``min_true``, and
    the recorded sigma of the counts."""
    j = columns.index(column)
    true = table.groupby(["y", column]).size()
    residuals, sigmas = [], set()
    for i in range(fits):
        step = _fit(table, columns, rho=rho, seed=10_000 + i)
        sigmas.add(step["dp"]["measurements"]["counts"]["sigma"])
        values = step["levels"][j]["values"]
        for ci, c in enumerate(step["classes"]):
            if step["model"] == "contingency":
                cell = step["counts"][ci]
                weights = {values[t[j] - 1]: w for t, w in zip(cell["tuples"],
                                                               cell["weights"]) if t[j]}
            else:
                weights = dict(zip([None, *values], step["counts"][ci][j]))
            for v in values:
                if true.get((c, v), 0) >= min_true:
                    residuals.append(weights.get(v, 0.0) - true[(c, v)])
    (sigma,) = sigmas
    return np.asarray(residuals), sigma


@pytest.mark.parametrize("copula", [False, True], ids=["contingency", "copula"])
def test_empirical_count_noise_has_the_recorded_sigma(copula):
    """200 fits of one small table: the sample sd of (noisy weight - true count) over
    cells far from 0 (so clipping at 0 never acts) is the recorded sigma, within a
    chi-square interval; a sensitivity off by sqrt(2) would be far outside it."""
    rng = np.random.default_rng(7)
    n = 1200
    table = pd.DataFrame({"g": rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2]),
                          "y": np.repeat(["u", "v"], n // 2)})
    columns = ["g"]
    if copula:  # a float beside: the copula's counts, sensitivity sqrt(2)
        table["x"] = rng.normal(size=n)
        columns = ["g", "x"]
    rho = rho_of(1.0, 1e-6)
    fits = 200
    sens = math.sqrt(len(columns))
    residuals, sigma = _noise_residuals(table, columns, "g", rho, fits,
                                        min_true=8 * gaussian_sigma(sens, 0.5 * rho))
    expected = gaussian_sigma(sens, rho / len(columns))
    assert math.isclose(sigma, expected)
    k = residuals.size
    assert k == fits * 6  # every (class, category) cell is far from 0
    lo, hi = np.sqrt(stats.chi2.ppf([ALPHA / 2, 1 - ALPHA / 2], k - 1) / (k - 1))
    sd = residuals.std(ddof=1)
    assert lo * sigma < sd < hi * sigma, (sd, sigma)
    assert not (lo * sigma * math.sqrt(2) < sd < hi * sigma * math.sqrt(2))
    assert not (lo * sigma / math.sqrt(2) < sd < hi * sigma / math.sqrt(2))
    # unbiased too: the mean residual within Z standard errors of 0
    assert abs(residuals.mean()) < _z(1) * sigma / math.sqrt(k)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 10), st.floats(0.01, 10), st.floats(1e-9, 1e-3))
def test_rho_of_inverts_epsilon_of_and_increases(eps, eps2, delta):
    rho = rho_of(eps, delta)
    assert rho > 0
    assert math.isclose(epsilon_of(rho, delta), eps, rel_tol=1e-9)
    if eps2 >= eps:  # increasing: strictly beyond rounding (a relative gap of 1e-9)
        assert rho_of(eps2, delta) >= rho
        if eps2 > eps * (1 + 1e-9):
            assert rho_of(eps2, delta) > rho
    b = Budget(eps, delta, 3)
    assert math.isclose(b.rho_per_group * 3, rho)


# ----------------------------------------------------------- 4. re-applying to a batch

def _batch(counts: dict, seed: int) -> pd.DataFrame:
    """A batch with these rows per class, in random order, with random real values."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.repeat(list(counts), list(counts.values())))
    n = len(y)
    return pd.DataFrame({"x1": rng.normal(size=n) * 100, "x2": rng.normal(size=n),
                         "g": pd.Categorical(rng.choice(["p", "q", "r"], n)),
                         "k": rng.integers(0, 1000, n), "y": y})


def _per_class(frame: pd.DataFrame, columns) -> dict:
    """Per class, the group's tuples in row order."""
    return {c: list(map(tuple, part[columns].astype(object).to_numpy().tolist()))
            for c, part in frame.groupby("y", sort=True)}


def test_apply_is_deterministic_and_keeps_the_class_column(planted):
    step = planted[1]
    batch = _batch({"a": 50, "b": 30, "c": 20}, seed=1)
    recipe = _recipe(step)
    out1, out2 = apply_recipe(batch, recipe), apply_recipe(batch.copy(), recipe)
    pd.testing.assert_frame_equal(out1, out2)
    pd.testing.assert_series_equal(out1["y"], batch["y"])
    assert list(out1.dtypes) == list(batch.dtypes)
    assert not out1[COPULA_COLUMNS].equals(batch[COPULA_COLUMNS])


@pytest.mark.parametrize("m, more", [(40, 300), (BLOCK - 10, BLOCK + 900),
                                     (BLOCK + 5, 2 * BLOCK + 3)])
def test_prefix_of_a_class_is_the_same_in_a_larger_batch(planted, m, more):
    """The first m rows of class a get the same values whether the batch holds m or
    ``more`` rows of it (also across the BLOCK boundary of the seed streams)."""
    step = planted[1]
    recipe = _recipe(step)
    small = apply_recipe(_batch({"a": m, "b": 7}, seed=2), recipe)
    large = apply_recipe(_batch({"a": more, "b": 3, "c": 9}, seed=3), recipe)
    assert _per_class(large, COPULA_COLUMNS)["a"][:m] == _per_class(
        small, COPULA_COLUMNS)["a"]


def test_multiset_per_class_depends_only_on_class_counts(planted):
    step = planted[1]
    recipe = _recipe(step)
    counts = {"a": 120, "b": 45, "c": 300}
    one = _per_class(apply_recipe(_batch(counts, seed=4), recipe), COPULA_COLUMNS)
    two = _per_class(apply_recipe(_batch(counts, seed=5), recipe), COPULA_COLUMNS)
    for c in counts:
        assert sorted(one[c], key=repr) == sorted(two[c], key=repr), c
    permuted = _batch(counts, seed=4).sample(frac=1.0, random_state=9)  # rows reordered
    three = _per_class(apply_recipe(permuted, recipe), COPULA_COLUMNS)
    assert three == one  # by rank within the class: the same sequence per class


def test_partitions_with_global_ranks_give_the_whole_batch(planted):
    """``synthesised_values`` with each row's rank in the whole batch: any partition of
    the batch gets the same values as the batch (how the shuffle applies it)."""
    step = planted[1]
    batch = _batch({"a": 500, "b": 200, "c": 100}, seed=6)
    whole = synthesised_values(step, batch["y"].to_numpy())
    ranks = batch.groupby("y").cumcount().to_numpy()
    cut = np.random.default_rng(0).random(len(batch)) < 0.4
    for part in (cut, ~cut):
        got = synthesised_values(step, batch["y"].to_numpy()[part], ranks[part])
        for col in COPULA_COLUMNS:
            np.testing.assert_array_equal(got[col], whole[col][part])
    recipe = _recipe(step)  # and apply_recipe(class_ranks=...) does the same
    published = apply_recipe(batch, recipe)
    for part in (cut, ~cut):
        got = apply_recipe(batch[part], recipe, class_ranks=ranks[part])
        pd.testing.assert_frame_equal(got, published[part])


def test_json_round_trip_keeps_the_draws(planted):
    step = planted[1]
    recipe = _recipe(step)
    again = ReleaseRecipe.from_json(recipe.to_json())
    assert again == recipe
    assert ReleaseRecipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    batch = _batch({"a": 100, "b": 100, "c": 100}, seed=7)
    pd.testing.assert_frame_equal(apply_recipe(batch, again), apply_recipe(batch, recipe))
    dp_step = _fit(planted[0], ["g", "k"], rho=rho_of(1.0, 1e-6), seed=3)
    dp_recipe = _recipe(dp_step)
    assert ReleaseRecipe.from_json(dp_recipe.to_json()) == dp_recipe


def test_arrow_table_gets_the_pandas_values(planted):
    step = planted[1]
    recipe = _recipe(step)
    batch = _batch({"a": 100, "b": 60, "c": 40}, seed=8)
    batch["s"] = np.where(batch["k"] % 2 == 0, "even", "odd")  # an untouched column
    expected = apply_recipe(batch, recipe)
    got = apply_recipe(pa.Table.from_pandas(batch, preserve_index=False), recipe)
    assert isinstance(got, pa.Table)
    got = got.to_pandas()
    assert got.columns.tolist() == batch.columns.tolist()
    for col in batch.columns:
        assert got[col].astype(object).tolist() == expected[col].astype(object).tolist(), col
    cat = _planted_categorical(n=300, seed=1, sizes=(3, 4))
    recipe = _recipe(_fit(cat, ["c0", "c1"], seed=4))
    got = apply_recipe(pa.Table.from_pandas(cat, preserve_index=False), recipe).to_pandas()
    pd.testing.assert_frame_equal(got, apply_recipe(cat, recipe))


# --------------------------------------------------------------- 5. bad settings

@pytest.mark.parametrize("epsilon, delta, n_rows, words", [
    (0, 1e-6, 1000, "epsilon"),
    (-1, 1e-6, 1000, "epsilon"),
    (float("nan"), 1e-6, 1000, "epsilon"),
    (True, 1e-6, 1000, "epsilon"),
    (1.0, 1e-3, 1000, "1/n"),
    (1.0, 0.5, 1000, "1/n"),
    (1.0, 0.0, 1000, "delta.*> 0"),
    (1.0, -1e-6, 1000, "delta.*> 0"),
    (1.0, float("nan"), 1000, "delta"),
])
def test_bad_budget_refused(epsilon, delta, n_rows, words):
    with pytest.raises(RecipeError, match=words) as info:
        check_budget(epsilon, delta, n_rows)
    assert isinstance(info.value, AstridError)
    assert check_budget(1, 1e-6, 1000) == (1.0, 1e-6)


@pytest.fixture(scope="module")
def small_step():
    table = _planted(n=300, seed=2)
    return _fit(table, ["x1", "g"], seed=1)


@pytest.mark.parametrize("change, words", [
    ({"model": "vae"}, "model 'vae' is unknown to the recipe"),
    ({"refit": "batch"}, "refit must be 'never'"),
    ({"seed": -1}, "seed must be an integer"),
    ({"classes": []}, "one count set per class"),
])
def test_bad_synthesis_step_refused(small_step, change, words):
    with pytest.raises(RecipeError, match=words):
        _recipe({**small_step, **change})
    with pytest.raises(RecipeError, match=words):
        ReleaseRecipe.from_dict({"k": 1, "target": "y",
                                 "steps": [{**small_step, **change}]})


def test_unseen_class_in_batch_refused(small_step):
    batch = _batch({"a": 5, "zz": 2}, seed=0)
    with pytest.raises(RecipeError, match="no model for class 'zz'"):
        apply_recipe(batch, _recipe(small_step))


# ---------------------------------------------------- 6. random small tables (Hypothesis)

_KINDS = ("float", "int", "cat", "str")


@st.composite
def small_tables(draw):
    n = draw(st.integers(30, 200))
    n_classes = draw(st.integers(2, 3))
    kinds = draw(st.lists(st.sampled_from(_KINDS), min_size=1, max_size=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = rng.choice([f"k{i}" for i in range(n_classes)], n)
    y[:n_classes] = [f"k{i}" for i in range(n_classes)]  # every class present
    cols = {}
    for j, kind in enumerate(kinds):
        holes = rng.random(n) < 0.2 if draw(st.booleans()) else np.zeros(n, bool)
        if kind == "float":
            v = rng.normal(size=n) * 10
            cols[f"c{j}"] = np.where(holes, np.nan, v)
        elif kind == "int":
            v = pd.array(rng.integers(-50, 50, n), dtype="Int64")
            v[holes] = pd.NA
            cols[f"c{j}"] = v if holes.any() else v.astype("int64")
        elif kind == "cat":
            cols[f"c{j}"] = pd.Categorical(np.where(holes, None, rng.choice(
                ["x", "y", "z"], n)), categories=["x", "y", "z", "unused"])
        else:
            cols[f"c{j}"] = pd.array(np.where(holes, None, rng.choice(["u", "v"], n)),
                                     dtype=object)
    return pd.DataFrame({**cols, "y": y})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_tables(), st.integers(1, 5), st.sampled_from([None, 0.05, 1.0]),
       st.integers(0, 2**63 - 1))
def test_fitted_steps_are_valid_and_keep_rows_kinds_classes(table, min_count, rho, seed):
    columns = [c for c in table.columns if c != "y"]
    step = _fit(table, columns, min_count=min_count, rho=rho, seed=seed)
    recipe = _recipe(step)  # the recipe accepts the fitted step
    assert ReleaseRecipe.from_json(recipe.to_json()) == recipe
    batch = table.sample(frac=1.0, random_state=seed % 2**32)
    out = apply_recipe(batch, recipe)
    assert len(out) == len(batch) and list(out.columns) == list(batch.columns)
    pd.testing.assert_series_equal(out["y"], batch["y"])
    for c in columns:
        assert dtype_kind(out[c].dtype, out[c]) == dtype_kind(table[c].dtype, table[c]), c
        if not table[c].isna().any():
            assert not out[c].isna().any(), (c, step["model"], step["counts"])


# The ways a fitted step once broke the property above (each a defect now fixed).

def test_copula_fallback_never_draws_missing_in_a_complete_column():
    """No class has a level with min_count rows: the fallback weights still give the
    missing level nothing (it once gave every level, missing too, weight 1)."""
    table = pd.DataFrame({"x": np.arange(10.0), "y": ["a", "b"] * 5})
    step = _fit(table, ["x"], min_count=5)
    out = apply_recipe(pd.DataFrame({"x": 0.0, "y": ["a"] * 1000}), _recipe(step))
    assert not out["x"].isna().any()


def test_contingency_class_without_cells_never_draws_missing():
    table = pd.DataFrame({"g": ["p"] * 6 + ["q", "r"], "y": ["a"] * 6 + ["b"] * 2})
    step = _fit(table, ["g"], min_count=2)
    out = apply_recipe(table, _recipe(step))
    assert not out["g"].isna().any()


def test_dp_copula_steps_always_apply():
    rng = np.random.default_rng(0)
    n = 83
    table = pd.DataFrame({"c0": rng.normal(size=n) * 10, "c1": rng.normal(size=n) * 10,
                          "y": rng.choice(["k0", "k1"], n)})
    for seed in range(40):
        step = _fit(table, ["c0", "c1"], rho=0.05, seed=seed)
        out = apply_recipe(table, _recipe(step))
        assert out[["c0", "c1"]].notna().all().all()


def test_a_rare_category_is_neither_stored_nor_drawn():
    """The recipe is what an attacker is assumed to know: a category fewer than
    min_count rows have would tell that someone has it. It is published missing, as the
    rare-category suppression publishes it, and the step never names it."""
    rng = np.random.default_rng(4)
    n = 600
    g = rng.choice(["p", "q", "r"], n).astype(object)
    g[7] = "only-one-person"
    table = pd.DataFrame({"g": g, "x": rng.normal(size=n), "y": rng.choice(["a", "b"], n)})
    for columns in (["g"], ["g", "x"]):  # contingency, then copula
        step = _fit(table, columns, min_count=5)
        assert "only-one-person" not in json.dumps(step)
        drawn = synthesised_values(step, np.repeat(["a", "b"], 5000))["g"]
        assert "only-one-person" not in set(drawn)
        assert step["levels"][0]["missing"] is True


def test_floats_are_drawn_at_the_columns_resolution():
    """A float column written with 1 decimal (a database column of scale 1) is drawn
    with 1 decimal; a column of full-precision floats is not rounded."""
    rng = np.random.default_rng(8)
    n = 2000
    table = pd.DataFrame({"m": (20 + 5 * rng.standard_normal(n)).round(1),
                          "f": rng.standard_normal(n), "y": rng.choice(["a", "b"], n)})
    step = _fit(table, ["m", "f"], min_count=5)
    assert [lv["decimals"] for lv in step["levels"]] == [1, None]
    drawn = synthesised_values(step, np.repeat(["a", "b"], 3000))
    assert np.array_equal(drawn["m"], np.round(drawn["m"], 1))
    assert not np.array_equal(drawn["f"], np.round(drawn["f"], 6))
