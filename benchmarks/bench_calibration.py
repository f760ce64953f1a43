"""Calibration of the grouping test and of ASTRID: type-I error, power, recovery.

Three questions, each answered by simulation (``docs/reliability.md`` has the figures):

1. **Type-I error** of :func:`astrid_airflow.test_grouping`. Datasets are drawn whose
   class-conditional distribution factorises *exactly* by a planted grouping (groups
   independent given the class; within a group a dependence whose sign changes with the
   class, so a classifier gains from keeping the group together). Testing that grouping
   (or a coarsening of it, which is also true) at alpha = 0.05 must reject, i.e. give
   ``p <= alpha``, in at most 5 % of datasets up to Monte Carlo error. With R = 19 the
   smallest p-value is 1/20 = alpha, so the size is exactly alpha for an exchangeable
   statistic and the check has no slack to hide an invalid p-value in.
2. **Power**: the paper's running example (``make_synthetic``, 500 rows per class); the
   all-singletons grouping must be rejected (``p < alpha``, ASTRID's rule) in >= 95 %.
3. **Recovery**: ASTRID on planted groupings of several shapes (pairs, a triple, one
   large group, pure-noise columns), ``svm`` and ``rf``; exact recovery rate and how the
   misses fail (too coarse: planted groups merged; too fine: a planted group split).

The Monte Carlo margin of a rejection rate over N datasets is the one-sided exact
binomial bound: the rate may exceed alpha by at most ``c/N - alpha`` where ``c`` is the
0.99 quantile of Binomial(N, alpha) (so a valid test fails the check with probability
below 1 %).

Run ``python benchmarks/bench_calibration.py`` (about 20–30 minutes on 2 cores); it writes
``benchmarks/results/calibration.json`` and ``.md``. ``tests/engine/test_calibration.py`` imports
the generators from here and runs smaller versions as ``slow`` tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ALPHA = 0.05
RESULTS = Path(__file__).resolve().parent / "results"

# --------------------------------------------------------------------------- generators

Block = tuple  # ("corr", size, rho) | ("shift", gap) | ("noise",) | ("cat",)


def _signs(size: int, c: int) -> np.ndarray:
    """Sign pattern of class ``c`` for a correlated block: class 0 none, others flip."""
    if c == 0:
        return np.ones(size)
    j = np.arange(1, size + 1)
    return np.where((j >> ((c - 1) % 8)) & 1, -1.0, 1.0)


def _block_width(block: Block) -> int:
    if block[0] in ("corr", "sum"):
        return block[1]
    return {"shift": 1, "noise": 1, "cat": 2, "parity3": 3}[block[0]]


def planted_table(blocks: Sequence[Block], class_sizes: Sequence[int],
                  random_state: object) -> tuple[pd.DataFrame, list[list[str]]]:
    """A table whose class-conditional distribution factorises by the planted grouping.

    Parameters
    ----------
    blocks : sequence of tuples
        One per planted group, its columns drawn jointly and independently of the other
        groups given the class:

        * ``("corr", s, rho)``: s standard normals with equicorrelation ``rho``, signs
          flipped by a class-specific pattern (marginals are N(0, 1) in every class,
          the class shows only in the sign of the within-group correlations);
        * ``("parity3",)``: x1, x2 ~ N(0, 1), x3 = ±x1·x2 + noise, the sign set by the
          class: a three-way interaction (every pair is independent of the class);
        * ``("sum", s)``: s − 1 standard normals and a last column ±(their sum)/√(s−1)
          + noise, the sign set by the class: one large group that needs all members;
        * ``("shift", gap)``: one normal column, mean ``gap * (c - (C - 1) / 2)``;
        * ``("noise",)``: one U(0, 1) column independent of the class;
        * ``("cat",)``: two 3-level categorical columns, ``b = a + c (mod 3)`` with
          probability 0.8 (else uniform): a categorical interaction.
    class_sizes : sequence of int
        Rows per class (class labels ``0..C-1``).
    random_state : int or SeedSequence

    Returns
    -------
    (DataFrame, grouping)
        Columns ``a1..am`` then ``class``; the planted grouping as lists of names.
    """
    rng = np.random.default_rng(random_state)
    names, grouping, start = [], [], 1
    for b in blocks:
        width = _block_width(b)
        cols = [f"a{start + i}" for i in range(width)]
        names += cols
        grouping.append(cols)
        start += width
    n_classes = len(class_sizes)
    parts = []
    for c, n_c in enumerate(class_sizes):
        cols: list[np.ndarray] = []
        for b in blocks:
            if b[0] == "corr":
                s, rho = b[1], b[2]
                cov = np.full((s, s), rho) + (1 - rho) * np.eye(s)
                z = rng.multivariate_normal(np.zeros(s), cov, size=n_c) * _signs(s, c)
                cols += list(z.T)
            elif b[0] == "parity3":
                # a three-way interaction: every pair is independent of the class
                x1, x2 = rng.normal(size=n_c), rng.normal(size=n_c)
                sign = 1.0 if c % 2 == 0 else -1.0
                cols += [x1, x2, sign * x1 * x2 + 0.3 * rng.normal(size=n_c)]
            elif b[0] == "sum":
                # the last column follows the sum of the others, with a class sign
                s = b[1]
                x = rng.normal(size=(n_c, s - 1))
                sign = 1.0 if c % 2 == 0 else -1.0
                last = sign * x.sum(axis=1) / np.sqrt(s - 1) + 0.5 * rng.normal(size=n_c)
                cols += [*x.T, last]
            elif b[0] == "shift":
                cols.append(rng.normal(b[1] * (c - (n_classes - 1) / 2), 1.0, n_c))
            elif b[0] == "noise":
                cols.append(rng.uniform(0.0, 1.0, n_c))
            elif b[0] == "cat":
                a = rng.integers(0, 3, n_c)
                keep = rng.random(n_c) < 0.8
                bb = np.where(keep, (a + c) % 3, rng.integers(0, 3, n_c))
                cols += [a, bb]
            else:  # pragma: no cover - programming error in a config
                raise ValueError(f"unknown block {b!r}")
        frame = pd.DataFrame(dict(zip(names, cols)))
        frame["class"] = c
        parts.append(frame)
    table = pd.concat(parts, ignore_index=True)
    for b_cols, b in zip(grouping, blocks):
        if b[0] == "cat":
            for col in b_cols:
                table[col] = pd.Categorical([f"l{v}" for v in table[col]],
                                            categories=["l0", "l1", "l2"])
    # Row order must not carry the class: shuffle the rows once.
    table = table.iloc[rng.permutation(len(table))].reset_index(drop=True)
    return table, grouping


# ------------------------------------------------------------------------------ configs

@dataclass(frozen=True)
class TypeIConfig:
    """A null-true setting: the tested grouping is implied by the planted one."""

    name: str
    blocks: tuple
    class_sizes: tuple
    classifier: str
    tested: tuple | None = None  # None: the planted grouping itself

    def tested_grouping(self, planted: list[list[str]]) -> list[list[str]]:
        return [list(g) for g in self.tested] if self.tested is not None else planted


TYPE1_CONFIGS = (
    TypeIConfig("m=4, 2 classes 50/50, svm", (("corr", 2, 0.9), ("shift", 0.6), ("noise",)),
                (50, 50), "svm"),
    TypeIConfig("m=6, 3 classes 50/50/50, svm",
                (("corr", 3, 0.8), ("corr", 2, 0.9), ("shift", 0.8)), (50, 50, 50), "svm"),
    TypeIConfig("m=5 mixed (categorical pair), 2 classes 140/60, svm",
                (("cat",), ("corr", 2, 0.9), ("noise",)), (140, 60), "svm"),
    TypeIConfig("m=5, 2 classes 60/60, svm, coarsened grouping",
                (("corr", 2, 0.9), ("shift", 0.6), ("noise",), ("shift", 0.4)), (60, 60),
                "svm", tested=(("a1", "a2", "a3"), ("a4", "a5"))),
)

RECOVERY_SHAPES = {
    "two pairs + signal": (("corr", 2, 0.9), ("corr", 2, 0.9), ("shift", 0.6)),
    "triple (3-way interaction) + signal + noise": (("parity3",), ("shift", 0.6),
                                                    ("noise",)),
    "large group of 5 + signal": (("sum", 5), ("shift", 0.6)),
    "pair + 3 noise columns": (("corr", 2, 0.95), ("noise",), ("noise",), ("noise",)),
}


# --------------------------------------------------------------------------- statistics

def binomial_allowance(n: int, alpha: float = ALPHA, level: float = 0.99) -> int:
    """Largest rejection count over ``n`` datasets a valid level-``alpha`` test may show
    (the ``level`` quantile of Binomial(n, alpha))."""
    from scipy.stats import binom

    return int(binom.ppf(level, n, alpha))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Two-sided exact confidence interval of a binomial proportion."""
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


