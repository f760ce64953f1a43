"""The paper's running example (Sec. 5 and Fig. 1; ``make_synthetic_dataset`` in astrid-r)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._validation import check_positive_int, check_seed_sequence

__all__ = ["make_synthetic"]


def make_synthetic(n_per_class: int = 500, *, mean_gap: float = 0.6, correlation: float = 0.95,
                   random_state: object = None) -> pd.DataFrame:
    """Generate the synthetic dataset of the ASTRID paper.

    Two classes of ``n_per_class`` rows each, columns ``a1, a2, a3, a4, class``:

    * ``a1, a2`` bivariate normal, unit variances, correlation ``correlation``; in
      class 1 ``a2`` is negated. Each marginal is N(0, 1) in both classes, so the class
      shows only in the sign of the a1–a2 correlation (an interaction);
    * ``a3`` ~ N(+mean_gap, 1) in class 0 and N(−mean_gap, 1) in class 1;
    * ``a4`` ~ U(0, 1), independent of the class.

    The true grouping is {a1, a2}, {a3}, {a4}. Values match the R code in
    distribution only (different generators).
    """
    n = check_positive_int(n_per_class, "n_per_class")
    rng = np.random.default_rng(check_seed_sequence(random_state))
    cov = np.array([[1.0, correlation], [correlation, 1.0]])
    a12 = rng.multivariate_normal([0.0, 0.0], cov, size=2 * n)
    a12[n:, 1] *= -1.0
    a3 = np.concatenate([rng.normal(mean_gap, 1.0, n), rng.normal(-mean_gap, 1.0, n)])
    a4 = rng.uniform(0.0, 1.0, 2 * n)
    return pd.DataFrame({"a1": a12[:, 0], "a2": a12[:, 1], "a3": a3, "a4": a4,
                         "class": np.repeat([0, 1], n)})
