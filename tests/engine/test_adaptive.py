"""Adaptive mode: sequential p-values (valid, same decisions as the exact test up to the
reported risk) and racing (same answers, far fewer fits)."""

import json

import numpy as np
import pytest

from astrid_airflow import ParameterError, astrid, make_synthetic, test_grouping
from astrid_airflow.cli import main
from astrid_airflow.engine._racing import race_argmax, race_ranking
from astrid_airflow.engine._sequential import plan, run_sequential

ALPHA = 0.05


@pytest.fixture(scope="module")
def synthetic():
    return make_synthetic(random_state=0)


@pytest.mark.parametrize(("n_max", "batch", "risk"), [(250, 10, 0.01), (250, 25, 1e-3),
                                                      (100, 10, 0.01), (499, 50, 0.01)])
def test_boundaries_agree_with_the_exact_test(n_max, batch, risk):
    p = plan(n_max, ALPHA, batch, risk)
    c, h = p.exact_reject_max, p.curtail_hits
    # the exact test rejects iff S_R <= c
    assert (1 + c) / (1 + n_max) < ALPHA <= (2 + c) / (1 + n_max)
    # curtailing at h hits: Besag-Clifford p >= alpha and the exact test cannot reject
    assert h / n_max >= ALPHA and h >= c + 1
    for n, r in p.reject_at:
        assert n < n_max and 0 <= r <= c and (r + 1) / (n + 1) < ALPHA
    assert 0 <= p.risk_bound <= risk
    levels = [r for _, r in p.reject_at]
    assert levels == sorted(levels)  # the boundary never steps down


def test_only_boundary_steps_are_charged_and_clear_rejections_stop_early():
    from astrid_airflow.engine._sequential import _grid, _risks

    p = plan(250, ALPHA, 10, 0.01)
    steps, level = [], -1
    for n, r in p.reject_at:
        if r > level:
            steps.append((n, r))
            level = r
    charged = sum(float(_risks(n, r, 250, p.exact_reject_max, _grid())[r]) for n, r in steps)
    assert charged == pytest.approx(p.risk_bound)
    assert p.risk_bound <= 0.01
    # no hit at all: rejected at the first step, well before the 250 exact draws
    assert steps[0] == (70, 0)
    out = _run_on(np.zeros(250), 1.0, p)
    assert out.rejected and out.n_draws == 70 and out.stop == "early-reject"


def _null_rejection_rate(p, n_grid=400):
    """P(adaptive test rejects) under a null: T(D0) exchangeable with the draws, so the
    hits are Bernoulli(q) given q ~ Uniform(0, 1). Exact dynamic programme over S_n."""
    reject, h = dict(p.reject_at), p.curtail_hits
    rates = []
    for q in (np.arange(n_grid) + 0.5) / n_grid:  # midpoint rule over q
        dist, total = np.zeros(h + 1), 0.0
        dist[0] = 1.0
        for n in range(1, p.n_max + 1):
            new = np.zeros(h + 1)
            new[:h] += dist[:h] * (1 - q)
            new[1:] += dist[:h] * q
            new[h] = 0.0  # curtailed: not rejected
            dist = new
            if n in reject:
                total += dist[:reject[n] + 1].sum()
                dist[:reject[n] + 1] = 0.0
        rates.append(total + dist[:p.exact_reject_max + 1].sum())
    return float(np.mean(rates))


@pytest.mark.parametrize(("n_max", "risk"), [(250, 0.01), (100, 0.01), (499, 0.01)])
def test_adaptive_test_has_level_alpha_under_the_null(n_max, risk):
    # The exact test's size is (c + 1)/(R + 1) <= alpha; early rejections add at most
    # risk_bound, and in fact far less under the null: the level stays <= alpha.
    p = plan(n_max, ALPHA, 10, risk)
    exact_size = (p.exact_reject_max + 1) / (n_max + 1)
    rate = _null_rejection_rate(p)
    assert exact_size - 1e-3 <= rate <= min(ALPHA, exact_size + p.risk_bound)


def _run_on(seq_scores, observed, p):
    return run_sequential(observed, lambda first, count: seq_scores[first:first + count], p)