# ------------------------------------------------------------------------------ runners

def _parallel(n_jobs: int):
    """joblib ``Parallel``; this file is not an installed module, so its functions are
    shipped to the workers by value (also when the tests import it from its path)."""
    import cloudpickle  # what loky pickles callables with
    from joblib import Parallel

    if __name__ != "__main__" and __name__ in sys.modules:
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return Parallel(n_jobs=n_jobs)


def _one_type1(config: TypeIConfig, seed: np.random.SeedSequence, n_permutations: int
               ) -> float:
    from astrid_airflow import test_grouping

    data_ss, test_ss = seed.spawn(2)
    table, planted = planted_table(config.blocks, config.class_sizes, data_ss)
    r = test_grouping(table, target="class", grouping=config.tested_grouping(planted),
                      classifier=config.classifier, n_permutations=n_permutations,
                      random_state=test_ss, n_jobs=1, progress=False)
    return r.p_value


def type1_p_values(config: TypeIConfig, n_datasets: int, *, n_permutations: int = 19,
                   random_state: int = 0, n_jobs: int = 1) -> np.ndarray:
    """p-values of the planted (null-true) grouping over ``n_datasets`` datasets."""
    from joblib import delayed

    seeds = np.random.SeedSequence(random_state).spawn(n_datasets)
    p = _parallel(n_jobs)(delayed(_one_type1)(config, s, n_permutations)
                                for s in seeds)
    return np.asarray(p, dtype=float)


