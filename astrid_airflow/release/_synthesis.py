"""Class-conditional synthesis of one group's values: the recipe's ``synthesise`` step.

ASTRID's grouping is the factorisation P(X | C) = ∏ P(X_S | C) (paper, Eq. 1), so a
group S whose real tuples cannot be published can be replaced by draws from a model of
P(X_S | C = c), one per class, while every other group is shuffled as before. Two
models, both small (a few numbers per level and class, never one per row):

* ``gaussian_copula``: per column, one set of *levels* pooled over the classes (missing;
  then a numeric column's quantile bins, or a categorical column's values), the level
  counts of each class, and each class's correlation of the rows' normal scores. A draw
  is z ~ N(0, R_c), u = Φ(z), each column's level by u on the class's level CDF, and a
  numeric value by u's position within its bin (so no real value is reproduced exactly,
  and the interactions within the group are kept);
* ``contingency``: a categorical group's class-conditional joint counts, where its
  cells can hold k rows a class on average (else the copula, over its values).

Without a budget, a level or tuple with fewer than ``min_count`` rows of a class has
weight 0 in that class (a small cell is never drawn). With one, the counts (L2
sensitivity 1 for a contingency table; √d for a copula's d columns' levels) and the
copula's sums of clipped score products (sensitivity d·CLIP²) get Gaussian noise
calibrated by :mod:`._dp_accounting`; the levels (bin edges from the reference's
quantiles, category values) are the public domain of that guarantee, as declared
bounds are for any DP mechanism.

Draws depend on the recorded seed, the class and the row's rank within its class only:
the batch's class counts fix the multiset of a group's synthetic tuples, so the shuffle
and the gate compute the same release domain, and nothing of a batch's own values
enters a synthesised group (the model is kept from the reference, never refitted).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr, ndtri

from astrid_airflow._errors import ArtefactError, RecipeError

from ._dp_accounting import gaussian_sigma
from ._table_schema import json_scalar

MODELS = ("gaussian_copula", "contingency")
#: Rows per seed stream: rank r of a class is row r % BLOCK of stream (class, r // BLOCK).
BLOCK = 4096
#: Numeric bins per column: about √(rows per class), within these bounds.
MIN_BINS, MAX_BINS = 4, 64
#: Rows below the first and above the last bin edge of a budgeted (pooled) level set.
MIN_TAIL = 5
#: Normal scores are clipped here (bounds a row's weight in the correlation).
CLIP = 3.0
#: Most joint cells per class of a contingency model (a larger group gets a copula).
MAX_CELLS = 4096
#: Pseudo-rows of the identity each class's score correlation is shrunk towards.
SHRINK_ROWS = 1.0
STEP_KEYS = ("method", "columns", "published_types", "model", "seed", "classes",
             "levels", "counts", "correlation", "refit", "dp")


# ------------------------------------------------------------------------------ levels

def _numeric(series: pd.Series, ptype: str) -> bool:
    return ptype in ("integer", "float")


def _levels(series: pd.Series, ptype: str, n_bins: int, column: str, y: np.ndarray,
            n_classes: int, min_count: int | None) -> dict:
    """The column's levels after the missing one: quantile bins of a numeric column
    with more distinct values than bins, else its values (without a budget, only those
    at least ``min_count`` rows have: a rarer one is drawn as missing, as the
    suppression publishes it, and never stored). Bins are pooled over the
    classes (``min_count`` None: the public domain of a budget), else each class's own
    quantiles, each bin about ``min_count`` of its rows or more: the class's smoothed
    empirical quantile function."""
    present = series.dropna()
    missing = bool(len(present) < len(series))  # a missing level, in the public domain
    if _numeric(series, ptype):
        x_all = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float,
                                                                na_value=np.nan)
        x = x_all[np.isfinite(x_all)]
        decimals = _decimals(x) if ptype == "float" else None
        if np.unique(x).size > n_bins and min_count is None:
            return {"kind": "bins", "edges": _edges(x, n_bins, MIN_TAIL), "missing": missing,
                    "decimals": decimals}
        if np.unique(x).size > n_bins:
            return {"kind": "class_bins", "missing": missing, "decimals": decimals,
                    "edges": [_class_edges(x_all[y == c], min_count)
                              for c in range(n_classes)]}
    counts = present.value_counts()
    if min_count is not None:  # a rarer value is not stored: drawn as missing
        rare = counts.index[counts < min_count]
        missing = missing or bool(len(rare))
        counts = counts[counts >= min_count]
    try:
        values = [json_scalar(v, f"column {column!r}") for v in
                  sorted(counts.index, key=lambda v: (str(type(v)), v))]
    except (ArtefactError, TypeError) as exc:
        raise RecipeError(f"Cannot synthesise column {column!r}: {exc}") from None
    return {"kind": "values", "values": values, "missing": missing}


#: Most decimals a float column's values are drawn with (its recorded resolution).
MAX_DECIMALS = 6


def _decimals(x: np.ndarray) -> int | None:
    """The fewest decimals (at most MAX_DECIMALS) every value is written with: a draw
    is rounded to them, so it has the column's resolution (a database column of scale 1
    would round it anyway); None: finer."""
    sample = x[:10_000]
    for d in range(MAX_DECIMALS + 1):
        scaled = sample * 10.0 ** d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6 * np.maximum(1.0,
                                                                         np.abs(scaled))):
            return d
    return None


def _edges(x: np.ndarray, n_bins: int, tail: int) -> list[float]:
    """Quantile edges of ``x`` in ``n_bins`` bins between its ``tail``-th smallest and
    largest values (interpolated: top- and bottom-coded, so no extreme, one person's
    value, is stored or drawn); a narrow bin for one value."""
    edges = np.unique(np.quantile(x, _knots(x.size, n_bins, tail))) if x.size else \
        np.zeros(1)
    if edges.size < 2:
        edges = np.array([edges[0], edges[0] + max(abs(edges[0]) * 1e-9, 1e-9)])
    return [float(e) for e in edges]


def _knots(n: int, n_bins: int, tail: int) -> np.ndarray:
    """The probabilities of the edges: evenly spaced in normal scores between the
    ``tail``-th smallest and largest of ``n`` values (dense in the tails, where a flat
    bin would inflate the spread), merged so that every bin holds ``tail`` values."""
    p = min(tail / max(n, 1), 0.25)
    z = ndtri(p)
    knots = ndtr(np.linspace(z, -z, n_bins + 1))
    keep, last = [knots[0]], knots[0]
    for q in knots[1:-1]:
        if (q - last) * n >= tail and (knots[-1] - q) * n >= tail:
            keep.append(q)
            last = q
    return np.array([*keep, knots[-1]])


def _class_edges(x: np.ndarray, min_count: int) -> list[float]:
    """A class's quantile edges, about ``min_count`` rows per bin (at most MAX_BINS;
    a class of fewer than 2k rows draws from the pooled model instead)."""
    x = x[np.isfinite(x)]
    return _edges(x, int(np.clip(x.size // max(min_count, 1), 1, MAX_BINS)), min_count)


def edges_of(level: Mapping[str, Any], c: int) -> np.ndarray:
    """The bin edges of class ``c`` (pooled bins: the same for every class)."""
    e = level["edges"][c] if level["kind"] == "class_bins" else level["edges"]
    return np.asarray(e, dtype=float)


def _in_bins(x: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each finite value's bin (1-based) and its position in it in [0, 1]."""
    ok = np.isfinite(x)
    b = np.clip(np.searchsorted(e, np.where(ok, x, e[0]), side="right") - 1, 0, len(e) - 2)
    width = np.maximum(e[b + 1] - e[b], 1e-300)
    t = np.clip((np.where(ok, x, e[0]) - e[b]) / width, 0.0, 1.0)
    return np.where(ok, b + 1, 0), np.where(ok, t, 0.5)


