"""The inference of the class from each single column, exact over ties, with each row
attacked in the release and left out of it (:func:`class_from_column_risks`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow.engine import is_numeric_column

from ._attack_tables import canonical
from ._attacks import CONFIDENCE, AttackRisk


def _column_success(x: pd.Series, y: np.ndarray, n_classes: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Expected success of guessing each row's class from ``x`` alone, with the row in
    the release and with the row left out (the inference attack, exact over ties).

    The attacker takes the released rows nearest on ``x`` (all of them tie: a guess is
    a uniformly random one of them) and guesses their class; the expected success is the
    share of the target's class among them. In the release the nearest rows are those
    with the target's value, itself included; left out, they are the others with that
    value, else (a unique value) the nearest other values (numeric) or every other row
    (a category: all at distance 1). A missing value is at distance 1 from everything.
    """
    n = len(x)
    numeric = is_numeric_column(x)
    if numeric:
        v = x.to_numpy(dtype=np.float64, na_value=np.nan)
        present = np.isfinite(v)
    else:
        present = x.notna().to_numpy()
        # canonical() on each distinct value, not on each row (2.6M calls at 200k rows)
        raw, uniques = pd.factorize(x.astype(object), use_na_sentinel=True)
        same = pd.factorize(pd.Series([canonical(u) for u in uniques], dtype=object))[0]
        v = np.where(raw >= 0, same[np.maximum(raw, 0)] if same.size else -1, -1
                     ).astype(np.float64)
    class_all = np.bincount(y, minlength=n_classes).astype(np.float64)
    s_in = class_all[y] / n  # missing: the whole release ties
    s_out = (class_all[y] - 1) / max(n - 1, 1)
    if present.any():
        vals, inv = np.unique(v[present], return_inverse=True)
        yp = y[present]
        m = np.zeros((vals.size, n_classes))
        np.add.at(m, (inv, yp), 1.0)
        count = m.sum(axis=1)
        own = m[inv, yp]
        s_in[present] = own / count[inv]
        shared = count[inv] > 1
        out = np.empty(inv.size)
        out[shared] = (own[shared] - 1) / (count[inv][shared] - 1)
        lone = ~shared
        if lone.any():
            k = inv[lone]
            cls = yp[lone]
            if numeric and vals.size > 1:
                # nearest other value(s): the closer neighbour, both when equally close
                left = np.where(k > 0, vals[k] - vals[np.maximum(k - 1, 0)], np.inf)
                right = np.where(k < vals.size - 1,
                                 vals[np.minimum(k + 1, vals.size - 1)] - vals[k], np.inf)
                use_l, use_r = left <= right, right <= left
                kl, kr = np.maximum(k - 1, 0), np.minimum(k + 1, vals.size - 1)
                hit = use_l * m[kl, cls] + use_r * m[kr, cls]
                tot = use_l * count[kl] + use_r * count[kr]
                out[lone] = hit / tot
            else:  # every other row is at distance 1
                out[lone] = (class_all[cls] - 1) / max(n - 1, 1)
        s_out[present] = out
    return s_in, s_out


def class_from_column_risks(released: pd.DataFrame, *, target: str,
                            columns: Sequence[str] | None = None) -> list[AttackRisk]:
    """Risk of inferring the class from each single column, exact, with left-out control.

    Giomi et al.'s (2023) inference attack with one known column: every released row is a
    target twice, in the release (member) and left out of it (control), each scored by its
    *expected* success over the tied nearest rows, so nothing is sampled;
    ``risk = (s_in - s_out) / (1 - s_out)`` with a normal 95 % interval clipped to [0, 1].
    A column whose every value is shared by ``m`` rows of mixed classes scores ``1 / m``;
    GoldenEye keeps each column's (value, class) pairs, so the release and its remedied
    table score the same (docs/privacy.md).

    Parameters
    ----------
    released : DataFrame
        The released table (or the remedied table it was made from), with ``target``.
    target : str
        The class column.
    columns : sequence of str, optional
        The columns to attack (default: every column but ``target``).

    Returns
    -------
    list of AttackRisk
        One per column: ``attack="inference"``, ``variant="class_from_one_column_exact"``,
        ``secret=target``, ``aux_columns=(column,)``, ``n_attacks`` = rows; expected
        successes (member, control, random-guess baseline) rounded.
    """
    if not isinstance(released, pd.DataFrame):
        raise DataError(f"The released table must be a pandas DataFrame, got "
                        f"{type(released).__name__}.")
    if target not in released.columns:
        raise DataError(f"Target column {target!r} is not in the released table.")
    if columns is None:
        columns = [c for c in released.columns if c != target]
    unknown = [c for c in columns if c not in released.columns or c == target]
    if unknown:
        raise ParameterError(f"Unknown column(s) {unknown} (the class column cannot be "
                             "its own aux).")
    n = len(released)
    if n < 2:
        return [AttackRisk("inference", 0.0, (0.0, 0.0), n, secret=target,
                           variant="class_from_one_column_exact", aux_columns=(str(c),),
                           note="fewer than two rows: nothing to compare") for c in columns]
    y, uniques = pd.factorize(released[target].astype(object), use_na_sentinel=False)
    z = NormalDist().inv_cdf(0.5 * (1.0 + CONFIDENCE))
    out = []
    for c in columns:
        s_in, s_out = _column_success(released[c], y, len(uniques))
        r_out = float(s_out.mean())
        d = s_in - s_out
        d_mean = float(d.mean())
        note = "exact: each row attacked in the release and left out of it"
        if r_out >= 1.0:
            risk, err = 0.0, 0.0
            note += "; the class is always guessed without the row: nothing to learn"
        else:
            risk = d_mean / (1.0 - r_out)
            err = z * math.sqrt(float(d.var()) / n / (1.0 - r_out) ** 2
                                + (d_mean / (1.0 - r_out) ** 2) ** 2
                                * float(s_out.var()) / n)

        def clip(x: float) -> float:
            return min(max(x, 0.0), 1.0)

        out.append(AttackRisk("inference", clip(risk), (clip(risk - err), clip(risk + err)),
                              n, secret=str(target), variant="class_from_one_column_exact",
                              aux_columns=(str(c),), n_success=round(float(s_in.sum())),
                              n_control_success=round(float(s_out.sum())),
                              n_baseline_success=round(float(
                                  (np.bincount(y).astype(float) ** 2).sum() / n)),
                              note=note))
    return out
