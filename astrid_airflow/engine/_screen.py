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

The triple screen (:func:`screen_triples`) then looks for what pairs cannot show: a
three-way interaction given the class, such as a parity of three attributes whose every
pair is independent given the class. For each triple not already inside one block it
fits, within each class, the log-linear model with every pairwise interaction and no
three-way term (iterative proportional fitting of the ``TRIPLE_BINS``-binned 3-way
table) and sums the G statistics over classes; a triple whose p-value is below
``ALPHA`` divided by the number of triples tested (Bonferroni) joins one block.

What it can still miss: dependence among four or more attributes whose triples are
independent, dependence finer than the bins, or too weak for the screen's rows. Such
attributes are detached first, i.e. put in groups of their own, where the p-values
then test that choice.
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
#: The triple screen: bins per attribute (a 4 x 4 x 4 table per class, 27 degrees of
#: freedom), the rows it counts (a stratified part of the screen's), the widest table
#: it runs on (C(60, 3) = 34,220 triples) and the IPF iterations of its null model.
TRIPLE_BINS = 4
TRIPLE_MAX_ROWS = 20_000
TRIPLE_MAX_ATTRIBUTES = 60
_IPF_ITERATIONS = 25
#: A class adds to the triple test only with this many rows per cell of its table: the
#: chi-squared law of G needs expected counts well above one.
_MIN_ROWS_PER_CELL = 10


def screen_applies(screen: bool | str, n_rows: int, n_attributes: int) -> bool:
    """Whether a run screens: ``screen`` True/False, or the "auto" rule above on the
    whole table's rows (before any sample) and attributes."""
    if screen != "auto":
        return bool(screen)
    return n_attributes > MIN_ATTRIBUTES or (
        n_rows > MIN_ROWS and n_attributes >= MIN_ATTRIBUTES_LARGE)


def _binned(col: pd.Series, bins: int = BINS) -> np.ndarray:
    """Bin codes 0..bins+1: quantile bins or the most frequent categories and "other";
    missing values a bin of their own."""
    if is_numeric_column(col):
        values = col.to_numpy(dtype=float, na_value=np.nan)
        ok = ~np.isnan(values)
        edges = np.unique(np.quantile(values[ok], np.linspace(0, 1, bins + 1)[1:-1])) \
            if ok.any() else np.array([])
        out = np.full(values.size, edges.size + 1, dtype=np.intp)  # missing: last bin
        out[ok] = np.searchsorted(edges, values[ok], side="right")
        return out
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
    keep = np.argsort(-counts, kind="stable")[: bins - 1]
    remap = np.full(len(uniques) + 1, bins - 1, dtype=np.intp)  # others: one bin
    remap[keep] = np.arange(keep.size)
    out = remap[codes]
    out[codes < 0] = bins  # missing: a bin of its own
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


def blocks_of(p: np.ndarray, triples: list[tuple[int, int, int]] = ()) -> list[list[int]]:
    """Connected components of the dependent pairs (``p < ALPHA``) and of the triples
    found by :func:`screen_triples`, in column order."""
    m = p.shape[0]
    parent = list(range(m))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    edges = [*zip(*np.nonzero(np.triu(p < ALPHA, 1))),
             *((t[0], t[1]) for t in triples), *((t[1], t[2]) for t in triples)]
    for i, j in edges:
        parent[find(int(i))] = find(int(j))
    groups: dict[int, list[int]] = {}
    for i in range(m):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def triples_apply(n_attributes: int) -> bool:
    """Whether the triple screen runs beside a pair screen (3 to 60 attributes)."""
    return 3 <= n_attributes <= TRIPLE_MAX_ATTRIBUTES


def _candidate_triples(m: int, blocks: list[list[int]]) -> np.ndarray:
    """Every (i, j, k), i < j < k, whose attributes are not all in one block."""
    block = np.empty(m, dtype=np.intp)
    for b, members in enumerate(blocks):
        block[members] = b
    i, j, k = (a.ravel() for a in np.meshgrid(*(np.arange(m),) * 3, indexing="ij"))
    keep = (i < j) & (j < k) & ~((block[i] == block[j]) & (block[j] == block[k]))
    return np.stack([i[keep], j[keep], k[keep]], axis=1)


