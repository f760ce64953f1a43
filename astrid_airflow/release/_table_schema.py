"""What an artefact records of a table and checks it against: column kinds (pandas
and Arrow), schema entries, the content fingerprint, and the :class:`SchemaCheck`
findings with the unique values they are built from.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import ArtefactError, ParameterError, short_list
from astrid_airflow.io import native

# --------------------------------------------------------------------------- JSON values

def json_scalar(value: Any, what: str) -> Any:
    """A JSON scalar for ``value`` (numpy scalars unwrapped), or ``ArtefactError``."""
    value = native(value)
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ArtefactError(f"{what} holds a non-finite number ({value!r}).")
        return value
    raise ArtefactError(f"{what} holds {value!r} ({type(value).__name__}), "
                        "which is not a JSON scalar (str, int, float, bool).")


# ------------------------------------------------------------------------- column kinds

def dtype_kind(dtype: Any, values: pd.Series | None = None) -> str:
    """Coarse kind of a pandas dtype: what a schema check compares (and, for numbers
    and booleans, the type a remedy publishes).

    Exact dtypes drift harmlessly between readers (int32/int64, ``str``/``object``,
    a nominal ARFF column as ``category`` but the same column from CSV as ``str``), so
    columns are compared by kind; a categorical has the kind of its categories. An
    object column has the kind inferred from ``values`` if given, else ``string``.
    """
    if isinstance(dtype, pd.CategoricalDtype):
        cats = dtype.categories
        if len(cats) == 0:
            return "empty"
        return dtype_kind(cats.dtype, pd.Series(cats))
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if isinstance(dtype, pd.StringDtype):
        return "string"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "timedelta"
    if dtype == np.dtype(object) and values is not None:
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        return {
            "string": "string", "empty": "empty", "integer": "integer",
            "floating": "float", "mixed-integer-float": "float", "decimal": "float",
            "boolean": "boolean", "datetime": "datetime", "datetime64": "datetime",
            "date": "datetime", "timedelta": "timedelta", "timedelta64": "timedelta",
        }.get(inferred, "other")
    if dtype == np.dtype(object):
        return "string"
    return "other"


def typed_like(values: np.ndarray, like: pd.Series) -> pd.Series:
    """``values`` (float, NaN = missing) in ``like``'s dtype (integers stay integers)."""
    if pd.api.types.is_integer_dtype(like.dtype) and not np.isnan(values).any():
        # through pandas: a nullable Int64 column is no numpy dtype
        return pd.Series(values, index=like.index, name=like.name).astype(like.dtype)
    if pd.api.types.is_integer_dtype(like.dtype):
        return pd.Series(pd.array(values, dtype="Float64").astype("Int64"), index=like.index,
                         name=like.name)
    return pd.Series(values.astype(like.dtype if pd.api.types.is_float_dtype(like.dtype)
                                   else float), index=like.index, name=like.name)



def _kind_of_arrow(typ: Any) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        return _kind_of_arrow(typ.value_type)
    if pa.types.is_boolean(typ):
        return "boolean"
    if pa.types.is_integer(typ):
        return "integer"
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "float"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)):
        return "string"
    if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
        return "datetime"
    if pa.types.is_duration(typ):
        return "timedelta"
    if pa.types.is_null(typ):
        return "empty"
    return "other"


def column_kind(series: pd.Series) -> str:
    """The kind (``integer``, ``float``, ``boolean``, ``string``...) of a column."""
    return dtype_kind(series.dtype, series)


def compatible_kind(expected: str, got: str) -> bool:
    # An all-missing column fits anything; integers may arrive where floats were seen
    # (ARFF REAL is always float), but not the other way round.
    return got == expected or got == "empty" or (expected == "float" and got == "integer")