def test_null_rejection_rate_and_decision_agreement_on_exchangeable_draws():
    # Under the null, T(D0), T(D1), ... are exchangeable: here i.i.d. uniform draws.
    rng = np.random.default_rng(0)
    p = plan(250, ALPHA, 10, 0.01)
    reps = 20000
    rejected = np.zeros(reps, bool)
    differs = np.zeros(reps, bool)
    small = np.zeros(reps, bool)
    draws = rng.random((reps, 251))
    for i in range(reps):
        out = _run_on(draws[i, 1:], draws[i, 0], p)
        exact = (1 + np.count_nonzero(draws[i, 1:] >= draws[i, 0])) / 251
        rejected[i] = out.rejected
        small[i] = out.p_value <= 0.01
        differs[i] = out.rejected != (exact < ALPHA)
        if not out.rejected:  # curtailment never changes the decision
            assert exact >= ALPHA
    margin = 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
    assert rejected.mean() <= ALPHA + p.risk_bound + margin
    assert small.mean() <= 0.01 + p.risk_bound + 3 * np.sqrt(0.01 * 0.99 / reps)
    assert differs.mean() <= p.risk_bound + 3 * np.sqrt(p.risk_bound / reps) + 1e-4


@pytest.mark.parametrize("true_p", [0.0, 0.02, 0.045, 0.06, 0.1, 0.5])
def test_resampling_risk_is_bounded_for_any_true_p(true_p):
    # A hit (null >= observed) has probability true_p; the adaptive decision must match
    # the exact test on the same 250 draws except with probability <= risk_bound.
    rng = np.random.default_rng(int(true_p * 1000))
    p = plan(250, ALPHA, 10, 0.01)
    reps = 4000
    hits = rng.random((reps, 250)) < true_p
    differ, draws = 0, 0
    for i in range(reps):
        scores = hits[i].astype(float)  # observed 1.0: a hit is a null score >= 1
        out = _run_on(scores, 1.0, p)
        exact = (1 + hits[i].sum()) / 251 < ALPHA
        differ += out.rejected != exact
        draws += out.n_draws
    assert differ / reps <= p.risk_bound + 3 * np.sqrt(max(p.risk_bound, 1e-3) / reps)
    if true_p >= 0.1 or true_p == 0.0:
        assert draws / reps < 0.65 * 250  # clear cases stop early


def test_adaptive_draws_are_a_prefix_of_the_exact_draws(synthetic):
    kw = dict(target="class", grouping="a1,a2;a3;a4", n_permutations=60, random_state=4)
    exact = test_grouping(synthetic, **kw)
    adaptive = test_grouping(synthetic, adaptive=True, **kw)
    n = adaptive.null_accuracies.size
    assert adaptive.params["adaptive"]["stop"] == "curtailed" and n < 60
    assert adaptive.accuracy == exact.accuracy
    np.testing.assert_array_equal(adaptive.null_accuracies, exact.null_accuracies[:n])
    assert (adaptive.p_value >= ALPHA) == (exact.p_value >= ALPHA)
    assert adaptive.n_fits == n + 1
    json.dumps(adaptive.to_dict())


def _race_data(means, sd, budget, seed, own_ratio=0.25):
    rng = np.random.default_rng(seed)
    common = rng.normal(0, sd, budget)  # common random numbers: shared noise per round
    own = rng.normal(0, sd * own_ratio, (len(means), budget))
    return np.asarray(means)[:, None] + common[None, :] + own


def test_racing_finds_the_best_and_stops_early():
    data = _race_data([0.80, 0.90, 0.70, 0.89], 0.05, 100, 0)
    out = race_argmax(lambda idx, first, count: data[idx, first:first + count], 4,
                      budget=100, batch=10, delta=0.0, risk=0.01)
    assert out.winner == 1 and out.n_fits < 400
    assert out.rounds[2] == 10  # far worse: eliminated after the first round
    tied = _race_data([0.8, 0.8, 0.8], 0.05, 100, 1)
    out = race_argmax(lambda idx, first, count: tied[idx, first:first + count], 3,
                      budget=100, batch=10, delta=0.02, risk=0.01)
    assert out.stop == "indifferent" and out.n_fits < 300
    out = race_argmax(lambda idx, first, count: tied[idx, first:first + count], 3,
                      budget=100, batch=10, delta=0.0, risk=0.01)
    assert out.stop == "budget" and out.n_fits == 300  # no indifference zone: full budget
    ranked = race_ranking(lambda idx, first, count: data[idx, first:first + count], 4,
                          budget=100, batch=10, delta=0.0, risk=0.01)
    assert list(np.argsort(-ranked.means)) == [1, 3, 0, 2]


