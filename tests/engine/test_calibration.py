"""Statistical calibration: type-I error and power of the grouping test, ASTRID recovery.

Smaller versions of ``benchmarks/bench_calibration.py`` (which has the generators and
writes the figures in ``docs/reliability.md``). Every check has a fixed seed, so the
outcome is deterministic; the bars are set so that a *valid* implementation passes with
probability above 99 % over seeds (binomial bounds), while an invalid p-value fails.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_calibration.py"
_spec = importlib.util.spec_from_file_location("bench_calibration", _BENCH)
bc = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("bench_calibration", bc)  # joblib workers unpickle by module name
_spec.loader.exec_module(bc)

ALPHA = bc.ALPHA


# ------------------------------------------------------------------- fast sanity checks

def test_planted_table_factorises_by_construction():
    """The generator's groups are independent given the class, and carry class signal
    only through within-group dependence (marginals of corr blocks are class-free)."""
    table, planted = bc.planted_table((("corr", 2, 0.9), ("shift", 0.6), ("noise",)),
                                      (4000, 4000), 0)
    assert planted == [["a1", "a2"], ["a3"], ["a4"]]
    for c, sign in [(0, 1), (1, -1)]:
        part = table[table["class"] == c]
        assert sign * np.corrcoef(part.a1, part.a2)[0, 1] > 0.85
        assert abs(part.a1.mean()) < 0.05 and abs(part.a2.std() - 1) < 0.05
        # across groups: no correlation
        assert abs(np.corrcoef(part.a1, part.a3)[0, 1]) < 0.05
        assert abs(np.corrcoef(part.a2, part.a4)[0, 1]) < 0.05


def test_binomial_allowance_and_classification():
    assert bc.binomial_allowance(400) == 31  # 0.99 quantile of Binomial(400, 0.05)
    assert bc.classify_recovery([["a", "b"], ["c"]], [["b", "a"], ["c"]]) == "exact"
    assert bc.classify_recovery([["a", "b", "c"]], [["a", "b"], ["c"]]) == "too coarse"
    assert bc.classify_recovery([["a"], ["b"], ["c"]], [["a", "b"], ["c"]]) == "too fine"
    assert bc.classify_recovery([["a"], ["b", "c"]], [["a", "b"], ["c"]]) == "mixed"


# --------------------------------------------------------------------------- type I

N_TYPE1 = 100  # datasets per configuration; 400 in all


@pytest.fixture(scope="module")
def type1_p_values():
    return {cfg.name: bc.type1_p_values(cfg, N_TYPE1, n_permutations=19, random_state=i,
                                        n_jobs=2)
            for i, cfg in enumerate(bc.TYPE1_CONFIGS)}


@pytest.mark.slow
def test_type1_error_at_most_alpha_plus_margin(type1_p_values):
    """Over 400 null-true datasets (4 settings: m = 4..6, 2–3 classes, balanced and
    imbalanced, numeric and categorical, a coarsening of the planted grouping), the
    rejection rate P(p <= 0.05) is at most 0.05 + its Monte Carlo margin.

    With R = 19, p <= 0.05 means p = 1/20: the size is exactly alpha for an
    exchangeable statistic, so there is no slack. Margin: a valid test shows more than
    ``binomial_allowance(400) = 31`` rejections (rate 0.0775) with probability < 1 %.
    """
    all_p = np.concatenate(list(type1_p_values.values()))
    assert all_p.size >= 200
    rejections = int(np.count_nonzero(all_p <= ALPHA + 1e-12))
    allowed = bc.binomial_allowance(all_p.size)
    assert rejections <= allowed, (rejections, allowed, all_p.size)
    for name, p in type1_p_values.items():  # no single setting is far off either
        k = int(np.count_nonzero(p <= ALPHA + 1e-12))
        assert k <= bc.binomial_allowance(p.size, level=0.999), (name, k)


@pytest.mark.slow
def test_type1_p_values_are_super_uniform(type1_p_values):
    """P(p <= u) <= u (+ margin) at every attainable level u = j/20, not just at alpha:
    a valid p-value is stochastically no smaller than uniform."""
    all_p = np.concatenate(list(type1_p_values.values()))
    n = all_p.size
    for j in range(1, 20):
        u = j / 20
        k = int(np.count_nonzero(all_p <= u + 1e-12))
        assert k <= bc.binomial_allowance(n, alpha=u, level=0.999), (u, k / n)


@pytest.mark.slow
def test_type1_check_catches_an_invalid_permutation(monkeypatch):
    """The calibration check can fail: a permutation that ignores the class (it breaks
    the class-conditional marginals, so the null datasets are not exchangeable with D0)
    makes the same check reject far more often than its allowance."""
    from astrid_airflow.engine import _fits

    def across_classes(codes, n_groups, rng):
        n = len(codes)
        return np.stack([rng.permutation(n) for _ in range(n_groups)])

    monkeypatch.setattr(_fits, "goldeneye_indices", across_classes)
    cfg = bc.TYPE1_CONFIGS[0]
    p = bc.type1_p_values(cfg, 40, n_permutations=19, random_state=99, n_jobs=1)
    assert np.count_nonzero(p <= ALPHA + 1e-12) > bc.binomial_allowance(40)


# ------------------------------------------------------------------------------ power

@pytest.mark.slow
def test_power_on_the_running_example():
    """All singletons is rejected (p < 0.05, ASTRID's rule) on >= 95 % of datasets of
    the paper's running example at its size (500 rows per class), svm, R = 49."""
    p = bc.power_p_values(20, n_permutations=49, n_jobs=2, random_state=1)
    detected = int(np.count_nonzero(p < ALPHA))
    assert detected >= 19, p  # >= 95 % of 20


# --------------------------------------------------------------------------- recovery

@pytest.mark.slow
def test_astrid_recovers_planted_groupings_svm():
    """ASTRID (svm, R' = 10, R = 49) recovers planted groupings of four shapes; the bar
    here is low (>= 5 of 8 exact, no shape missed twice), the benchmark has the rates."""
    runs = bc.recovery_runs(list(bc.RECOVERY_SHAPES), 2, n_jobs=2, random_state=2)
    exact = [r for r in runs if r["outcome"] == "exact"]
    assert len(exact) >= 5, runs
    for shape in bc.RECOVERY_SHAPES:
        assert any(r["outcome"] == "exact" for r in runs if r["shape"] == shape) or \
            shape.startswith("large"), (shape, runs)


@pytest.mark.slow
def test_astrid_recovers_planted_pairs_rf():
    """The rf preset (50 trees to fit CI; the benchmark uses more) recovers the
    pairs shape and the noise-columns shape."""
    shapes = ["two pairs + signal", "pair + 3 noise columns"]
    runs = bc.recovery_runs(shapes, 1, classifier="rf", params={"n_estimators": 50},
                            n_test=29, n_jobs=2, random_state=3)
    assert all(r["outcome"] == "exact" for r in runs), runs