def schema_of(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Schema entries ``{name, dtype, kind[, categories, ordered]}`` of every column."""
    out = []
    for name in table.columns:
        col = table[name]
        entry: dict[str, Any] = {"name": str(name), "dtype": str(col.dtype),
                                 "kind": column_kind(col)}
        if isinstance(col.dtype, pd.CategoricalDtype):
            entry["categories"] = [json_scalar(c, f"Categories of column {name!r}")
                                   for c in col.dtype.categories]
            entry["ordered"] = bool(col.dtype.ordered)
        out.append(entry)
    return out


# --------------------------------------------------------------------------- fingerprint

def fingerprint_table(table: pd.DataFrame) -> dict[str, Any]:
    """Row count and SHA-256 content hash of a table.

    The hash covers the column names and dtypes (in column order) and the 64-bit row
    hashes of :func:`pandas.util.hash_pandas_object` (``index=False``, fixed key), in
    row order: it is the same in every process and on every machine for a given pandas
    version, and changes if any value, column, dtype or the row order changes.

    Returns
    -------
    dict
        ``{"rows": int, "sha256": str}``.
    """
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"Cannot fingerprint {type(table).__name__}; "
                             "expected a pandas DataFrame.")
    digest = hashlib.sha256()
    header = {"rows": len(table),
              "columns": [[str(c), str(table[c].dtype)] for c in table.columns]}
    digest.update(json.dumps(header, sort_keys=True).encode())
    if len(table) and table.shape[1]:
        rows = pd.util.hash_pandas_object(table, index=False).to_numpy()
        digest.update(np.ascontiguousarray(rows, dtype="<u8").data)
    return {"rows": len(table), "sha256": digest.hexdigest()}


# ------------------------------------------------------------------------- schema check

@dataclass(frozen=True)
class SchemaCheck:
    """What :meth:`GroupingArtefact.check_table` found besides hard mismatches.

    Attributes
    ----------
    unseen_classes : list
        Class labels absent at learning time (allowed: their rows are still shuffled
        within their own class).
    unseen_categories : dict
        Column -> values outside the categories recorded for a categorical column.
    reordered : bool
        The columns are all there but in another order (harmless: columns are used by
        name).
    """

    unseen_classes: list = field(default_factory=list)
    unseen_categories: dict = field(default_factory=dict)
    reordered: bool = False

    @property
    def notes(self) -> list[str]:
        """Human-readable notes, one per finding (empty if the table matches exactly)."""
        out = []
        if self.unseen_classes:
            out.append(f"{len(self.unseen_classes)} class label(s) not seen at learning "
                       f"time: {short_list(self.unseen_classes)}; their rows are shuffled "
                       "within their own class.")
        for col, vals in self.unseen_categories.items():
            out.append(f"Column {col!r} has {len(vals)} value(s) outside its recorded "
                       f"categories: {short_list(vals)}.")
        if self.reordered:
            out.append("Columns are in a different order than at learning time.")
        return out


def table_columns(table: Any) -> tuple[list[str], dict[str, str], dict[str, str], bool]:
    """Column names, kinds and dtype strings of a DataFrame/Arrow table/Arrow schema."""
    if isinstance(table, pd.DataFrame):
        names = [str(c) for c in table.columns]
        kinds = {str(c): column_kind(table[c]) for c in table.columns}
        dtypes = {str(c): str(table[c].dtype) for c in table.columns}
        return names, kinds, dtypes, True
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pa = None
    if pa is not None and isinstance(table, (pa.Table, pa.RecordBatch, pa.Schema)):
        schema = table if isinstance(table, pa.Schema) else table.schema
        names = list(schema.names)
        kinds = {f.name: _kind_of_arrow(f.type) for f in schema}
        dtypes = {f.name: str(f.type) for f in schema}
        return names, kinds, dtypes, not isinstance(table, pa.Schema)
    raise ParameterError(f"Cannot check {type(table).__name__} against an artefact; "
                         "expected a pandas DataFrame, a pyarrow Table or a pyarrow Schema.")


def unique_values(table: Any, column: str) -> list:
    if isinstance(table, pd.DataFrame):
        col = table[column]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            vals = col.cat.categories[np.unique(codes[codes >= 0])]
        else:
            vals = col.dropna().unique()
        return [native(v) for v in vals]
    import pyarrow.compute as pc

    return [v for v in pc.unique(table.column(column)).to_pylist() if v is not None]
