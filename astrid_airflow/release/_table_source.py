"""Column-wise table access for the privacy metrics: :class:`TableSource` (a DataFrame,
Arrow table or Parquet/CSV file read one column at a time, Parquet strings optionally
dictionary-encoded) and :func:`is_stringy`, the Arrow string/binary type test both the
reads and the hashes use.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from astrid_airflow._errors import DataError, short_list
from astrid_airflow.io import TableFile, read_arrow


def is_arrow_table(obj: object) -> bool:
    """Whether ``obj`` is a ``pyarrow.Table``."""
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return False
    return isinstance(obj, pa.Table)


def table_source(table: Any, what: str) -> TableSource:
    return table if isinstance(table, TableSource) else TableSource(table, what)


class TableSource:
    """Column-wise access to a DataFrame, Arrow table or Parquet/CSV file."""

    def __init__(self, table: Any, what: str):
        self.path = None
        self.schema = None  # a Parquet file's Arrow schema (from its footer)
        if isinstance(table, pd.DataFrame):
            self.columns = [str(c) for c in table.columns]
            self.num_rows = len(table)
        elif is_arrow_table(table):
            self.columns = list(table.column_names)
            self.num_rows = table.num_rows
        elif isinstance(table, (str, os.PathLike, TableFile)):
            import pyarrow.parquet as pq

            from astrid_airflow.io import filesystem, input_format

            self.path = table if isinstance(table, TableFile) else os.fspath(table)
            kind = table.kind if isinstance(table, TableFile) else input_format(self.path)
            if kind != "parquet":  # CSV, ARFF: parsed whole, once
                table = read_arrow(self.path)
                self.columns, self.num_rows = list(table.column_names), table.num_rows
            else:
                shown = getattr(self.path, "path", self.path)
                fs, inner = filesystem(shown)
                try:
                    meta = pq.read_metadata(inner, filesystem=fs)
                except FileNotFoundError:
                    raise DataError(f"Unreadable file {shown!r}: no such file.") from None
                except Exception as exc:
                    raise DataError(f"Unreadable file {shown!r}: "
                                    f"{type(exc).__name__}: {exc}") from None
                self.schema = meta.schema.to_arrow_schema()
                self.columns = list(self.schema.names)
                self.num_rows = meta.num_rows
                table = None
        else:
            raise DataError(f"Cannot compute metrics of {type(table).__name__} ({what}); pass "
                            "a pandas DataFrame, a pyarrow Table or a Parquet/CSV path.")
        self.table = table

    def column(self, name: str, *, dictionary: bool = False) -> Any:
        """Column ``name``; with ``dictionary``, a Parquet string column comes
        dictionary-encoded as stored (its indices and distinct values, never one Python
        or Arrow string per row)."""
        if self.table is None:  # Parquet: read one column at a time
            if dictionary and is_stringy(self.schema.field(name).type):
                return self._dictionary_column(name)
            return read_arrow(self.path, [name]).column(name)
        if isinstance(self.table, pd.DataFrame):
            return self.table[name]
        return self.table.column(name)

    def _dictionary_column(self, name: str) -> Any:
        import pyarrow.parquet as pq

        from astrid_airflow.io import filesystem, read_schema

        shown = getattr(self.path, "path", self.path)
        if not getattr(self, "_checked", False):  # read_arrow's checks: a regular file,
            read_schema(shown, kind="parquet")  # unique column names
            self._checked = True
        fs, inner = filesystem(shown)
        try:
            return pq.read_table(inner, columns=[name], filesystem=fs,
                                 read_dictionary=[name]).column(name)
        except Exception as exc:
            raise DataError(f"Unreadable file {shown!r}: {type(exc).__name__}: {exc}") from None

    def require(self, columns: Sequence[str], what: str) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise DataError(f"The {what} lacks column(s) {short_list(missing)}.")


def is_stringy(typ: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_string(typ) or pa.types.is_large_string(typ)
            or pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
            or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)))