def _level_codes(series: pd.Series, level: Mapping[str, Any], y: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each row's level (0: missing) and, for bins, its position in the bin in [0, 1]."""
    n = len(series)
    if level["kind"] in ("bins", "class_bins"):
        x = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        codes, t = np.zeros(n, dtype=np.int64), np.full(n, 0.5)
        for c in np.unique(y):
            rows = y == c
            codes[rows], t[rows] = _in_bins(x[rows], edges_of(level, int(c)))
        return codes, t
    lookup = {v: i + 1 for i, v in enumerate(level["values"])}
    # a value not stored (rarer than k rows) is the missing level
    codes = np.array([0 if pd.isna(v) else lookup.get(json_scalar(v, "a value"), 0)
                      for v in series.astype(object)], dtype=np.int64) if n else \
        np.zeros(0, dtype=np.int64)
    return codes, np.full(n, 0.5)


def n_levels(level: Mapping[str, Any], c: int = 0) -> int:
    """Levels of class ``c``: missing, then the bins or the values."""
    if level["kind"] == "values":
        return 1 + len(level["values"])
    return len(edges_of(level, c))


# ----------------------------------------------------------------------------- fitting

def fit_synthesis(frame: pd.DataFrame, labels: Any, columns: Sequence[str],
                  published_types: Sequence[str], *, min_count: int,
                  random_state: np.random.SeedSequence, rho: float | None = None
                  ) -> dict[str, Any]:
    """The ``synthesise`` step of ``columns`` fitted on the reference ``frame``.

    ``rho``: the group's zCDP budget (None: no noise, small cells dropped instead);
    ``random_state`` a ``SeedSequence`` whose first child seeds the draws and second the
    noise."""
    columns = list(columns)
    classes, y = _classes(labels)
    draws, noise_seq = random_state.spawn(2)
    rng = np.random.default_rng(noise_seq)
    n_bins = int(np.clip(round(math.sqrt(max(len(frame), 1) / max(len(classes), 1))),
                         MIN_BINS, MAX_BINS))
    n_fit, n_rows = len(classes), len(y)
    if rho is None:  # every row once more as one pooled class: what a small class draws
        frame = pd.concat([frame[columns], frame[columns]], ignore_index=True)
        y = np.r_[y, np.full(len(y), n_fit)]
        n_fit += 1
    n_c = np.bincount(y, minlength=n_fit)
    levels = [_levels(frame[c], t, n_bins, c, y, n_fit, None if rho is not None
                      else min_count) for c, t in zip(columns, published_types)]
    coded = [_level_codes(frame[c], lv, y) for c, lv in zip(columns, levels)]
    cells = math.prod(n_levels(lv) for lv in levels)
    categorical = all(lv["kind"] == "values" for lv in levels)
    dp = None
    # the joint counts only where a class's cells can hold k rows on average (read from
    # the sizes alone, so a budget's choice of model spends nothing): else, most tuples
    # are rarer than k and would never be drawn, and the copula models the margins
    if categorical and cells <= min(MAX_CELLS, n_rows / (max(len(classes), 1)
                                                          * max(min_count, 1))):
        model = "contingency"
        counts, sigma = _joint_counts(coded, y, n_fit, levels, min_count, rho, rng)
        correlation = None
        if rho is not None:
            dp = _dp_record("contingency", rho, {"counts": (1.0, sigma)})
    else:
        model = "gaussian_copula"
        d = len(columns)
        share = rho if d == 1 or rho is None else rho / 2
        counts, sigma_c = _level_counts(coded, y, n_fit, levels, min_count, share, rng)
        correlation, sigma_m = _correlations(coded, y, counts, n_c, share, rng)
        if rho is not None:
            parts = {"counts": (math.sqrt(d), sigma_c)}
            if d > 1:
                parts["score_products"] = (d * CLIP ** 2, sigma_m)
            dp = _dp_record("gaussian_copula", rho, parts)
    if rho is None:
        levels, counts, correlation = _small_classes_pooled(
            levels, counts, correlation, n_c[:-1] < 2 * min_count, model)
    return {"method": "synthesise", "columns": columns,
            "published_types": list(published_types), "model": model,
            "seed": int(draws.generate_state(4, np.uint32).astype(object).dot(
                [1, 1 << 32, 1 << 64, 1 << 96])),
            "classes": classes, "levels": levels, "counts": counts,
            "correlation": correlation, "refit": "never", "dp": dp}


def _small_classes_pooled(levels: list, counts: list, correlation: list | None,
                          small: np.ndarray, model: str) -> tuple[list, list, Any]:
    """The fitted parameters without the pooled class (the last), which replaces those
    of every ``small`` class (fewer than 2k rows: its own bins and cells would publish
    its few values) and of a class left with no cell to draw."""
    pooled = len(small)

    def source(c: int) -> int:
        empty = model == "contingency" and not counts[c]["tuples"]
        return pooled if small[c] or empty else c

    picks = [source(c) for c in range(pooled)]
    levels = [{**lv, "edges": [lv["edges"][p] for p in picks]}
              if lv["kind"] == "class_bins" else lv for lv in levels]
    if model == "contingency" and not counts[pooled]["tuples"]:
        raise RecipeError("Cannot synthesise a categorical group whose every tuple has "
                          "fewer rows than k: there is nothing safe to draw.")
    return levels, [counts[p] for p in picks], None if correlation is None else \
        [correlation[p] for p in picks]


def _classes(labels: Any) -> tuple[list, np.ndarray]:
    y, uniques = pd.factorize(pd.Series(np.asarray(labels, dtype=object)), sort=True)
    if (y < 0).any():
        raise RecipeError("Cannot synthesise a group: the class column has missing values.")
    return [json_scalar(v, "the class column") for v in uniques], y


def _noisy(counts: np.ndarray, sigma: float | None, rng: np.random.Generator,
           min_count: int) -> np.ndarray:
    """Counts with N(0, σ²) noise, negatives set to 0; without noise, cells below
    ``min_count`` set to 0."""
    if sigma is None:
        return np.where(counts >= min_count, counts, 0).astype(float)
    return np.maximum(counts + rng.normal(0.0, sigma, counts.shape), 0.0)


def _joint_counts(coded: list, y: np.ndarray, n_classes: int, levels: list,
                  min_count: int, rho: float | None, rng: np.random.Generator
                  ) -> tuple[list, float | None]:
    """Per class, ``{"tuples", "weights"}``: the joint level tuples with weight > 0."""
    sizes = [n_levels(lv) for lv in levels]
    flat = np.ravel_multi_index([c for c, _ in coded], sizes) if coded and len(y) else \
        np.zeros(len(y), dtype=np.int64)
    table = np.bincount(y * math.prod(sizes) + flat, minlength=n_classes * math.prod(
        sizes)).reshape(n_classes, -1)
    sigma = None if rho is None else gaussian_sigma(1.0, rho)
    table = _noisy(table, sigma, rng, min_count)
    for j, lv in enumerate(levels):  # no missing level where the reference has none
        if not lv["missing"]:
            at = np.unravel_index(np.arange(table.shape[1]), sizes)[j] == 0
            table[:, at] = 0.0
    out = []
    for row in table:
        if not (row > 0).any():  # no cell left (a budget's noise): every class's cells
            row = table.sum(axis=0)
        keep = np.flatnonzero(row > 0)
        tuples = np.stack(np.unravel_index(keep, sizes), axis=1) if keep.size else \
            np.zeros((0, len(sizes)), dtype=np.int64)
        out.append({"tuples": tuples.tolist(), "weights": [round(float(w), 6)
                                                           for w in row[keep]]})
    return out, sigma


def _level_counts(coded: list, y: np.ndarray, n_classes: int, levels: list,
                  min_count: int, rho: float | None, rng: np.random.Generator
                  ) -> tuple[list, float | None]:
    """Per class, per column, the (noisy) weight of every level."""
    sigma = None if rho is None else gaussian_sigma(math.sqrt(len(levels)), rho)
    out: list[list] = [[] for _ in range(n_classes)]
    for (codes, _), lv in zip(coded, levels):
        tables = []
        for c in range(n_classes):
            w = _noisy(np.bincount(codes[y == c], minlength=n_levels(lv, c)), sigma, rng,
                       min_count)
            if not lv["missing"]:
                w[0] = 0.0
            tables.append(w)
        for c, w in enumerate(tables):
            if w.sum() <= 0:  # no level left: the other classes' weights (shared levels
                # only; post-processing under a budget), else even ones
                w = np.sum(tables, axis=0) if lv["kind"] != "class_bins" else w
                w = w if w.sum() > 0 else np.r_[float(lv["missing"] and not (
                    len(w) > 1)), np.ones(len(w) - 1)]
            out[c].append([round(float(v), 6) for v in w])
    return out, sigma


def _cdf(weights: Sequence[float]) -> np.ndarray:
    w = np.asarray(weights, dtype=float)
    return np.concatenate([[0.0], np.cumsum(w) / w.sum()])


def _scores(coded: list, y: np.ndarray, counts: list) -> np.ndarray:
    """Each reference row's clipped normal score per column on its class's CDFs."""
    z = np.zeros((len(y), len(coded)))
    for j, (codes, t) in enumerate(coded):
        u = np.zeros(len(y))
        for c in range(len(counts)):
            rows = y == c
            cdf = _cdf(counts[c][j])
            lo, hi = cdf[codes[rows]], cdf[codes[rows] + 1]
            u[rows] = lo + t[rows] * (hi - lo)
        z[:, j] = np.clip(ndtri(np.clip(u, 1e-6, 1 - 1e-6)), -CLIP, CLIP)
    return z


def _correlations(coded: list, y: np.ndarray, counts: list, n_c: np.ndarray,
                  rho: float | None, rng: np.random.Generator
                  ) -> tuple[list | None, float | None]:
    """Per class, the correlation of the rows' scores: their sums of products (noisy
    with a budget), shrunk towards the identity by d + 1 pseudo-rows, made positive
    definite."""
    d = len(coded)
    if d == 1:
        return None, None
    z = _scores(coded, y, counts)
    sigma = None if rho is None else gaussian_sigma(d * CLIP ** 2, rho)
    out = []
    for c in range(len(counts)):
        zc = z[y == c]
        m = zc.T @ zc
        n = float(n_c[c])
        if sigma is not None:
            upper = np.triu(rng.normal(0.0, sigma, (d, d)))
            m = m + upper + np.triu(upper, 1).T
            n = float(sum(counts[c][0]))  # the noisy count (post-processing)
        out.append(_as_correlation(m, n, d).round(6).tolist())
    return out, sigma


def _as_correlation(m: np.ndarray, n: float, d: int) -> np.ndarray:
    # a noisy diagonal near 0 would blow a correlation up: scores have variance ~1
    diag = np.sqrt(np.maximum(np.diag(m), max(n, 1.0) / 2))
    r = m / np.outer(diag, diag)
    lam = SHRINK_ROWS
    r = (max(n, 0.0) * r + lam * np.eye(d)) / (max(n, 0.0) + lam)
    vals, vecs = np.linalg.eigh((r + r.T) / 2)
    r = (vecs * np.maximum(vals, 1e-3)) @ vecs.T
    s = np.sqrt(np.diag(r))
    return r / np.outer(s, s)


def _dp_record(model: str, rho: float, parts: Mapping[str, tuple]) -> dict[str, Any]:
    share = rho / len(parts)
    return {"mechanism": "gaussian", "rho": rho, "measurements": {
        name: {"sensitivity": sens, "sigma": sigma, "rho": share}
        for name, (sens, sigma) in parts.items()}, "clip": CLIP if model ==
        "gaussian_copula" else None,
        "public": "the levels: numeric bin edges (reference quantiles) and category "
                  "values"}


# ----------------------------------------------------------------------------- drawing

def class_index(step: Mapping[str, Any], labels: Any) -> np.ndarray:
    """Each row's class as an index into the step's classes (RecipeError: unseen)."""
    lookup = {(type(v).__name__ == "str", v): i for i, v in enumerate(step["classes"])}
    out = np.empty(len(labels), dtype=np.int64)
    for i, v in enumerate(pd.Series(labels).astype(object)):
        try:
            key = json_scalar(v, "the class column")
        except ArtefactError:
            key = None
        hit = lookup.get((isinstance(key, str), key))
        if hit is None:
            raise RecipeError(f"The synthesised group {step['columns']} has no model for "
                              f"class {v!r} (not in the reference).")
        out[i] = hit
    return out


def within_class_ranks(classes: np.ndarray) -> np.ndarray:
    """Each row's rank among the rows of its class, in row order."""
    return pd.Series(classes).groupby(classes).cumcount().to_numpy()


def draw_levels(step: Mapping[str, Any], classes: np.ndarray, ranks: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(levels, u)`` of the rows: per column, the drawn level and the uniform that
    places a numeric value within its bin; a function of (seed, class, rank) alone."""
    n, d = len(classes), len(step["columns"])
    levels, u_out = np.zeros((n, d), dtype=np.int64), np.full((n, d), 0.5)
    root = int(step["seed"])
    for c in np.unique(classes):
        rows = np.flatnonzero(classes == c)
        blocks = ranks[rows] // BLOCK
        for b in np.unique(blocks):
            at = rows[blocks == b]
            offset = ranks[at] % BLOCK
            rng = np.random.default_rng(np.random.SeedSequence(root, spawn_key=(int(c),
                                                                                int(b))))
            lv, u = _draw_block(step, int(c), rng, int(offset.max()) + 1)
            levels[at], u_out[at] = lv[offset], u[offset]
    return levels, u_out


def _root(r: np.ndarray) -> np.ndarray:
    """A square root L of the correlation r (L Lᵀ = r; a rounded, singular r too)."""
    try:
        return np.linalg.cholesky(r)
    except np.linalg.LinAlgError:  # positive semi-definite only
        vals, vecs = np.linalg.eigh((r + r.T) / 2)
        return vecs * np.sqrt(np.maximum(vals, 0.0))


def _draw_block(step: Mapping[str, Any], c: int, rng: np.random.Generator, m: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """The first ``m`` draws of class ``c``'s stream (a prefix of any longer one)."""
    if step["model"] == "contingency":
        cell = step["counts"][c]
        u = rng.random(m)
        tuples = np.asarray(cell["tuples"], dtype=np.int64).reshape(-1, len(step["columns"]))
        if not len(tuples):
            return np.zeros((m, len(step["columns"])), dtype=np.int64), np.full(
                (m, len(step["columns"])), 0.5)
        pick = np.minimum(np.searchsorted(_cdf(cell["weights"])[1:], u, side="right"),
                          len(tuples) - 1)
        return tuples[pick], np.full((m, tuples.shape[1]), 0.5)
    d = len(step["columns"])
    z = rng.standard_normal((m, d))
    if step["correlation"] is not None:
        z = z @ _root(np.asarray(step["correlation"][c], dtype=float)).T
    u = ndtr(z)
    levels = np.zeros((m, d), dtype=np.int64)
    within = np.zeros((m, d))
    for j in range(d):
        cdf = _cdf(step["counts"][c][j])
        lv = np.clip(np.searchsorted(cdf, u[:, j], side="right") - 1, 0, len(cdf) - 2)
        width = cdf[lv + 1] - cdf[lv]
        within[:, j] = np.where(width > 0, (u[:, j] - cdf[lv]) / np.where(width > 0, width,
                                                                          1.0), 0.5)
        levels[:, j] = lv
    return levels, np.clip(within, 0.0, 1.0)


def _integers_in(e: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Uniform draws among the integers of bin ``b`` (``[e_b, e_b+1)``, the last one
    closed), placed by ``t`` in [0, 1]: the values that bin holds, without bias."""
    lo = np.ceil(e[b])
    last = b == len(e) - 2
    hi = np.where(last, np.floor(e[b + 1]), np.ceil(e[b + 1]) - 1)
    span = hi - lo + 1
    inside = lo + np.minimum(np.floor(t * span), span - 1)
    return np.where(span >= 1, inside, np.round(e[b] + t * (e[b + 1] - e[b])))


def synthesised_values(step: Mapping[str, Any], labels: Any, ranks: np.ndarray | None = None
                       ) -> dict[str, np.ndarray]:
    """Per column of the step, the published values of rows of class ``labels`` (float
    arrays for numbers, NaN missing; object arrays otherwise). ``ranks``: each row's rank
    within its class over the whole batch (default: in this batch's row order)."""
    classes = class_index(step, labels)
    ranks = within_class_ranks(classes) if ranks is None else np.asarray(ranks)
    levels, u = draw_levels(step, classes, ranks)
    out = {}
    for j, (col, lv, ptype) in enumerate(zip(step["columns"], step["levels"],
                                             step["published_types"])):
        code = levels[:, j]
        if lv["kind"] in ("bins", "class_bins"):
            x = np.zeros(len(code))
            for c in np.unique(classes):
                rows = classes == c
                e = edges_of(lv, int(c))
                b = np.clip(code[rows] - 1, 0, len(e) - 2)
                x[rows] = _integers_in(e, b, u[rows, j]) if ptype == "integer" else \
                    e[b] + u[rows, j] * (e[b + 1] - e[b])
            if lv.get("decimals") is not None:
                x = np.round(x, int(lv["decimals"]))
            out[col] = np.where(code == 0, np.nan, x)
        else:
            values = np.array([None, *lv["values"]], dtype=object)
            v = values[code]
            out[col] = v.astype(float) if _numeric(None, ptype) else v
    return out


def _increasing(e: Any) -> bool:
    return isinstance(e, list) and len(e) >= 2 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
        for x in e) and all(b > a for a, b in itertools.pairwise(e))


def _good_levels(lv: Any, n_classes: int) -> bool:
    if not isinstance(lv, Mapping) or not isinstance(lv.get("missing"), bool):
        return False
    d = lv.get("decimals")
    if d is not None and (isinstance(d, bool) or not isinstance(d, int)
                          or not 0 <= d <= MAX_DECIMALS):
        return False
    if lv.get("kind") == "bins":
        return _increasing(lv.get("edges"))
    if lv.get("kind") == "class_bins":
        e = lv.get("edges")
        return isinstance(e, list) and len(e) == n_classes and all(map(_increasing, e))
    return lv.get("kind") == "values" and isinstance(lv.get("values"), list)


def check_synthesis_step(where: str, s: Mapping[str, Any]) -> None:
    """Refuse a malformed ``synthesise`` step (one ``RecipeError`` naming the problem)."""
    cols = s["columns"]
    if s["model"] not in MODELS:
        raise RecipeError(f"Invalid {where} (synthesise {cols}): model {s['model']!r} is "
                          f"unknown to the recipe; known: {list(MODELS)}.")
    if s["refit"] != "never":
        raise RecipeError(f"Invalid {where} (synthesise {cols}): refit must be 'never' "
                          "(the model is kept from the reference).")
    seed = s["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise RecipeError(f"Invalid {where} (synthesise {cols}): seed must be an integer "
                          f">= 0, got {seed!r}.")
    levels, counts, classes = s["levels"], s["counts"], s["classes"]
    if not (isinstance(levels, list) and len(levels) == len(cols)
            and isinstance(classes, list) and classes
            and isinstance(counts, list) and len(counts) == len(classes)):
        raise RecipeError(f"Invalid {where} (synthesise {cols}): need one level set per "
                          "column and one count set per class.")
    for lv in levels:
        if not _good_levels(lv, len(classes)):
            raise RecipeError(f"Invalid {where} (synthesise {cols}): a level set must be "
                              "increasing bin 'edges' (one list per class for class "
                              "bins) or a list of 'values'.")
    for c, per_class in enumerate(counts):
        sizes = [n_levels(lv, c) for lv in levels]
        if s["model"] == "contingency":
            t, w = per_class.get("tuples"), per_class.get("weights")
            if not (isinstance(t, list) and isinstance(w, list) and len(t) == len(w)) \
                    or any(len(x) != len(sizes) or not all(0 <= a < m for a, m in
                                                           zip(x, sizes)) for x in t) \
                    or any(not (isinstance(v, (int, float)) and v > 0) for v in w):
                raise RecipeError(f"Invalid {where} (synthesise {cols}): contingency "
                                  "cells must be level tuples with positive weights.")
        elif not (isinstance(per_class, list) and [len(w) for w in per_class] == sizes
                  and all(min(w) >= 0 and sum(w) > 0 for w in per_class)):
            raise RecipeError(f"Invalid {where} (synthesise {cols}): copula counts must "
                              "give every column's levels non-negative weights.")
    if s["model"] == "gaussian_copula" and len(cols) > 1:
        corr = s["correlation"]
        if not (isinstance(corr, list) and len(corr) == len(classes)) or any(
                np.asarray(r, dtype=float).shape != (len(cols), len(cols)) for r in corr):
            raise RecipeError(f"Invalid {where} (synthesise {cols}): need one "
                              f"{len(cols)}x{len(cols)} correlation per class.")
