"""Test statistics T(D): performance of a classifier on held-out rows (paper Eq. 4).

Computed from integer class codes with ``bincount`` so a score costs microseconds
(thousands of them are computed per ASTRID run).
"""

from __future__ import annotations

import numpy as np

from astrid_airflow._errors import ParameterError

SCORINGS = ("accuracy", "balanced_accuracy", "f1_macro")


def check_scoring(scoring: object) -> str:
    if scoring not in SCORINGS:
        raise ParameterError(f"Unknown scoring {scoring!r}. Must be one of {list(SCORINGS)}.")
    return str(scoring)


def score(scoring: str, y_true: np.ndarray, y_pred: np.ndarray, n_classes: int) -> float:
    """Score integer-coded predictions.

    ``accuracy`` is the paper's statistic (the fraction of correctly classified test
    rows); ``balanced_accuracy`` is the mean per-class recall over the classes present
    in ``y_true``; ``f1_macro`` is the unweighted mean of per-class F1 over all classes
    that occur in ``y_true`` or ``y_pred``.
    """
    if scoring == "accuracy":
        return float(np.count_nonzero(y_true == y_pred)) / len(y_true)
    hit = y_true == y_pred
    tp = np.bincount(y_true[hit], minlength=n_classes).astype(float)
    support = np.bincount(y_true, minlength=n_classes).astype(float)
    if scoring == "balanced_accuracy":
        present = support > 0
        return float(np.mean(tp[present] / support[present]))
    predicted = np.bincount(y_pred, minlength=n_classes).astype(float)
    used = (support + predicted) > 0
    f1 = 2 * tp[used] / (support[used] + predicted[used])
    return float(np.mean(f1))