def test_ranking_race_pauses_resolved_items_and_pairs_on_common_rounds():
    # Two clearly separated items and a near-tied pair: the separated ones stop early,
    # the tied pair draws until it is surely within delta (or the budget).
    data = _race_data([0.95, 0.80, 0.801, 0.60], 0.05, 100, 2)
    calls = []

    def evaluate(idx, first, count):
        calls.append((tuple(idx), first, count))
        return data[idx, first:first + count]

    out = race_ranking(evaluate, 4, budget=100, batch=5, delta=0.01, risk=0.05)
    assert list(np.argsort(-out.means)[[0, 3]]) == [0, 3]
    assert out.rounds[0] < out.rounds[1] and out.rounds[3] < out.rounds[2]
    assert out.n_fits < 4 * out.rounds.max()
    for idx, first, count in calls:  # every item's rounds are drawn once, in order
        assert all(first == sum(c for i2, f2, c in calls[:calls.index((idx, first, count))]
                                if i in i2) for i in idx)
    np.testing.assert_allclose(out.means, [data[i, :out.rounds[i]].mean() for i in range(4)])


def test_indifference_zone_scales_with_the_noise_near_accuracy_one():
    # Accuracies near 1 (mushroom): gaps of 0.003 between items whose single-fit sd is
    # about 0.003. A fixed zone of 0.01 calls every pair a tie after the first look; the
    # zone scaled to the noise (0.5 sd) keeps drawing until the true order is resolved.
    extra_rounds = 0
    for seed in range(20):
        data = _race_data([0.9990, 0.9930, 0.9960, 0.9900], 0.002, 100, seed, own_ratio=1)

        def evaluate(idx, first, count, data=data):
            return data[idx, first:first + count]

        fixed = race_ranking(evaluate, 4, budget=100, batch=5, delta=0.01, risk=0.2)
        assert fixed.rounds.max() == 5 and fixed.stop == "separated"
        scaled = race_ranking(evaluate, 4, budget=100, batch=5, delta=0.01, risk=0.2,
                              delta_sd=0.5)
        assert list(np.argsort(-scaled.means)) == [0, 2, 1, 3], seed
        extra_rounds += scaled.rounds.max() > 5
        best = race_argmax(evaluate, 4, budget=100, batch=5, delta=0.01, risk=0.2,
                           delta_sd=0.5)
        assert best.winner == 0, seed
    assert extra_rounds >= 10
    # Where the noise is large the fixed zone is the smaller one and nothing changes.
    noisy = _race_data([0.80, 0.81, 0.79], 0.05, 100, 0, own_ratio=1)

    def evaluate(idx, first, count):
        return noisy[idx, first:first + count]

    a = race_ranking(evaluate, 3, budget=100, batch=5, delta=0.01, risk=0.2)
    b = race_ranking(evaluate, 3, budget=100, batch=5, delta=0.01, risk=0.2, delta_sd=0.5)
    assert a.rounds.tolist() == b.rounds.tolist()


def test_astrid_adaptive_structure():
    small = make_synthetic(100, random_state=1)
    kw = dict(target="class", n_search=20, n_test=60, random_state=3, adaptive=True)
    r = astrid(small, **kw)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["n_fits"] == r.n_fits < d["n_fits_exact"]
    assert d["n_fits_exact"] == 20 * 9 + 3 * 20 + 3 * 20 + 3 * 60 + 1
    a = d["adaptive"]
    assert sum(a["fits"].values()) == r.n_fits
    assert set(a["p_values"]) <= {"2", "3", "4"} and "4" in a["p_values"]
    tested = {int(k) for k in a["p_values"]}
    assert r.k == 1 or r.k == min(tested)
    for row in d["table"][1:]:
        if row["k"] in tested:
            assert row["n_permutations"] == a["p_values"][str(row["k"])]["permutations"]
        else:
            assert row["p"] is None and row["k"] < r.k
    assert all(row["acc_search"] is None for row in d["table"])
    b = astrid(small, n_jobs=2, backend="threading", **kw).to_dict()
    for x in (d, b):  # timings: machine-dependent
        x.pop("seconds"), x.pop("estimate")
    assert d == b  # reproducible and n_jobs-invariant