def _one_power(seed: np.random.SeedSequence, classifier: str, params: dict | None,
               n_permutations: int, n_per_class: int) -> float:
    from astrid_airflow import make_synthetic, test_grouping

    data_ss, test_ss = seed.spawn(2)
    table = make_synthetic(n_per_class, random_state=data_ss)
    r = test_grouping(table, target="class", grouping="a1;a2;a3;a4", classifier=classifier,
                      classifier_params=params, n_permutations=n_permutations,
                      random_state=test_ss, n_jobs=1, progress=False)
    return r.p_value


def power_p_values(n_datasets: int, *, classifier: str = "svm", params: dict | None = None,
                   n_permutations: int = 49, n_per_class: int = 500, random_state: int = 1,
                   n_jobs: int = 1) -> np.ndarray:
    """p-values of the all-singletons grouping on the running example."""
    from joblib import delayed

    seeds = np.random.SeedSequence(random_state).spawn(n_datasets)
    p = _parallel(n_jobs)(delayed(_one_power)(s, classifier, params, n_permutations,
                                                    n_per_class) for s in seeds)
    return np.asarray(p, dtype=float)


def classify_recovery(chosen: Sequence[Sequence[str]], planted: Sequence[Sequence[str]]
                      ) -> str:
    """``exact``, ``too coarse`` (planted groups merged, none split), ``too fine`` (a
    planted group split, none merged) or ``mixed``."""
    chosen_sets = {frozenset(g) for g in chosen}
    planted_sets = {frozenset(g) for g in planted}
    if chosen_sets == planted_sets:
        return "exact"
    split = any(not any(p <= c for c in chosen_sets) for p in planted_sets)
    merged = any(not any(c <= p for p in planted_sets) for c in chosen_sets)
    if split and merged:
        return "mixed"
    return "too fine" if split else "too coarse"


def _one_recovery(shape: str, seed: np.random.SeedSequence, classifier: str,
                  params: dict | None, n_search: int, n_test: int, n_per_class: int
                  ) -> dict:
    from astrid_airflow import astrid

    data_ss, run_ss = seed.spawn(2)
    table, planted = planted_table(RECOVERY_SHAPES[shape], (n_per_class, n_per_class),
                                   data_ss)
    r = astrid(table, target="class", classifier=classifier, classifier_params=params,
               n_search=n_search, n_test=n_test, alpha=ALPHA, random_state=run_ss,
               n_jobs=1, progress=False)
    chosen = [list(g) for g in r.grouping.groups]
    return {"shape": shape, "outcome": classify_recovery(chosen, planted),
            "chosen": str(r.grouping), "planted": ";".join(",".join(g) for g in planted),
            "seconds": r.seconds}


