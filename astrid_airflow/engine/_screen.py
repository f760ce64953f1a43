"""Screening attributes before the sorting phase: many columns.

The sorting phase of Alg. 1 evaluates every remaining attribute at every step:
R'·(m(m+1)/2 − 1) fits, 505,000 at m = 100. Most columns of a wide table interact with
nothing, and that can be seen without a classifier: the grouping test's null
hypothesis is that the groups are independent *given the class*, so an attribute that
is independent of every other attribute given the class can be permuted apart from
them without changing the joint distribution — no classifier can tell, and its
detachment cannot lower the reward in expectation.

The screen tests every pair of attributes for dependence given the class: values
binned (numeric: ``BINS`` quantile bins; categorical: the ``BINS − 1`` most frequent
categories and "other"; missing values a bin of their own), a G-test of independence
in every class, the statistics and degrees of freedom summed over classes. A pair with
``p < ALPHA`` is dependent. Attributes in no dependent pair are **free**: the sorting
detaches them first, in column order, without evaluation; the greedy sorting runs on
the rest only. The 2-splits and p-values are unchanged (O(m) fits each).

The screen uses the training and search rows only (at most ``MAX_ROWS``, a stratified
subsample from the run's seed), never the test split, so every p-value stays valid
whatever the screen decides: it only changes which groupings are tested.

What it can miss: dependence the binned pairwise test does not see — dependence among
three or more attributes whose pairs are independent given the class (parity-like
structure), or dependence finer than ``BINS`` quantile bins, or too weak for the
screen's rows. Such attributes are detached first, i.e. put in groups of their own,
where the p-values then test that choice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._encoding import is_numeric_column
from ._sample import LARGE_TABLE_ROWS

BINS = 8
ALPHA = 1e-3  # per pair, unadjusted: a false "dependent" only costs fits, never a miss
MAX_ROWS = 100_000
# "auto" screens a table wider than MIN_ATTRIBUTES, or one of more than MIN_ROWS rows
# (the large-table path) with at least MIN_ATTRIBUTES_LARGE attributes: the paper's
# tables (at most 36 attributes, 8,124 rows) are searched whole, as in the paper. On
# the large-table path the sorting's O(m^2) fits do not fit a budget at 15-40 columns
# (docs/engine.md); at MIN_ROWS rows the pair test sees any pairwise
# dependence it can, so the risk it adds is only the pure higher-order one above.
MIN_ATTRIBUTES = 40
MIN_ROWS = LARGE_TABLE_ROWS  # where `astrid learn` takes the large-table path
MIN_ATTRIBUTES_LARGE = 4


def screen_applies(screen: bool | str, n_rows: int, n_attributes: int) -> bool:
    """Whether a run screens: ``screen`` True/False, or the "auto" rule above on the
    whole table's rows (before any sample) and attributes."""
    if screen != "auto":
        return bool(screen)
    return n_attributes > MIN_ATTRIBUTES or (
        n_rows > MIN_ROWS and n_attributes >= MIN_ATTRIBUTES_LARGE)


def _binned(col: pd.Series) -> np.ndarray:
    if is_numeric_column(col):
        values = col.to_numpy(dtype=float, na_value=np.nan)
        ok = ~np.isnan(values)
        edges = np.unique(np.quantile(values[ok], np.linspace(0, 1, BINS + 1)[1:-1])) \
            if ok.any() else np.array([])
        out = np.full(values.size, edges.size + 1, dtype=np.intp)  # missing: last bin
        out[ok] = np.searchsorted(edges, values[ok], side="right")
        return out
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    keep = np.argsort(-counts, kind="stable")[: BINS - 1]
    remap = np.full(len(uniques) + 1, BINS - 1, dtype=np.intp)  # others: one bin
    remap[keep] = np.arange(keep.size)
    out = remap[codes]
    out[codes < 0] = BINS  # missing: a bin of its own
    return out


def _g_test(a: np.ndarray, b: np.ndarray, width: int) -> tuple[float, int]:
    table = np.bincount(a * width + b, minlength=width * width).reshape(width, width)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    if table.shape[0] < 2 or table.shape[1] < 2:
        return 0.0, 0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    seen = table > 0
    g = 2.0 * float(np.sum(table[seen] * np.log(table[seen] / expected[seen])))
    return g, (table.shape[0] - 1) * (table.shape[1] - 1)


def screen_pairs(X: pd.DataFrame, codes: np.ndarray) -> np.ndarray:
    """p-values (m × m, symmetric, diagonal 1) of dependence given the class."""
    from scipy.stats import chi2

    m = X.shape[1]
    width = BINS + 2
    binned = [_binned(X.iloc[:, j]) for j in range(m)]
    classes = [np.flatnonzero(codes == c) for c in np.unique(codes)]
    p = np.ones((m, m))
    for i in range(m):
        for j in range(i + 1, m):
            g, df = 0.0, 0
            for rows in classes:
                gc, dfc = _g_test(binned[i][rows], binned[j][rows], width)
                g, df = g + gc, df + dfc
            p[i, j] = p[j, i] = float(chi2.sf(g, df)) if df else 1.0
    return p


def blocks_of(p: np.ndarray) -> list[list[int]]:
    """Connected components of the dependent pairs (``p < ALPHA``), in column order."""
    m = p.shape[0]
    parent = list(range(m))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(p < ALPHA, 1))):
        parent[find(int(i))] = find(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(m):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])
