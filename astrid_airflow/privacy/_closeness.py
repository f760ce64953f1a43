"""Distance to the closest record of a synthesised group, against the chance rate.

A synthesised group publishes no real tuple, so k-anonymity does not describe it. What
can go wrong is a model that copies: synthetic tuples that sit on real ones. The check
(the DCR test of synthetic-data evaluations, e.g. anonymeter and SDMetrics) compares,
within each class, the distance of every synthetic tuple to its nearest real tuple of
one half of the batch with the distance of the *other* half's real tuples to that half:
a fresh person's tuple is the chance level. At the ``quantile`` of the real-to-real
distances, the share of synthetic tuples at least as close may exceed the share of real
ones only by its sampling error (one-sided, ``z``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: The real-to-real quantile the shares are counted at.
QUANTILE = 0.05
#: One-sided z of the allowance for sampling error (p = 0.001).
Z = 3.09
_MISSING = object()  # the missing value's category in the encoding
#: Rows of each side the distances are computed for (a stratified sample beyond).
MAX_ROWS = 2000


def _features(real: pd.DataFrame, other: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Both tables encoded on the real one's scale: numbers standardised (missing a
    separate 0/1 column), categories (missing one of them, and the other table's
    values too) one-hot over 1/√2: a mismatch weighs one sd, whatever the values."""
    parts_r, parts_o = [], []
    for c in real.columns:
        r, o = real[c], other[c]
        if pd.api.types.is_numeric_dtype(r.dtype) and not pd.api.types.is_bool_dtype(r.dtype):
            xr = pd.to_numeric(r, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            xo = pd.to_numeric(o, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            mu = np.nanmean(xr) if np.isfinite(xr).any() else 0.0
            sd = np.nanstd(xr) if np.isfinite(xr).any() else 1.0
            sd = sd if sd > 0 else 1.0
            for x, parts in ((xr, parts_r), (xo, parts_o)):
                parts.append(np.nan_to_num((x - mu) / sd, nan=0.0)[:, None])
                parts.append(np.isnan(x).astype(float)[:, None])
        else:  # missing is one more category (a mismatch like any other)
            r, o = (x.astype(object).where(x.notna(), _MISSING) for x in (r, o))
            uniques = pd.unique(pd.concat([r, o], ignore_index=True))
            lookup = {v: i for i, v in enumerate(uniques)}
            for s, parts in ((r, parts_r), (o, parts_o)):
                codes = np.array([lookup[v] for v in s])
                parts.append((codes[:, None] == np.arange(len(uniques))).astype(float)
                             / math.sqrt(2))
    return np.hstack(parts_r), np.hstack(parts_o)


def _nearest(points: np.ndarray, to: np.ndarray) -> np.ndarray:
    from scipy.spatial import cKDTree

    if not len(to):
        return np.full(len(points), np.inf)
    return cKDTree(to).query(points, k=1)[0]


@dataclass
class ClosenessEvaluator:
    """The DCR test of one synthesised group: ``evaluate()``, then ``results()``."""

    real: pd.DataFrame
    synthetic: pd.DataFrame
    target: str
    columns: Sequence[str]
    random_state: int = 0
    quantile: float = QUANTILE
    _results: dict | None = field(default=None, repr=False)

    def evaluate(self) -> ClosenessEvaluator:
        rng = np.random.default_rng(self.random_state)
        cols = list(self.columns)
        real_x, synth_x = _features(self.real[cols], self.synthetic[cols])
        y_r = self.real[self.target].astype(object).to_numpy()
        y_s = self.synthetic[self.target].astype(object).to_numpy()
        d_real, d_synth = [], []
        share = min(1.0, MAX_ROWS / max(len(y_r), 1))
        for c in pd.unique(y_r):
            rows = np.flatnonzero(y_r == c)
            rng.shuffle(rows)
            half, held = rows[: len(rows) // 2], rows[len(rows) // 2:]
            if not len(half) or not len(held):
                continue
            synth = np.flatnonzero(y_s == c)
            take = max(1, round(share * len(held)))
            held = held[:take]
            synth = rng.permutation(synth)[:max(1, round(share * len(synth)))]
            d_real.append(_nearest(real_x[held], real_x[half]))
            d_synth.append(_nearest(synth_x[synth], real_x[half]))
        d_real = np.concatenate(d_real) if d_real else np.zeros(0)
        d_synth = np.concatenate(d_synth) if d_synth else np.zeros(0)
        self._results = self._judge(d_real, d_synth)
        return self

    def _judge(self, d_real: np.ndarray, d_synth: np.ndarray) -> dict[str, Any]:
        if not len(d_real) or not len(d_synth):
            return {"columns": list(self.columns), "measured": False,
                    "real_rows": len(d_real), "synthetic_rows": len(d_synth)}
        at = float(np.quantile(d_real, self.quantile))
        p_real = float(np.mean(d_real <= at))
        p_synth = float(np.mean(d_synth <= at))
        sd = math.sqrt(max(p_real * (1 - p_real), 1e-12) * (1 / len(d_real)
                                                           + 1 / len(d_synth)))
        return {"columns": list(self.columns), "measured": True, "quantile": self.quantile,
                "distance": at, "real_share": p_real, "synthetic_share": p_synth,
                "excess": p_synth - p_real, "allowed_excess": Z * sd,
                "exact_copies": float(np.mean(d_synth == 0)),
                "real_exact": float(np.mean(d_real == 0)),
                "real_rows": len(d_real), "synthetic_rows": len(d_synth),
                "median_distance_synthetic": float(np.median(d_synth)),
                "median_distance_real": float(np.median(d_real))}

    def results(self) -> dict[str, Any]:
        if self._results is None:
            raise RuntimeError("Call evaluate() first.")
        return dict(self._results)
