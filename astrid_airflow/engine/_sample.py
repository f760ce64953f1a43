"""Learning on a stratified sample of a large reference table.

ASTRID's cost grows with the rows of every fit, while what it measures (which
attributes a classifier needs together) stops changing once the classifier has seen
enough rows. So on a large table the search can run on a stratified sample: every
class keeps its share of rows (at least ``MIN_PER_CLASS``, or all of a smaller class).
The sample is drawn from the run's own seed stream, so it is reproducible for a seed,
and recorded in the result (``sample``: rule, rows, seed). The surrogate shuffle still
applies the learned grouping to every row of the table.

``sample="auto"`` chooses the size by a stated rule, measured on the table itself: a
learning curve of the chosen classifier. A held-out stratified evaluation set is drawn
first (a quarter of the table, at most ``AUTO_EVAL_ROWS`` rows); then, for sample sizes
N = ``AUTO_START``, 2·``AUTO_START``, 4·``AUTO_START``, ... rows, the classifier is fitted
once on a stratified subsample of N/2 rows of the rest (the training half a search on N
rows would use) and scored on the evaluation set. The chosen N is the first size whose
doubling improves accuracy by no more than ``max(AUTO_TOLERANCE, 2 se)``, ``se`` the
paired standard error of the difference of the two accuracies on the same evaluation
rows (McNemar: ``sqrt(d) / n_eval``, d the rows exactly one of the two fits gets
right). A doubling significantly *worse* (by more than the same tolerance) is one
fit's noise, not a plateau: the next doubling is then compared with N as well, and the
curve stops at N unless it improves on N (``curve_step``). If accuracy
still improves when the rest of the table is used up, every row is used; a curve fit
slower than ``AUTO_MAX_FIT_SECONDS`` ends the curve at its size. Tables of at
most ``AUTO_MIN_ROWS`` rows are never sampled (all of the paper's data). Every draw
and classifier seed comes from the run's seed, so the size is reproducible.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import check_positive_int

log = logging.getLogger("astrid_airflow")

# Rows kept of every class (or all of a smaller class): enough for the 50/25/25 split.
MIN_PER_CLASS = 8
# The "auto" rule (see the module docstring).
AUTO_MIN_ROWS = 20_000
AUTO_START = 5_000
AUTO_EVAL_ROWS = 20_000
AUTO_TOLERANCE = 0.005
# A curve fit slower than this ends the curve at its size: a search of thousands of such
# fits would not be affordable anyway (docs/engine.md).
AUTO_MAX_FIT_SECONDS = 30.0
# Above this many rows `astrid learn` without a choice uses the scalable path: where an
# RBF-SVM fit stops being affordable, and where "auto" starts sampling; every table of
# the paper is below it.
LARGE_TABLE_ROWS = AUTO_MIN_ROWS


def large_table_defaults(n_rows: int) -> dict:
    """The defaults ``astrid learn`` resolves for a table of ``n_rows`` rows.

    Up to ``LARGE_TABLE_ROWS``: the paper's run (``svm``, every row, exact mode). Above:
    ``hgb`` (fit cost linear in the rows), ``sample="auto"`` (the learning-curve rule)
    and adaptive mode (racing and sequential p-values), so a run with no flags can
    finish (docs/engine.md, "The default for large tables").
    """
    if n_rows <= LARGE_TABLE_ROWS:
        return {"classifier": "svm", "sample": None, "adaptive": False}
    return {"classifier": "hgb", "sample": "auto", "adaptive": True}


def _rule_text() -> str:
    return (f"the first size N ({AUTO_START:,} x 2^i rows) whose doubling improves the "
            "classifier's accuracy on a held-out stratified set by at most "
            f"max({AUTO_TOLERANCE}, 2 se), se paired (McNemar); after a significant drop "
            "the next doubling is compared with N too; every row if accuracy still "
            f"improves; tables of at most {AUTO_MIN_ROWS:,} rows whole")


#: How :func:`stratified_sample` rounds each class's share of the rows.
ROUNDING_RULES = ("largest_remainder", "half_up")


def stratified_sample(codes: np.ndarray, n: int, seed: np.random.SeedSequence, *,
                      min_per_class: int = MIN_PER_CLASS,
                      rounding: str = "largest_remainder") -> np.ndarray:
    """Sorted row indices of a stratified sample of about ``n`` rows.

    Classes get ``n`` times their share, at least ``min(min_per_class, class size)``;
    rows within a class are drawn without replacement. ``rounding="largest_remainder"``
    (the search's samples): the shares sum to ``n``, the largest remainders rounded up;
    ``"half_up"`` (the release layer's subsamples): each share rounded half up on its
    own. ``n >= len(codes)`` returns every row.
    """
    if rounding not in ROUNDING_RULES:
        raise ParameterError(f"Invalid rounding: {rounding!r}. Must be one of "
                             f"{', '.join(ROUNDING_RULES)}.")
    total = codes.size
    if n >= total:
        return np.arange(total)
    counts = np.bincount(codes)
    if rounding == "half_up":
        alloc = np.floor(counts * (n / total) + 0.5).astype(int)
    else:
        exact = n * counts / total
        alloc = np.floor(exact).astype(int)
        short = n - int(alloc.sum())
        if short > 0:  # largest remainders, ties to the earlier class
            alloc[np.argsort(-(exact - alloc), kind="stable")[:short]] += 1
    alloc = np.minimum(counts, np.maximum(alloc, np.minimum(counts, min_per_class)))
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(codes == c), size=int(a), replace=False)
              for c, a in enumerate(alloc) if a]
    return np.sort(np.concatenate(picked))


def check_sample(sample: object) -> int | str | None:
    """``sample`` as None, ``"auto"`` or a row count >= 2 * MIN_PER_CLASS."""
    if sample is None or (isinstance(sample, str) and sample.lower() == "none"):
        return None
    if isinstance(sample, str) and sample.lower() == "auto":
        return "auto"
    if isinstance(sample, str) and sample.isdigit():
        sample = int(sample)
    return check_positive_int(sample, "sample", minimum=2 * MIN_PER_CLASS)


def curve_step(gain: float, tol: float, dipped: bool) -> str:
    """What a doubling that changed accuracy by ``gain`` (against the last point kept)
    means: ``"improved"`` (go on), ``"dip"`` (go on once more: significantly *worse*
    with more rows is one fit's noise — a learning curve does not fall in expectation —
    not a plateau; 1,000,000 x 30 planted: 0.969 at 10,000 rows, 0.943 at 20,000) or
    ``"stop"`` (a plateau, or a second doubling in a row that did not improve)."""
    if gain > tol:
        return "improved"
    if gain < -tol and not dipped:
        return "dip"
    return "stop"


def auto_sample_size(codes: np.ndarray, X: pd.DataFrame, *, classifier: object,
                     params: dict | None, scoring: str, n_classes: int,
                     seed: np.random.SeedSequence) -> tuple[int, dict]:
    """Rows to learn on by the learning-curve rule, and its record (``curve``...)."""
    from sklearn.base import clone

    from ._classifiers import set_random_state
    from ._fits import prepare_fit_data

    n = codes.size
    if n <= AUTO_MIN_ROWS:
        return n, {"rule_text": _rule_text(),
                   "reason": f"at most {AUTO_MIN_ROWS:,} rows: every row"}
    eval_ss, draw_ss, fit_ss = seed.spawn(3)
    held = stratified_sample(codes, min(AUTO_EVAL_ROWS, n // 4), eval_ss)
    rest = np.setdiff1d(np.arange(n), held, assume_unique=True)
    n_eval = held.size
    curve: list[dict] = []
    size, chosen, stop = AUTO_START, n, "table used up"
    previous = np.zeros(n_eval, dtype=bool)
    ref, dipped = -1, False  # the curve point a doubling is compared with
    draws = iter(draw_ss.spawn(64))
    fits = iter(fit_ss.spawn(64))
    while True:
        train = rest[stratified_sample(codes[rest], min(size // 2, rest.size), next(draws))]
        data = prepare_fit_data(classifier, X.iloc[train], codes[train],
                                {"valid": (X.iloc[held], codes[held])}, scoring=scoring,
                                n_classes=n_classes, params=params)
        start = time.perf_counter()
        with threadpool_limits(limits=1):
            rng = np.random.default_rng(next(fits))
            model = set_random_state(clone(data.model), int(rng.integers(0, 2**31 - 1)))
            model.fit(data.X_train, data.y_train)
            X_eval, y_eval = data.eval_sets["valid"]
            right = np.asarray(model.predict(X_eval)) == y_eval
        acc = float(right.mean())
        curve.append({"rows": int(min(size, 2 * rest.size)), "train_rows": int(train.size),
                      "accuracy": float(acc),
                      "seconds": round(time.perf_counter() - start, 3)})
        log.info("astrid sample (auto): %s rows -> accuracy %.4f", f"{curve[-1]['rows']:,}",
                 acc)
        if ref >= 0:
            a, b = curve[ref]["accuracy"], curve[-1]["accuracy"]
            # paired on the same rows (McNemar): se of the difference from the rows
            # exactly one of the two models gets right
            tol = max(AUTO_TOLERANCE, 2 * math.sqrt(np.sum(right != previous)) / n_eval)
            curve[-1]["tolerance"] = round(tol, 5)
            verdict = curve_step(b - a, tol, dipped)
            if verdict == "stop":
                chosen = curve[ref]["rows"]
                stop = (f"doubling gained {b - a:+.4f} <= {tol:.4f}" if not dipped else
                        f"two doublings past {chosen:,} rows gained <= {tol:.4f}")
                break
            if verdict == "dip":
                curve[-1]["dip"], dipped = True, True
        if not curve[-1].get("dip"):
            ref, dipped, previous = len(curve) - 1, False, right
        if curve[-1]["seconds"] > AUTO_MAX_FIT_SECONDS:
            chosen = curve[-1]["rows"]
            stop = f"a fit took {curve[-1]['seconds']:.0f} s > {AUTO_MAX_FIT_SECONDS:.0f} s"
            break
        if size // 2 >= rest.size:
            break
        size *= 2
    return min(chosen, n), {"rule_text": _rule_text(), "curve": curve, "eval_rows": int(n_eval),
                            "stop": stop}
