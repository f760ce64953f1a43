"""Column-wise encoding of a mixed table into a float matrix.

The encoder is fitted once on the original training table. Every statistic it keeps
(median, mean, standard deviation, category set) is a function of a column's multiset
of values, which a GoldenEye permutation leaves unchanged; so encoding a permuted
table equals permuting the rows of the encoded table, group by group. The engine uses
this to encode once and permute encoded rows (see ``attribute_of_column_``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin

from astrid_airflow._errors import DataError


def is_numeric_column(series: pd.Series) -> bool:
    """Numeric attributes are encoded as numbers; everything else as categories."""
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(
        series.dtype
    )


class TableEncoder(TransformerMixin, BaseEstimator):
    """Encode a DataFrame of mixed attributes as a dense float matrix.

    Parameters
    ----------
    numeric : {"scale", "impute"}, default="scale"
        ``"scale"`` standardises numeric columns with the training mean and standard
        deviation (as e1071's ``svm(scale=TRUE)``); ``"impute"`` leaves them as they are.
        Missing numeric values are replaced by the training median either way.
    categorical : {"onehot", "ordinal"}, default="onehot"
        One indicator column per training category (unseen categories encode as all
        zeros), or one integer code per category (unseen categories encode as -1).
        A missing value is a category of its own.

    Attributes
    ----------
    columns_ : list of str
        Attribute names seen in ``fit``.
    attribute_of_column_ : ndarray of shape (n_output_columns,)
        For every output column, the position in ``columns_`` of its attribute.
    """

    def __init__(
        self,
        numeric: Literal["scale", "impute"] = "scale",
        categorical: Literal["onehot", "ordinal"] = "onehot",
    ):
        self.numeric = numeric
        self.categorical = categorical

    def fit(self, X: pd.DataFrame, y: object = None) -> TableEncoder:
        if not isinstance(X, pd.DataFrame):
            raise DataError(f"Expected a DataFrame of attributes, got {type(X).__name__}.")
        self.columns_ = [str(c) for c in X.columns]
        self.specs_: list[tuple] = []
        owners: list[int] = []
        for i, name in enumerate(X.columns):
            col = X[name]
            if is_numeric_column(col):
                values = col.to_numpy(dtype=float, na_value=np.nan)
                finite = values[~np.isnan(values)]
                median = float(np.median(finite)) if finite.size else 0.0
                mean = float(finite.mean()) if finite.size else 0.0
                std = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
                self.specs_.append(("num", median, mean, std if std > 0 else 1.0))
                owners.append(i)
            else:
                cats = sorted(set(_category_strings(col)[1]))
                self.specs_.append(("cat", {c: j for j, c in enumerate(cats)}))
                owners.extend([i] * (len(cats) if self.categorical == "onehot" else 1))
        self.attribute_of_column_ = np.asarray(owners, dtype=np.intp)
        self.n_features_in_ = len(self.columns_)
        return self

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        missing = [c for c in self.columns_ if c not in X.columns]
        if missing:
            raise DataError(f"Column(s) {missing!r} seen in fit are missing.")
        blocks = []
        for name, spec in zip(self.columns_, self.specs_):
            col = X[name]
            if spec[0] == "num":
                _, median, mean, std = spec
                try:
                    values = col.to_numpy(dtype=float, na_value=np.nan)
                except (TypeError, ValueError):
                    raise DataError(
                        f"Column {name!r} was numeric when fitted but holds non-numeric "
                        "values now.") from None
                values = np.where(np.isnan(values), median, values)
                if self.numeric == "scale":
                    values = (values - mean) / std
                blocks.append(values[:, None])
            else:
                rows, names = _category_strings(col)
                codes = np.fromiter((spec[1].get(v, -1) for v in names), dtype=np.intp,
                                    count=len(names))[rows]
                if self.categorical == "onehot":
                    onehot = np.zeros((len(col), len(spec[1])))
                    known = codes >= 0
                    onehot[np.flatnonzero(known), codes[known]] = 1.0
                    blocks.append(onehot)
                else:
                    blocks.append(codes.astype(float)[:, None])
        if not blocks:
            return np.empty((len(X), 0))
        return np.hstack(blocks)


_MISSING = "\x00missing"


def _category_strings(col: pd.Series) -> tuple[np.ndarray, list[str]]:
    """``(rows, names)``: each row's category as ``names[rows[i]]``, every category the
    string of its value (so 1 and "1" from different readers agree), missing values one.

    Only the distinct values are turned into strings: a typed column is factorized in
    its own dtype (its distinct values have distinct strings); an object column, whose
    1 and 1.0 are one value to pandas but two strings, row by row first.
    """
    if col.dtype == object:
        mask, values = col.isna().to_numpy(), col.to_numpy()
        strings = np.array([_MISSING if m else str(v) for v, m in zip(values, mask)],
                           dtype=object)
        rows, uniques = pd.factorize(strings)
        return np.asarray(rows, dtype=np.intp), [str(u) for u in uniques]
    rows, uniques = pd.factorize(col, use_na_sentinel=True)
    rows = np.asarray(rows, dtype=np.intp)
    names = [str(v) for v in uniques]
    if (rows < 0).any():  # missing
        rows = np.where(rows < 0, len(names), rows)
        names.append(_MISSING)
    return rows, names