def recovery_runs(shapes: Sequence[str], n_reps: int, *, classifier: str = "svm",
                  params: dict | None = None, n_search: int = 10, n_test: int = 49,
                  n_per_class: int = 500, random_state: int = 2, n_jobs: int = 1
                  ) -> list[dict]:
    """ASTRID on ``n_reps`` datasets of every planted ``shape``."""
    from joblib import delayed

    jobs = []
    for i, shape in enumerate(shapes):
        for s in np.random.SeedSequence([random_state, i]).spawn(n_reps):
            jobs.append((shape, s))
    return list(_parallel(n_jobs)(
        delayed(_one_recovery)(shape, s, classifier, params, n_search, n_test, n_per_class)
        for shape, s in jobs))


# --------------------------------------------------------------------------- benchmark

@dataclass
class Report:
    settings: dict = field(default_factory=dict)
    type1: list = field(default_factory=list)
    power: list = field(default_factory=list)
    recovery: list = field(default_factory=list)


def _type1_row(name: str, p: np.ndarray, n_permutations: int, classifier: str) -> dict:
    n, k = p.size, int(np.count_nonzero(p <= ALPHA + 1e-12))
    allowed = binomial_allowance(n)
    return {"config": name, "classifier": classifier, "datasets": n, "R": n_permutations,
            "rejections": k, "rate": k / n, "ci95": clopper_pearson(k, n),
            "allowed_rejections": allowed, "margin": allowed / n - ALPHA,
            "ok": k <= allowed,
            "p_le_0.5": float(np.mean(p <= 0.5 + 1e-12)),
            "p_deciles": np.quantile(p, np.linspace(0.1, 0.9, 9)).round(3).tolist()}


def _power_row(name: str, p: np.ndarray, n_permutations: int) -> dict:
    n, k = p.size, int(np.count_nonzero(p < ALPHA))
    return {"setting": name, "datasets": n, "R": n_permutations, "detected": k,
            "power": k / n, "ci95": clopper_pearson(k, n), "max_p": float(p.max())}


def _recovery_rows(runs: list[dict], classifier: str, note: str) -> list[dict]:
    rows = []
    for shape in dict.fromkeys(r["shape"] for r in runs):
        rs = [r for r in runs if r["shape"] == shape]
        outcomes = [r["outcome"] for r in rs]
        k = outcomes.count("exact")
        rows.append({"shape": shape, "classifier": classifier, "note": note,
                     "datasets": len(rs), "exact": k, "rate": k / len(rs),
                     "ci95": clopper_pearson(k, len(rs)),
                     "too_coarse": outcomes.count("too coarse"),
                     "too_fine": outcomes.count("too fine"),
                     "mixed": outcomes.count("mixed"),
                     "planted": rs[0]["planted"],
                     "misses": sorted({r["chosen"] for r in rs if r["outcome"] != "exact"}),
                     "seconds_per_run": float(np.mean([r["seconds"] for r in rs]))})
    return rows


