"""Fitting a ``partition`` step: a Mondrian partition of a group's tuples, 2-diverse.

Mondrian (LeFevre, DeWitt and Ramakrishnan, "Mondrian multidimensional k-anonymity",
ICDE 2006), strict and top-down: a cell is cut on its widest *normalised* dimension
(its range over the group's range on the reference table; a categorical column's
categories are ordered by their text, missing last), at the allowed cut nearest its
median; when the widest dimension has no allowed cut the next widest is tried, and a
cell no dimension can cut is a leaf. A cut is allowed when both sides keep

* at least ``k`` rows and at least two classes (distinct 2-diversity, Machanavajjhala
  et al., ACM TKDD 1(1), 2007: no published group tuple names its class), and
* of every class they hold, at least ``min_class_rows`` (>= ``k``) rows: every
  (published tuple, class) combination is k-anonymous, which is what the shuffle
  publishes and the gate checks (a class with fewer than ``k`` rows in the whole table
  is below k wherever it goes and does not stop a cut; one with fewer than
  ``min_class_rows`` stays whole).

Distinct rather than entropy diversity: it is the condition the gate's class-disclosure
check states, and the per-class ``k`` already keeps a minority class from being a
single row. The cuts are median cuts, fitted to the values and never to the labels
beyond the diversity constraint, so the boundaries do not tell the released rows from
others. ``cuts="class-entropy"`` instead takes, over every dimension, the allowed cut
whose two sides have the least class entropy (InfoGain Mondrian: LeFevre, DeWitt and
Ramakrishnan, "Workload-aware anonymization", KDD 2006): the same guarantee, offered for
comparison; it lowered no table's best accuracy loss
(``benchmarks/bench_partition_cuts.py``), so the release fit does not use it.

The step (:mod:`astrid_airflow.release._partition`) records the tree and each cell's
representative tuple (per-column lower median, or most frequent value).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import RecipeError
from astrid_airflow.release import as_float, published_type

from ._fit_bins import representative, value_resolution

#: ``min_class_rows`` tried, as multiples of ``k``, finest first (the first that passes
#: the group's checks is kept).
PARTITION_LADDER = (1, 2, 4, 8)
#: How a cell is cut (the module doc); the release fit uses the first.
CUT_RULES = ("median", "class-entropy")
_NUMBER_TYPES = ("integer", "float")


def _sort_keys(frame: pd.DataFrame, types: list[str]) -> tuple[list[np.ndarray], list]:
    """Per column a float key (numbers, or category ranks; missing = NaN, sorted last)
    and the ordered categories (``None`` for a number column)."""
    keys, cats = [], []
    for c, t in zip(frame.columns, types):
        if t in _NUMBER_TYPES:
            keys.append(as_float(frame[c]))
            cats.append(None)
            continue
        col = frame[c].astype(object)
        values = sorted({v for v in col if not pd.isna(v)}, key=lambda v: (str(v), repr(v)))
        rank = {v: float(i) for i, v in enumerate(values)}
        keys.append(np.array([np.nan if pd.isna(v) else rank[v] for v in col], dtype=float))
        cats.append(values)
    return keys, cats


def _span(x: np.ndarray) -> float:
    f = x[np.isfinite(x)]
    return float(f.max() - f.min()) if f.size else 0.0


def _class_entropy(counts: np.ndarray) -> np.ndarray:
    """Rows times the class entropy (bits) of each row of ``counts`` (cuts x classes)."""
    n = counts.sum(axis=-1, keepdims=True)
    p = counts / np.maximum(n, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=-1)
    return h * n[..., 0]


def _scalar(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else v


class _Fitter:
    """The top-down cutting of one group's reference tuples (see the module doc)."""

    def __init__(self, frame: pd.DataFrame, labels: Any, k: int, min_class_rows: int,
                 cuts: str = "median", value_k: int | None = None):
        self.frame = frame.reset_index(drop=True)
        self.cols = list(map(str, frame.columns))
        self.types = [published_type(frame[c]) for c in frame.columns]
        self.keys, self.cats = _sort_keys(self.frame, self.types)
        self.spans = [_span(x) for x in self.keys]
        self.y = pd.factorize(pd.Series(np.asarray(labels)), sort=True)[0]
        total = np.bincount(self.y)
        # per class, the rows a cell holding it needs (0: a class below k in all)
        self.need = np.where(total >= k, np.minimum(min_class_rows, total), 0)
        self.k = k
        self.cuts = cuts
        self.nodes: list[dict[str, Any]] = []
        self.cells: list[list[Any]] = []
        # the values fewer than value_k rows have: never a cell's representative
        floor = k if value_k is None else value_k
        counts = [self.frame[c].astype(object).value_counts(dropna=True) for c in self.cols]
        self.rare = [frozenset(float(v) for v in n.index[n < floor]) if t in _NUMBER_TYPES
                     else frozenset(n.index[n < floor]) for n, t in zip(counts, self.types)]
        self.resolution = [value_resolution(x[np.isfinite(x)]) if t in _NUMBER_TYPES else 0.0
                           for x, t in zip(self.keys, self.types)]
        #: a cell has no value safe to publish in some column (partition_ladder skips it)
        self.unsafe = False

    def ok(self, counts: np.ndarray) -> np.ndarray:
        # rare classes aside, a cell of fewer than k rows would be below k
        return (((counts == 0) | (counts >= self.need)).all(axis=-1)
                & ((counts > 0).sum(axis=-1) >= 2) & (counts.sum(axis=-1) >= self.k))

    def allowed(self, d: int, rows: np.ndarray, onehot: np.ndarray):
        """``rows`` in dimension ``d``'s order, and per position p (1..n-1) the class
        counts left of it and whether a cut there is allowed."""
        order = np.argsort(self.keys[d][rows], kind="stable")  # NaN last
        xs = self.keys[d][rows][order]
        left = np.cumsum(onehot[order], axis=0)[:-1]
        total = np.bincount(self.y[rows], minlength=onehot.shape[1])
        valid = np.isfinite(xs[1:]) & (xs[1:] > xs[:-1])
        return rows[order], left, valid & self.ok(left) & self.ok(total - left)

    def cut(self, rows: np.ndarray) -> tuple[int, int, np.ndarray] | None:
        """``(column, position, rows in that column's order)`` of the cut, or ``None``."""
        onehot = np.eye(len(self.need), dtype=np.int64)[self.y[rows]]
        if self.cuts == "class-entropy":
            return self._least_entropy_cut(rows, onehot)
        widths = [(_span(x[rows]) / s if s > 0 else 0.0) for x, s in
                  zip(self.keys, self.spans)]
        p = np.arange(1, rows.size)
        for d in sorted(range(len(widths)), key=lambda d: (-widths[d], d)):
            if widths[d] <= 0:
                break
            ordered, _, allowed = self.allowed(d, rows, onehot)
            if allowed.any():
                j = int(np.argmin(np.where(allowed, np.abs(p - rows.size / 2), np.inf)))
                return d, int(p[j]), ordered
        return None

    def _least_entropy_cut(self, rows: np.ndarray, onehot: np.ndarray):
        best = None
        for d in range(len(self.keys)):
            ordered, left, allowed = self.allowed(d, rows, onehot)
            if not allowed.any():
                continue
            right = onehot.sum(axis=0) - left
            h = np.where(allowed, _class_entropy(left) + _class_entropy(right), np.inf)
            j = int(np.argmin(h))
            if best is None or h[j] < best[0] - 1e-9:  # ties: the first dimension
                best = (h[j], d, j + 1, ordered)
        return None if best is None else best[1:]

    def leaf(self, rows: np.ndarray) -> dict[str, Any]:
        rep = []
        for d, t in enumerate(self.types):
            if t in _NUMBER_TYPES:
                xs = np.sort(self.keys[d][rows])  # NaN last: lower median of all rows
                v = xs[(rows.size - 1) // 2]
                if not np.isnan(v) and float(v) in self.rare[d]:
                    safe = representative(xs[np.isfinite(xs)], rows.size, t == "integer",
                                           self.rare[d], self.resolution[d])
                    self.unsafe |= safe is None
                    v = v if safe is None else safe
                rep.append(None if np.isnan(v) else
                           (int(v) if t == "integer" else float(v)))
            else:
                counts = self.frame[self.cols[d]].iloc[rows].astype(object).value_counts(
                    dropna=False, sort=False)
                ranked = sorted(counts.items(),
                                key=lambda kv: (-kv[1], self._rank(d, kv[0])))
                safe = [kv for kv in ranked if pd.isna(kv[0]) or kv[0] not in self.rare[d]]
                self.unsafe |= not safe
                rep.append(_scalar((safe or ranked)[0][0]))
        self.cells.append(rep)
        return {"cell": len(self.cells) - 1}

    def _rank(self, d: int, v: Any) -> float:
        return float(len(self.cats[d])) if pd.isna(v) else float(self.cats[d].index(v))

    def fit(self) -> None:
        self.nodes.append({})
        stack = [(0, np.arange(len(self.frame)))]
        while stack:
            i, rows = stack.pop()
            found = self.cut(rows) if self.ok(np.bincount(self.y[rows], minlength=len(
                self.need)))[()] else None
            if found is None:
                self.nodes[i] = self.leaf(rows)
                continue
            d, p, ordered = found
            xs = self.keys[d][ordered]
            c = self.cols[d]
            if self.cats[d] is None:
                node = {"column": c, "cut": int(xs[p]) if self.types[d] == "integer"
                        else float(xs[p])}
            else:
                node = {"column": c, "left_values": [
                    _scalar(self.cats[d][int(r)]) for r in np.unique(xs[:p])]}
            node.update(left=len(self.nodes), right=len(self.nodes) + 1)
            self.nodes[i] = node
            self.nodes.extend([{}, {}])
            # the right child is popped last: cells are numbered left to right
            stack.extend([(node["right"], ordered[p:]), (node["left"], ordered[:p])])


def fit_partition(frame: pd.DataFrame, labels: Any, k: int,
                  min_class_rows: int | None = None, cuts: str = "median"
                  ) -> dict[str, Any]:
    """The ``partition`` recipe step of ``frame``'s columns (a group), fitted with the
    class ``labels`` (see the module doc; ``cuts`` one of ``CUT_RULES``).

    >>> import pandas as pd
    >>> f = pd.DataFrame({"a": range(8), "b": [0, 1] * 4})
    >>> s = fit_partition(f, [0, 1] * 4, k=2)
    >>> s["nodes"][0]["column"], len(s["cells"])
    ('a', 2)
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise RecipeError(f"Invalid k: {k!r}. Must be an integer >= 1.")
    m = k if min_class_rows is None else min_class_rows
    if isinstance(m, bool) or not isinstance(m, int) or m < k:
        raise RecipeError(f"Invalid min_class_rows: {m!r}. Must be an integer >= k.")
    if cuts not in CUT_RULES:
        raise RecipeError(f"Invalid cuts: {cuts!r}; known: {list(CUT_RULES)}.")
    if frame.shape[1] < 2 or len(frame) != len(labels):
        raise RecipeError("A partition needs a group of at least two columns and one label "
                          "per row.")
    return _fit(frame, labels, k, m, cuts)[0]


def _fit(frame: pd.DataFrame, labels: Any, k: int, m: int, cuts: str = "median",
         value_k: int | None = None) -> tuple[dict[str, Any], bool]:
    """The partition step, and whether a cell has no value safe to publish (one that
    fewer than ``value_k`` rows have, default ``k``)."""
    f = _Fitter(frame, labels, k, m, cuts, value_k)
    f.fit()
    return {"method": "partition", "columns": f.cols, "k": k, "min_class_rows": m,
            "diversity": "distinct-2", "published_types": f.types, "nodes": f.nodes,
            "cells": f.cells}, f.unsafe


def partition_ladder(frame: pd.DataFrame, labels: Any, k: int,
                     value_k: int | None = None):
    """The partition steps of ``frame`` with ``PARTITION_LADDER`` times ``k`` rows per
    class, finest first (a repeated partition is skipped, and one with a cell that has
    no value safe to publish, one that fewer than k rows have)."""
    last = None
    for mult in PARTITION_LADDER:
        step, unsafe = _fit(frame, labels, k, k * mult, value_k=value_k)
        if not unsafe and (last is None or step["nodes"] != last["nodes"]):
            yield step
        last = step
