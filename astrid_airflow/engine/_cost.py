"""Know the cost before paying it: time a few fits, estimate the run, check a budget.

ASTRID's cost is its number of fits times the cost of one fit. The count is known
before the search starts (exact mode: the formula in docs/performance.md; adaptive
mode: a worst case, and an expected count from the measured savings), the cost of a fit
is not: it depends on the rows, the columns, the classifier and the machine. So before
the search a few fits are timed on the real training split with the chosen classifier
(a permutation of all singletons, one thread, in this process), and

    estimated seconds = fits × seconds per fit / workers.

The calibration fits use their own seed stream and are discarded, so the run's results
do not depend on them.

When the estimate exceeds a budget, :func:`advice` says what would fit: the rows of a
stratified sample (from the fit cost's growth with the rows, measured on a quarter of
the training split), a faster preset (``hgb``, timed the same way) and adaptive mode.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ._fits import FitData, Task, backend_kind, run_one
from ._progress import format_seconds

# Adaptive mode's expected saving in fits: the smallest reduction measured on the
# paper's datasets with m >= 8 was 5.6x (docs/performance.md); 5 leaves a margin.
ADAPTIVE_REDUCTION = 5.0
# Calibration: stop after this many fits or this many seconds (at least one fit): many
# fits when they are cheap (the median is then stable), one when a fit takes long.
CALIBRATION_FITS = 30
CALIBRATION_SECONDS = 1.5


@dataclass(frozen=True)
class CostEstimate:
    """The estimate of a run, recorded in the result (``estimate``)."""

    seconds_per_fit: float
    calibration_fits: int
    calibration_seconds: float
    fits: int  # the count the estimate uses
    fits_kind: str  # "exact" or "adaptive, expected"
    fits_worst_case: int
    workers: int
    seconds: float
    seconds_worst_case: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """One line for the log."""
        text = (f"{self.fits:,} fits ({self.fits_kind}) x {1e3 * self.seconds_per_fit:.1f} ms "
                f"per fit / {self.workers} worker{'s' if self.workers > 1 else ''} = "
                f"{format_seconds(self.seconds)}")
        if self.fits_worst_case != self.fits:
            text += (f" (worst case {self.fits_worst_case:,} fits: "
                     f"{format_seconds(self.seconds_worst_case)})")
        return text


def fits_planned(m: int, n_search: int, n_test: int, *, score_each_k: bool,
                 adaptive: bool, m_sorted: int | None = None,
                 blocks: list[int] | None = None) -> tuple[int, int, str]:
    """(fits the estimate uses, worst-case fits, kind) for m attributes.

    Exact mode runs exactly its count. Adaptive mode skips ``acc_search`` and stops
    races and p-values early: at most the exact count without ``acc_search`` (an audit
    with ``adaptive_verify`` completes draws only up to R), expected about
    ``ADAPTIVE_REDUCTION`` times fewer. ``m_sorted``: attributes the sorting evaluates
    (after a screen; the others are detached without fits); ``blocks``: the sizes of the
    screen's blocks, sorted one after another (``sort_attributes``).
    """
    s = m if m_sorted is None else m_sorted  # attributes the sorting evaluates
    # 2-splits: only cuts after the free prefix are evaluated (_clustering.split_scores)
    from ._clustering import sorting_evaluations

    search = (n_search * sorting_evaluations(s, blocks)
              + max(0, min(s, m) - 1) * n_search)
    tests = (m - 1) * n_test + 1
    if not adaptive:
        exact = search + (m - 1) * n_search * bool(score_each_k) + tests
        return exact, exact, "exact"
    worst = search + tests
    return max(1, math.ceil(worst / ADAPTIVE_REDUCTION)), worst, "adaptive, expected"


def effective_workers(n_jobs: int, backend: str | None) -> int:
    """Fits that really run at once: n_jobs, capped by the cores of a local backend."""
    from joblib import cpu_count

    if backend_kind(backend) is not None:
        cores = cpu_count()
        return max(1, min(cores, n_jobs) if n_jobs > 0 else cores)
    return max(1, n_jobs if n_jobs > 0 else os.cpu_count() or 1)  # e.g. a Dask cluster


def _imported() -> bool:
    from . import _fits  # noqa: F401  (scikit-learn and the engine, as a fit needs them)

    return True


def warm_up_workers(n_jobs: int, backend: str | None) -> float:
    """Start local worker processes before the search; returns the seconds it took.

    joblib keeps its loky workers for the next call, so starting them (a process and
    the scikit-learn imports each) here keeps that one-off cost out of the search's
    time and of the estimate's error. Nothing to do for one job, threads or a cluster.
    """
    from joblib import Parallel, delayed

    if n_jobs == 1 or backend_kind(backend) != "processes":
        return 0.0
    start = time.perf_counter()
    Parallel(n_jobs=n_jobs, backend=backend)(delayed(_imported)() for _ in range(
        2 * effective_workers(n_jobs, backend)))
    return time.perf_counter() - start


def calibrate(data: FitData, seed: np.random.SeedSequence, n_attributes: int, *,
              max_fits: int = CALIBRATION_FITS,
              max_seconds: float = CALIBRATION_SECONDS) -> tuple[float, int, float]:
    """Seconds per fit (median), fits timed and seconds spent, on one thread.

    Fits are permuted by all singletons (the most common kind in the search) and scored
    on the search split. The first fit also pays one-off costs (imports, caches), so
    with three or more fits it is left out of the median.
    """
    singles = tuple((i,) for i in range(n_attributes))
    times: list[float] = []
    start = time.perf_counter()
    with threadpool_limits(limits=1):
        for s in seed.spawn(max_fits):
            t0 = time.perf_counter()
            run_one(data, Task("search", singles, s))
            times.append(time.perf_counter() - t0)
            if time.perf_counter() - start >= max_seconds:
                break
    kept = times[1:] if len(times) >= 3 else times
    return float(np.median(kept)), len(times), time.perf_counter() - start


def calibrate_run(data: FitData, seed: np.random.SeedSequence, n_attributes: int, *,
                  n_jobs: int, backend: str | None, workers: int,
                  max_seconds: float = CALIBRATION_SECONDS) -> tuple[float, int, float]:
    """Seconds per fit per worker as the search will see them; fits and seconds spent.

    Calls of the fit runner itself with as many workers as the search, the number of
    fits growing until a call lasts 0.5 s (or ``max_seconds`` are spent), so the figure
    includes what the search pays besides fitting (per-call thread limits, dispatch,
    shipping the data, cores shared with other processes): ``wall seconds / fits x
    workers`` of the last call. A fit of half a second or more is timed alone. Worker
    processes are started first (:func:`warm_up_workers`), outside the timing: joblib
    keeps them for the search.
    """
    from ._fits import run_tasks, shared_fit_data

    warm_up_workers(n_jobs, backend)
    singles = tuple((i,) for i in range(n_attributes))
    seeds = iter(seed.spawn(4096))
    count, done, start = workers, 0, time.perf_counter()
    with shared_fit_data(data, n_jobs, backend) as shared:
        while True:
            tasks = [Task("search", singles, next(seeds)) for _ in range(count)]
            t0 = time.perf_counter()
            run_tasks(shared, tasks, n_jobs=n_jobs, backend=backend, progress=False)
            wall = time.perf_counter() - t0
            done += count
            spent = time.perf_counter() - start
            # the first call also pays one-off costs (the oneDAL import); a slow first
            # call is timed again without them
            if wall >= 0.5 and done == count and spent < max_seconds:
                continue
            if wall >= 0.5 or spent >= max_seconds or done + 4 * count > 4096:
                break
            count = int(count * min(8.0, 0.5 / max(wall, 1e-3))) + 1
    return wall / count * workers, done, time.perf_counter() - start


def estimate(seconds_per_fit: float, n_fits: tuple[int, int, str], workers: int,
             calibration: tuple[int, float]) -> CostEstimate:
    fits, worst, kind = n_fits
    return CostEstimate(
        seconds_per_fit=seconds_per_fit, calibration_fits=calibration[0],
        calibration_seconds=calibration[1], fits=fits, fits_kind=kind,
        fits_worst_case=worst, workers=workers,
        seconds=fits * seconds_per_fit / workers,
        seconds_worst_case=worst * seconds_per_fit / workers)


def subsample_fit_data(data: FitData, fraction: float,
                       seed: np.random.SeedSequence) -> FitData:
    """The same encoded data with a random ``fraction`` of every split's rows."""
    rng = np.random.default_rng(seed)

    def part(X, y):
        n = max(8, round(fraction * len(y)))
        idx = np.sort(rng.choice(len(y), size=min(n, len(y)), replace=False))
        return (X[idx] if isinstance(X, np.ndarray) else X.iloc[idx].reset_index(drop=True),
                y[idx])

    X_train, y_train = part(data.X_train, data.y_train)
    return dataclasses.replace(data, X_train=X_train, y_train=y_train,
                               eval_sets={k: part(*v) for k, v in data.eval_sets.items()})


def growth_exponent(data: FitData, seed: np.random.SeedSequence, n_attributes: int
                    ) -> float:
    """a in ``cost ∝ rows^a``, from fits on all and on a quarter of the rows (one
    process, one thread each); clamped to [1, 2.5].

    1 is linear (naive Bayes, histogram boosting), about 2 an RBF SVM (kernel matrix).
    """
    small = subsample_fit_data(data, 0.25, seed)
    t_full, _, _ = calibrate(data, seed, n_attributes, max_fits=3, max_seconds=1.0)
    t_small, _, _ = calibrate(small, seed, n_attributes, max_fits=3, max_seconds=1.0)
    if t_small <= 0 or t_full <= 0:
        return 1.0
    return float(np.clip(math.log(t_full / t_small) / math.log(4.0), 1.0, 2.5))


def rows_that_fit(n_rows: int, estimated: float, budget: float, exponent: float) -> int:
    """Rows of a sample whose run fits ``budget``, two significant digits, rounded down."""
    n = n_rows * (budget / estimated) ** (1.0 / exponent)
    if n < 1:
        return 0
    scale = 10 ** max(0, int(math.log10(n)) - 1)
    return int(n // scale * scale)