def _markdown(rep: Report) -> str:
    s = rep.settings
    out = ["# Calibration figures", "",
           f"Generated by `benchmarks/bench_calibration.py` on {s['machine']} "
           f"({s['date']}, {s['seconds']:.0f} s, n_jobs={s['n_jobs']}). alpha = {ALPHA}.", "",
           "## Type-I error of the grouping test (null-true groupings)", "",
           "Rejection: p <= alpha. Allowed: the 0.99 quantile of Binomial(N, alpha); "
           "margin = allowed/N - alpha.", "",
           "| setting | datasets | R | rejections | rate | 95 % CI | allowed (margin) | "
           "P(p <= 0.5) | ok |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rep.type1:
        lo, hi = r["ci95"]
        out.append(f"| {r['config']} | {r['datasets']} | {r['R']} | {r['rejections']} | "
                   f"{r['rate']:.3f} | [{lo:.3f}, {hi:.3f}] | {r['allowed_rejections']} "
                   f"(+{r['margin']:.3f}) | {r['p_le_0.5']:.3f} | {'yes' if r['ok'] else 'NO'} |")
    out += ["", "## Power on the running example (all singletons rejected, p < alpha)", "",
            "| setting | datasets | R | detected | power | 95 % CI | largest p |",
            "|---|---|---|---|---|---|---|"]
    for r in rep.power:
        lo, hi = r["ci95"]
        out.append(f"| {r['setting']} | {r['datasets']} | {r['R']} | {r['detected']} | "
                   f"{r['power']:.3f} | [{lo:.3f}, {hi:.3f}] | {r['max_p']:.3f} |")
    out += ["", "## Recovery of planted groupings by ASTRID (500 rows per class)", "",
            "| shape (planted) | classifier | datasets | exact | rate | 95 % CI | too coarse "
            "| too fine | mixed | s/run |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rep.recovery:
        lo, hi = r["ci95"]
        out.append(f"| {r['shape']} (`{r['planted']}`) | {r['classifier']} {r['note']} | "
                   f"{r['datasets']} | {r['exact']} | {r['rate']:.2f} | [{lo:.2f}, {hi:.2f}] "
                   f"| {r['too_coarse']} | {r['too_fine']} | {r['mixed']} | "
                   f"{r['seconds_per_run']:.1f} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--type1-datasets", type=int, default=500)
    ap.add_argument("--power-datasets", type=int, default=200)
    ap.add_argument("--power-rf-datasets", type=int, default=20)
    ap.add_argument("--recovery-svm-reps", type=int, default=25)
    ap.add_argument("--recovery-rf-reps", type=int, default=5)
    ap.add_argument("--rf-trees", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / "calibration"))
    args = ap.parse_args(argv)
    started = time.perf_counter()
    rep = Report()
    rf_params = {"n_estimators": args.rf_trees}
    for cfg in TYPE1_CONFIGS:
        p = type1_p_values(cfg, args.type1_datasets, n_permutations=19, n_jobs=args.jobs)
        rep.type1.append(_type1_row(cfg.name, p, 19, cfg.classifier))
        print(rep.type1[-1], flush=True)
    pooled_k = sum(r["rejections"] for r in rep.type1)
    pooled_n = sum(r["datasets"] for r in rep.type1)
    rep.type1.append({"config": "pooled", "classifier": "-", "datasets": pooled_n, "R": 19,
                      "rejections": pooled_k, "rate": pooled_k / pooled_n,
                      "ci95": clopper_pearson(pooled_k, pooled_n),
                      "allowed_rejections": binomial_allowance(pooled_n),
                      "margin": binomial_allowance(pooled_n) / pooled_n - ALPHA,
                      "ok": pooled_k <= binomial_allowance(pooled_n),
                      "p_le_0.5": float(np.mean([r["p_le_0.5"] for r in rep.type1])),
                      "p_deciles": []})
    p = power_p_values(args.power_datasets, n_jobs=args.jobs)
    rep.power.append(_power_row("synthetic, 500/class, svm", p, 49))
    print(rep.power[-1], flush=True)
    if args.power_rf_datasets:
        p = power_p_values(args.power_rf_datasets, classifier="rf", params=rf_params,
                           n_jobs=args.jobs, random_state=11)
        rep.power.append(_power_row(f"synthetic, 500/class, rf ({args.rf_trees} trees)", p,
                                    49))
        print(rep.power[-1], flush=True)
    shapes = list(RECOVERY_SHAPES)
    runs = recovery_runs(shapes, args.recovery_svm_reps, n_jobs=args.jobs)
    rep.recovery += _recovery_rows(runs, "svm", "(R'=10, R=49)")
    print(rep.recovery[-len(shapes):], flush=True)
    if args.recovery_rf_reps:
        runs = recovery_runs(shapes, args.recovery_rf_reps, classifier="rf", params=rf_params,
                             n_test=29, n_jobs=args.jobs, random_state=3)
        rep.recovery += _recovery_rows(runs, "rf", f"({args.rf_trees} trees, R'=10, R=29)")
        print(rep.recovery[-len(shapes):], flush=True)
    rep.settings = {"machine": f"{platform.machine()} {os.cpu_count()} cpu",
                    "python": sys.version.split()[0],
                    "date": time.strftime("%Y-%m-%d"), "n_jobs": args.jobs,
                    "seconds": time.perf_counter() - started, "alpha": ALPHA,
                    "args": vars(args)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(asdict(rep), indent=2) + "\n")
    out.with_suffix(".md").write_text(_markdown(rep))
    print(_markdown(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