def _three_way_tables(binned: np.ndarray, triples: np.ndarray, width: int) -> np.ndarray:
    """The (triples, width, width, width) counts of the binned rows, one bincount per
    first two attributes of the triples."""
    out = np.empty((len(triples), width, width, width))
    cells = width ** 3
    for (i, j), at in _by_pair(triples):
        ls = triples[at, 2]
        code = ((binned[:, i] * width + binned[:, j]) * width)[:, None] + binned[:, ls] \
            + (np.arange(ls.size) * cells)[None, :]
        out[at] = np.bincount(code.ravel(), minlength=ls.size * cells).reshape(
            ls.size, width, width, width)
    return out


def _by_pair(triples: np.ndarray):
    """(first two attributes, positions of their triples), in order."""
    keys = triples[:, 0] * (triples[:, 1].max() + 1) + triples[:, 1]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    for a, b in zip(starts, [*starts[1:], len(triples)]):
        yield (int(triples[a, 0]), int(triples[a, 1])), np.arange(a, b)


def no_three_way_g(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """G statistics and degrees of freedom of the model with every pairwise interaction
    and no three-way term, for a stack of 3-way tables (iterative proportional fitting
    of the three 2-way margins)."""
    fit = np.ones_like(n)
    for _ in range(_IPF_ITERATIONS):
        for axis in (3, 2, 1):  # the three 2-way margins (axis 0: the triples)
            target, now = n.sum(axis=axis, keepdims=True), fit.sum(axis=axis, keepdims=True)
            fit = fit * np.divide(target, now, out=np.zeros_like(now), where=now > 0)
    seen = n > 0
    ratio = np.divide(n, fit, out=np.ones_like(n), where=seen & (fit > 0))
    g = 2.0 * np.sum(np.where(seen, n * np.log(ratio), 0.0), axis=(1, 2, 3))
    levels = [(n.sum(axis=axes) > 0).sum(axis=1) for axes in ((2, 3), (1, 3), (1, 2))]
    df = np.prod([np.maximum(k - 1, 0) for k in levels], axis=0)
    return g, df


def screen_triples(X: pd.DataFrame, codes: np.ndarray, blocks: list[list[int]]
                   ) -> dict[str, object]:
    """The triples not inside one of ``blocks`` (the pair screen's, singletons included)
    tested for a three-way interaction given the class.

    Returns ``tested`` (how many), ``threshold`` (``ALPHA`` over that number) and
    ``found``: ``(p, i, j, k)`` below it, smallest p first. A class of fewer than ten
    rows per cell of its table adds nothing (too sparse for the chi-squared law); with
    no class left, nothing is tested.
    """
    from scipy.stats import chi2

    m, width = X.shape[1], TRIPLE_BINS + 1
    triples = _candidate_triples(m, blocks)
    fewest = _MIN_ROWS_PER_CELL * TRIPLE_BINS ** 3
    classes = [rows for c in np.unique(codes)
               if (rows := np.flatnonzero(codes == c)).size >= fewest]
    if not len(triples) or not classes:  # nothing to test, or every class too sparse
        return {"tested": 0, "threshold": ALPHA, "found": []}
    binned = np.stack([_binned(X.iloc[:, j], TRIPLE_BINS) for j in range(m)], axis=1)
    g, df = np.zeros(len(triples)), np.zeros(len(triples))
    for rows in classes:
        gc, dfc = no_three_way_g(_three_way_tables(binned[rows], triples, width))
        g, df = g + gc, df + dfc
    p = np.where(df > 0, chi2.sf(g, np.maximum(df, 1)), 1.0)
    threshold = ALPHA / len(triples)
    hits = np.flatnonzero(p < threshold)
    found = sorted((float(p[t]), *map(int, triples[t])) for t in hits)
    return {"tested": len(triples), "threshold": threshold, "found": found}
