"""Reading tables (DataFrame, CSV, Parquet, ARFF) and checking them for ASTRID."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._errors import DataError

__all__ = ["read_table", "check_table", "split_target", "drop_missing_and_constant"]

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".arff": "arff"}


def read_table(source: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """Read a table from a DataFrame, CSV, Parquet or ARFF file (or fsspec URL).

    Missing values stay missing (``NaN``/``<NA>``); nominal ARFF attributes become
    pandas categoricals with the declared categories. A PostgreSQL URL with a table or
    a query (``postgresql://user@host/db?table=public.patients``) is read with
    :func:`~astrid_airflow._sql.read_sql` (typed, streamed in chunks).
    """
    if isinstance(source, pd.DataFrame):
        return source
    if isinstance(source, str) and _is_sql_url(source):
        from ._sql import read_sql

        return read_sql(source)
    if not isinstance(source, (str, os.PathLike)):
        raise DataError(f"Cannot read a table from {type(source).__name__}; "
                        "pass a DataFrame or a path to a CSV, Parquet or ARFF file.")
    path = os.fspath(source)
    kind = _SUFFIXES.get(Path(path.split("?")[0]).suffix.lower())
    if kind is None:
        raise DataError(f"Unreadable file {path!r}: expected a .csv, .parquet or .arff file.")
    try:
        if kind == "csv":
            _check_unique_names(_csv_header(path), path)
            return pd.read_csv(path)
        if kind == "parquet":
            import pyarrow.parquet as pq

            with fsspec_open(path) as fh:
                _check_unique_names(pq.read_schema(fh).names, path)
            return pd.read_parquet(path)
        return _read_arff(path)
    except FileNotFoundError:
        raise DataError(f"Unreadable file {path!r}: no such file.") from None
    except DataError:
        raise
    except Exception as exc:  # parsers raise many types; the user needs one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise DataError(f"Unreadable file {path!r}: {type(exc).__name__}: {first}") from None


def fsspec_open(path: str, mode: str = "rb"):
    import fsspec

    return fsspec.open(path, mode)


def _csv_header(path: str) -> list[str]:
    import csv

    with fsspec_open(path, "rt") as fh:
        return next(csv.reader(fh), [])


def _check_unique_names(names: list[str], path: str) -> None:
    # pandas would rename a repeated header ('a2' -> 'a2.1') and Arrow fails with a dump
    seen, dup = set(), []
    for name in names:
        if name in seen and name not in dup:
            dup.append(name)
        seen.add(name)
    if dup:
        raise DataError(f"Unreadable file {path!r}: duplicated column name(s) {dup!r}.")


def _is_sql_url(text: str) -> bool:
    # cheap prefix test, so reading files never imports the SQL module
    head = text.lstrip()[:24].lower()
    return head.startswith(("postgresql://", "postgresql+", "postgres://", "postgres+"))


def _read_arff(path: str) -> pd.DataFrame:
    import arff  # liac-arff
    import fsspec

    with fsspec.open(path, "r", encoding="utf-8", errors="replace") as fh:
        data = arff.load(fh)
    names = [a[0] for a in data["attributes"]]
    frame = pd.DataFrame(data["data"], columns=names)
    for name, kind in data["attributes"]:
        if isinstance(kind, list):
            frame[name] = pd.Categorical(frame[name], categories=kind)
        elif str(kind).upper() in {"REAL", "NUMERIC", "INTEGER"}:
            frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    return frame


def check_table(table: pd.DataFrame, target: str, *, min_rows_per_class: int = 1) -> None:
    """Raise ``DataError`` naming the problem if ``table`` cannot be analysed."""
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"Expected a pandas DataFrame, got {type(table).__name__}.")
    bad = [c for c in table.columns if not isinstance(c, str)]
    if bad:
        raise DataError(f"Column names must be strings; got {bad[:5]!r}.")
    dup = table.columns[table.columns.duplicated()].tolist()
    if dup:
        raise DataError(f"Duplicated column name(s): {sorted(set(dup))!r}.")
    if target not in table.columns:
        raise DataError(f"Target column {target!r} is not in the table; "
                        f"columns are {list(table.columns)[:20]!r}.")
    if table.shape[1] < 2:
        raise DataError("The table has no attribute columns besides the target.")
    if len(table) == 0:
        raise DataError("The table is empty (0 rows).")
    y = table[target]
    if y.isna().any():
        raise DataError(f"Target column {target!r} has {int(y.isna().sum())} missing value(s).")
    counts = y.value_counts()
    labels = [_plain(v) for v in counts.index.tolist()]  # plain Python labels in messages
    if len(counts) < 2:
        raise DataError(f"Target column {target!r} has a single class ({labels[0]!r}); "
                        "at least two are needed.")
    small = {lab: int(n) for lab, n in zip(labels, counts.tolist()) if n < min_rows_per_class}
    if small:
        raise DataError(
            f"Class(es) {list(small)[:5]!r} of {target!r} have fewer than "
            f"{min_rows_per_class} rows ({small}); too few for the split.")
    nested = [c for c in table.columns if c != target and table[c].map(_is_nested).any()]
    if nested:
        raise DataError(f"Column(s) {nested!r} hold nested values (lists, dicts); "
                        "only scalar columns are supported.")


class LinkageWarning(UserWarning):
    """An attribute makes rows linkable or is too fine-grained to learn from."""


def check_attributes(table: pd.DataFrame, attributes: list[str]) -> None:
    """Checks before learning: no all-missing or constant attributes (errors); ID-like
    and very high-cardinality categorical attributes (warnings)."""
    import warnings

    n = len(table)
    empty = [c for c in attributes if table[c].isna().all()]
    if empty:
        raise DataError(f"Attribute column(s) {empty!r} have no values (all missing); "
                        "drop them before learning.")
    constant = [c for c in attributes if table[c].nunique(dropna=False) <= 1]
    if constant:
        raise DataError(f"Attribute column(s) {constant!r} are constant; drop them (or pass "
                        "--clean, the paper's cleaning) before learning.")
    for c in attributes:
        col = table[c]
        if pd.api.types.is_float_dtype(col.dtype):
            continue
        levels = col.nunique(dropna=True)
        if n >= 20 and levels == n:
            warnings.warn(f"Column {c!r} looks like an ID: all {n} values are unique, which "
                          "makes every row linkable; drop it from tables you publish.",
                          LinkageWarning, stacklevel=3)
        elif not pd.api.types.is_numeric_dtype(col.dtype) and levels > max(50, n // 5):
            warnings.warn(f"Column {c!r} is a categorical with {levels} levels in {n} rows: "
                          "its one-hot encoding is wide and it identifies rows; consider "
                          "binning or dropping it.", LinkageWarning, stacklevel=3)


def _plain(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _is_nested(value: object) -> bool:
    return isinstance(value, (list, dict, tuple, set, np.ndarray))


def split_target(table: pd.DataFrame, target: str) -> tuple[pd.DataFrame, pd.Series]:
    """Attributes and class column, in table order."""
    return table.drop(columns=[target]), table[target]


def drop_missing_and_constant(table: pd.DataFrame, target: str,
                              keep: Sequence[str] = ()) -> pd.DataFrame:
    """The paper's cleaning: drop rows with a missing value, then constant attributes."""
    out = table.dropna(axis=0, how="any")
    constant = [c for c in out.columns
                if c != target and c not in keep and out[c].nunique(dropna=False) <= 1]
    out = out.drop(columns=constant)
    for c in out.columns:
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].cat.remove_unused_categories()
    return out.reset_index(drop=True)
