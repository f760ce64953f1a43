"""File formats by suffix, files whose format is given, and the Arrow writers.

The one place that maps a path to ``"parquet"`` or ``"csv"`` and opens a writer for
it: the shuffle, the generaliser, the SQL staging and the metrics all go through it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from astrid_airflow._errors import DataError

_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


def file_format(path: str | os.PathLike) -> str:
    """``"parquet"`` or ``"csv"`` from the suffix of ``path`` (DataError otherwise)."""
    suffix = Path(os.fspath(path).split("?")[0]).suffix.lower()
    kind = _FORMATS.get(suffix)
    if kind is None:
        raise DataError(f"Unsupported file {os.fspath(path)!r}: expected a .parquet, .pq or "
                        ".csv file.")
    return kind


@dataclass(frozen=True)
class TableFile:
    """A Parquet or CSV file whose format is given rather than read from its suffix.

    :func:`shuffle_file` hands these to ``before_publish`` for its temporary outputs.
    """

    path: str
    kind: str


def arrow_writer(kind: str, path: str, schema: Any) -> Any:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if kind == "parquet":
        return pq.ParquetWriter(path, schema)
    return pcsv.CSVWriter(path, csv_schema(schema))


def csv_schema(schema: Any) -> Any:
    import pyarrow as pa

    # The CSV writer has no dictionary type: categoricals are written as their values.
    return pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type)
                               else f.type) for f in schema])
