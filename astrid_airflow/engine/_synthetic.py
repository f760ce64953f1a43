"""The paper's running example (Sec. 5 and Fig. 1; ``make_synthetic_dataset`` in astrid-r)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import check_positive_int, check_seed_sequence

# The running example is a demo table: two classes of at most a million rows (2,000,000
# rows, ~80 MB in memory, ~190 MB as CSV). A typo like ``--n-per-class 500000000`` would
# otherwise fill a disk; large benchmark tables come from ``make_planted``.
MAX_N_PER_CLASS = 1_000_000


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
    distribution only (different generators). ``n_per_class`` is at most
    :data:`MAX_N_PER_CLASS` (1,000,000; ``ParameterError`` above it).
    """
    n = check_positive_int(n_per_class, "n_per_class")
    if n > MAX_N_PER_CLASS:
        raise ParameterError(f"Invalid n_per_class: {n}. At most {MAX_N_PER_CLASS:,} rows "
                             "per class (the running example is a demo table).")
    rng = np.random.default_rng(check_seed_sequence(random_state))
    cov = np.array([[1.0, correlation], [correlation, 1.0]])
    a12 = rng.multivariate_normal([0.0, 0.0], cov, size=2 * n)
    a12[n:, 1] *= -1.0
    a3 = np.concatenate([rng.normal(mean_gap, 1.0, n), rng.normal(-mean_gap, 1.0, n)])
    a4 = rng.uniform(0.0, 1.0, 2 * n)
    return pd.DataFrame({"a1": a12[:, 0], "a2": a12[:, 1], "a3": a3, "a4": a4,
                         "class": np.repeat([0, 1], n)})


def make_planted(n_rows: int = 10_000, n_attributes: int = 50, *, n_pairs: int = 3,
                 correlation: float = 0.9, random_state: object = None
                 ) -> tuple[pd.DataFrame, list[list[str]]]:
    """A wide mixed table with planted interactions, for benchmarks at scale.

    Two balanced classes. Planted, each carrying class information only jointly:

    * ``n_pairs`` pairs: numeric pairs ``p{i}a, p{i}b`` bivariate normal with correlation
      ``+correlation`` in class 0 and ``-correlation`` in class 1 (the running example's
      a1, a2), and — the last pair — a categorical pair ``c0a, c0b`` of four levels,
      ``c0b = c0a`` in class 0 and ``c0a + 1 (mod 4)`` in class 1, 80 % of the time;
      every marginal is the same in both classes;
    * one triple ``t0a, t0b, t0c``: ``t0c = ±t0a·t0b + noise``, the sign by class, so
      every pair of the three has the same distribution in both classes;
    * two single signals ``s0``, ``s1`` (a class-dependent mean), independent of the rest;
    * noise columns up to ``n_attributes``: numeric and categorical, independent of
      everything.

    Returns the table (``class`` last) and the planted groups (pairs, then the triple).
    """
    n = check_positive_int(n_rows, "n_rows", minimum=8)
    rng = np.random.default_rng(check_seed_sequence(random_state))
    y = np.arange(n) % 2
    sign = np.where(y == 0, 1.0, -1.0)
    cols: dict[str, np.ndarray] = {}
    groups: list[list[str]] = []
    for i in range(n_pairs - 1):
        a = rng.normal(size=n)
        b = correlation * sign * a + np.sqrt(1 - correlation ** 2) * rng.normal(size=n)
        cols[f"p{i}a"], cols[f"p{i}b"] = a, b
        groups.append([f"p{i}a", f"p{i}b"])
    if n_pairs:
        ca = rng.integers(0, 4, n)
        keep = rng.random(n) < 0.8
        cb = np.where(keep, (ca + y) % 4, rng.integers(0, 4, n))
        levels = np.array(["w", "x", "y", "z"])
        cols["c0a"], cols["c0b"] = levels[ca], levels[cb]
        groups.append(["c0a", "c0b"])
    ta, tb = rng.normal(size=n), rng.normal(size=n)
    cols["t0a"], cols["t0b"] = ta, tb
    cols["t0c"] = sign * ta * tb + 0.3 * rng.normal(size=n)
    groups.append(["t0a", "t0b", "t0c"])
    cols["s0"] = rng.normal(size=n) + 0.5 * sign
    cols["s1"] = rng.normal(size=n) - 0.3 * sign
    j = 0
    while len(cols) < n_attributes:
        cols[f"n{j}"] = rng.normal(size=n) if j % 3 else \
            np.array(["u", "v", "w"])[rng.integers(0, 3, n)]
        j += 1
    table = pd.DataFrame(cols)
    table["class"] = y
    return table, groups