def test_adaptive_bad_parameters(synthetic):
    with pytest.raises(ParameterError, match="adaptive_risk"):
        astrid(synthetic, target="class", adaptive=True, adaptive_risk=2.0)
    with pytest.raises(ParameterError, match="adaptive_delta"):
        astrid(synthetic, target="class", adaptive=True, adaptive_delta=-1.0)
    with pytest.raises(ParameterError, match="adaptive_delta_sd"):
        astrid(synthetic, target="class", adaptive=True, adaptive_delta_sd=-0.5)
    with pytest.raises(ParameterError, match="adaptive_batch"):
        astrid(synthetic, target="class", adaptive=True, adaptive_batch=0)


def test_cli_adaptive_json(tmp_path, capsys, synthetic):
    path = tmp_path / "s.csv"
    synthetic.to_csv(path, index=False)
    assert main(["learn", str(path), "--target", "class", "--r-search", "10", "--r-test",
                 "40", "--seed", "1", "--adaptive", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["adaptive"]["risk"] == 0.01 and out["n_fits"] < out["n_fits_exact"]
    assert "verify" not in out["adaptive"]
    assert main(["learn", str(path), "--target", "class", "--r-search", "10", "--r-test",
                 "40", "--seed", "1", "--adaptive", "--adaptive-verify", "--json",
                 "--quiet"]) == 0
    audited = json.loads(capsys.readouterr().out)
    assert audited["adaptive"]["verify"]["exact_k"] == audited["k"] == out["k"]
    assert main(["test", str(path), "--target", "class", "--grouping", "a1;a2;a3;a4",
                 "--r-test", "50", "--seed", "1", "--adaptive", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["adaptive"]["rejected"] and out["p_value"] < 0.05


def test_adaptive_p_values_are_valid_under_a_true_null_grouping():
    # Attributes independent within each class: the singleton grouping is a true null.
    # The rate of p <= 0.05 over many datasets must stay within alpha + risk + margin:
    # 300 datasets here (fixed seed), 1,200 in benchmarks/bench_adaptive_null.py
    from benchmarks.bench_adaptive_null import null_rejections

    run = null_rejections(300, seed=2024)
    # the null rejection rate of the adaptive test is 0.048 (closed form above)
    assert run["rate"] <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / 300)
    assert run["fits_per_test"] < 0.5 * 251  # and it saved most of the fits


@pytest.mark.slow
@pytest.mark.parametrize("classifier", ["svm", "rf"])
def test_adaptive_picks_the_exact_k_on_the_synthetic_data(synthetic, classifier):
    params = {"n_estimators": 100} if classifier == "rf" else None
    kw = dict(target="class", classifier=classifier, classifier_params=params,
              random_state=0, n_jobs=2)
    exact = astrid(synthetic, n_search=20, n_test=100, **kw)
    adaptive = astrid(synthetic, adaptive=True, **kw)  # budgets R' = 100, R = 250
    truth = {frozenset({"a1", "a2"}), frozenset({"a3"}), frozenset({"a4"})}
    assert exact.k == adaptive.k == 3
    assert {frozenset(g) for g in adaptive.grouping.groups} == truth
    assert adaptive.n_fits_exact / adaptive.n_fits >= 4


def test_adaptive_verify_completes_the_exact_draws():
    small = make_synthetic(100, random_state=1)
    kw = dict(target="class", n_search=20, n_test=60, random_state=3)
    exact = astrid(small, **kw)
    plain = astrid(small, adaptive=True, **kw)
    audited = astrid(small, adaptive=True, adaptive_verify=True, **kw)
    assert audited.k == plain.k and audited.n_fits == plain.n_fits  # audit fits apart
    record = audited.adaptive
    assert record["verify"]["fits"] > 0 and record["verify"]["same_k"]
    for k, v in record["p_values"].items():
        row = exact.table[int(k) - 1]
        assert audited.table[int(k) - 1].grouping == row.grouping  # same search here
        # the completed draws are the exact test's: the same p-value, to the last bit
        assert v["exact_p"] == row.p and v["exact_rejected"] == (row.p < ALPHA)
