"""The per-class distribution checks of a release: does the surrogate keep, within
every class, each attribute's multiset of values? (GoldenEye only moves values between
rows of one class.) :func:`distribution_checks` is shown by the report's tables and
figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, short_list
from astrid_airflow.io import native

#: Numeric columns with more distinct values than this are compared by quantiles.
QUANTILE_MIN_DISTINCT = 20
QUANTILES = np.linspace(0.0, 1.0, 21)


@dataclass(frozen=True)
class ClassCheck:
    """One attribute within one class: does the surrogate keep its multiset of values?

    ``x``/``y`` are the original's and the surrogate's quantiles (``kind ==
    "quantiles"``) or counts per category (``"counts"``, categories in ``categories``);
    ``max_difference`` is the largest absolute difference between them.
    """

    label: Any
    rows_original: int
    rows_surrogate: int
    identical: bool
    max_difference: float
    x: tuple[float, ...]
    y: tuple[float, ...]
    categories: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "rows_original": self.rows_original,
                "rows_surrogate": self.rows_surrogate, "identical": self.identical,
                "max_difference": self.max_difference}


@dataclass(frozen=True)
class ColumnCheck:
    """The per-class checks of one attribute."""

    column: str
    kind: str
    classes: tuple[ClassCheck, ...]

    @property
    def passed(self) -> bool:
        return all(c.identical for c in self.classes)

    def to_dict(self) -> dict[str, Any]:
        return {"column": self.column, "kind": self.kind, "passed": self.passed,
                "classes": [c.to_dict() for c in self.classes]}


def _counts(s: pd.Series) -> dict[Any, int]:
    return {native(k): int(v) for k, v in s.dropna().astype(object).value_counts().items()}


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)


def distribution_checks(original: pd.DataFrame, surrogate: pd.DataFrame, target: str,
                        columns: Sequence[str]) -> list[ColumnCheck]:
    """Compare every attribute's values within every class of the two tables.

    A GoldenEye surrogate permutes rows within a class, so for each attribute and class
    the surrogate's values must be the original's values reordered: the check is exact
    multiset equality (the gate's check: equal sorted row hashes of the values). For
    display, numeric attributes with more than :data:`QUANTILE_MIN_DISTINCT` distinct
    values are summarised by their quantiles at 0, 5, ..., 100 %, the others by counts
    per category.

    Parameters
    ----------
    original, surrogate : pandas.DataFrame
        The table before and after shuffling; both need ``target`` and ``columns``.
    target : str
        The class column (its multiset kept by the shuffle; rows move).
    columns : sequence of str
        The attributes to check, e.g. in detach order.
    """
    for name, table in (("original", original), ("surrogate", surrogate)):
        missing = [c for c in [target, *columns] if c not in table.columns]
        if missing:
            raise DataError(f"The {name} table lacks column(s) {short_list(missing)}.")
    labels_o = original[target].astype(object)
    labels_s = surrogate[target].astype(object)
    labels = list(dict.fromkeys([native(v) for v in pd.unique(labels_o.dropna())] +
                                [native(v) for v in pd.unique(labels_s.dropna())]))
    rows_o = {lab: (labels_o == lab).to_numpy() for lab in labels}
    rows_s = {lab: (labels_s == lab).to_numpy() for lab in labels}
    from astrid_airflow.gate import same_multiset
    from astrid_airflow.release import row_hashes

    out = []
    for col in columns:
        so, ss = original[col], surrogate[col]
        ho, hs = row_hashes(original, [col]), row_hashes(surrogate, [col])
        numeric = _is_numeric(so) and _is_numeric(ss)
        kind = "quantiles" if numeric and so.nunique() > QUANTILE_MIN_DISTINCT else "counts"
        cats: list[Any] = []
        if kind == "counts":
            cats = list(dict.fromkeys(list(_counts(so)) + list(_counts(ss))))
        checks = []
        for lab in labels:
            a, b = so[rows_o[lab]], ss[rows_s[lab]]
            same = same_multiset(ho[rows_o[lab]], hs[rows_s[lab]])
            if kind == "quantiles":
                x, y = _quantiles(a), _quantiles(b)
                diff = np.abs(x - y)
                gap = float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0
                names: tuple[str, ...] = ()
            else:
                ca, cb = _counts(a), _counts(b)
                na, nb = int(a.isna().sum()), int(b.isna().sum())
                keys = [*cats, "<missing>"] if na or nb else list(cats)
                ca["<missing>"], cb["<missing>"] = na, nb
                x = np.array([ca.get(k, 0) for k in keys], float)
                y = np.array([cb.get(k, 0) for k in keys], float)
                gap = float(np.max(np.abs(x - y))) if len(x) else 0.0
                names = tuple(str(k) for k in keys)
            checks.append(ClassCheck(label=lab, rows_original=len(a), rows_surrogate=len(b),
                                     identical=same, max_difference=gap,
                                     x=tuple(float(v) for v in x),
                                     y=tuple(float(v) for v in y), categories=names))
        out.append(ColumnCheck(column=str(col), kind=kind, classes=tuple(checks)))
    return out


def _quantiles(s: pd.Series) -> np.ndarray:
    v = s.to_numpy(dtype=float, na_value=np.nan)
    v = v[np.isfinite(v)]
    return np.quantile(v, QUANTILES) if v.size else np.full(QUANTILES.size, np.nan)
