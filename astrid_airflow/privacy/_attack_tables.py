"""What every attack runs on: the training, released and control tables encoded with
shared codes and ranges (:class:`AttackTables`, :func:`canonical`), the nearest released
row of each target (:func:`nearest`, Gower-like, ties broken at random per query), and
the sampling of targets (:func:`targets`, :func:`sampled_note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow.engine import is_numeric_column

#: Elements of one (targets x released rows) distance block; bounds the search memory.
BLOCK = 1 << 22


@dataclass
class AttackTables:
    """Training, released and control tables encoded with shared codes and ranges.

    Numeric columns are float64 (NaN missing); the others integer codes shared by the
    three tables (-1 missing).
    """

    columns: list[str]
    numeric: np.ndarray  # bool per column
    ranges: np.ndarray   # per column; 1 for categorical or constant columns (already
    #                      divided out of the encoded numeric columns)
    train: np.ndarray
    released: np.ndarray
    control: np.ndarray
    has_missing: np.ndarray  # per column: a missing value in any of the tables

    @classmethod
    def encode(cls, original: pd.DataFrame, released: pd.DataFrame,
               control: pd.DataFrame) -> AttackTables:
        for name, t in (("original", original), ("released", released),
                        ("control", control)):
            if not isinstance(t, pd.DataFrame):
                raise DataError(f"The {name} table must be a pandas DataFrame, got "
                                f"{type(t).__name__}.")
            if len(t) == 0:
                raise DataError(f"The {name} table is empty (0 rows).")
        columns = [str(c) for c in released.columns]
        for name, t in (("original", original), ("control", control)):
            missing = [c for c in columns if c not in t.columns]
            if missing:
                raise DataError(f"The {name} table lacks the released column(s) "
                                f"{missing[:10]}.")
        numeric = np.array([all(is_numeric_column(t[c]) for t in (original, released,
                                                                  control))
                            for c in columns], dtype=bool)
        tables = [original, released, control]
        encoded = [np.empty((len(t), len(columns)), dtype=np.float64) for t in tables]
        ranges = np.ones(len(columns))
        for j, c in enumerate(columns):
            if numeric[j]:
                cols = [t[c].to_numpy(dtype=np.float64, na_value=np.nan) for t in tables]
                lo = min(np.nanmin(v) if np.isfinite(v).any() else np.inf for v in cols)
                hi = max(np.nanmax(v) if np.isfinite(v).any() else -np.inf for v in cols)
                if np.isfinite(hi - lo) and hi > lo:
                    ranges[j] = hi - lo
            else:
                both = pd.concat([t[c].astype(object) for t in tables], ignore_index=True)
                codes, uniques = pd.factorize(both, use_na_sentinel=True)
                # One code per value across containers: "1" from a CSV equals 1 and 1.0.
                canon, _ = pd.factorize(pd.Index([canonical(u) for u in uniques],
                                                 dtype=object))
                codes = np.where(codes >= 0, canon[np.maximum(codes, 0)], -1) \
                    if len(uniques) else codes
                cols = np.split(codes.astype(np.float64), np.cumsum([len(t) for t in
                                                                     tables])[:-1])
            for e, v in zip(encoded, cols):
                # Numeric values divided by the range: the L1 term is then |a - b|, and
                # predicates and the relative tolerance are unchanged by the scaling.
                e[:, j] = v / ranges[j] if numeric[j] else v
        has_missing = np.array([any(np.isnan(e[:, j]).any() if numeric[j] else
                                    (e[:, j] < 0).any() for e in encoded)
                                for j in range(len(columns))], dtype=bool)
        return cls(columns, numeric, ranges, *encoded, has_missing)

    def index(self, names: Sequence[str]) -> np.ndarray:
        pos = {c: i for i, c in enumerate(self.columns)}
        unknown = [c for c in names if c not in pos]
        if unknown:
            raise ParameterError(f"Unknown column(s) {list(unknown)}; the released table "
                                 f"has {self.columns[:20]}.")
        return np.array([pos[c] for c in names], dtype=np.intp)


def canonical(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, float, np.number)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def nearest(queries: np.ndarray, candidates: np.ndarray, numeric: np.ndarray,
             missing: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Index of the nearest candidate row of every query row (Gower-like L1 distance).

    Numeric columns arrive divided by their range. Ties go to a uniformly random tied
    row drawn for each query (candidates are also visited in a random order). A shared
    draw would give every query with the same nearest values the same row: on a
    coarsened column one row per bin would then decide every guess, and the training and
    control attacks would each ride on their own lottery.
    """
    order = rng.permutation(candidates.shape[0])
    cand = candidates[order]
    fast_num = numeric & ~missing
    fast_cat = ~numeric & ~missing
    slow = np.flatnonzero(missing)
    out = np.empty(queries.shape[0], dtype=np.intp)
    step = max(1, BLOCK // max(1, cand.shape[0]))
    for start in range(0, queries.shape[0], step):
        q = queries[start:start + step]
        dist = np.zeros((q.shape[0], cand.shape[0]))
        if fast_num.any():
            dist += cdist(q[:, fast_num], cand[:, fast_num], "cityblock")
        if fast_cat.any():
            dist += cdist(q[:, fast_cat], cand[:, fast_cat], "hamming") * fast_cat.sum()
        for j in slow:  # columns with a missing value somewhere: missing = full mismatch
            a, b = q[:, j, None], cand[None, :, j]
            if numeric[j]:
                d = np.abs(a - b)
                dist += np.where(np.isnan(d), 1.0, d)
            else:
                dist += (a != b) | (a < 0)
        best = np.argmin(dist, axis=1)
        # Each query draws its own row among its tied nearest rows: a tie shared by many
        # queries (a coarsened column) is then not settled by one row for all of them.
        tied = dist == dist[np.arange(q.shape[0]), best][:, None]
        n_tied = tied.sum(axis=1)
        multi = np.flatnonzero(n_tied > 1)
        if multi.size:
            pick = (rng.random(multi.size) * n_tied[multi]).astype(np.intp)
            best[multi] = np.argmax(np.cumsum(tied[multi], axis=1) > pick[:, None], axis=1)
        out[start:start + step] = best
    return order[out]


def targets(n_rows: int, n_attacks: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n_rows, size=min(n_attacks, n_rows), replace=False))


def sampled_note(t: AttackTables, n: int) -> str:
    if n < min(t.train.shape[0], t.control.shape[0]):
        return (f"{n} targets sampled from {t.train.shape[0]} training and "
                f"{t.control.shape[0]} control rows")
    return ""
