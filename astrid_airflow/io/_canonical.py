"""The canonical serialisation of a table: the bytes a release is published as.

The gate judges parsed values; a file's bytes carry more than its values (trailing
zeros, quoting, line ends, exponent notation, Parquet row groups, column and schema
metadata, the row order). Any of them can hide data the gate never sees. So a release
is never the staged file's bytes: :func:`canonical_file_bytes` reads the staged file
with the one reader the gate uses (:func:`~astrid_airflow.io.read_arrow`) and writes
its values again in one fixed form, so the published bytes are a function of the
judged values and a seed alone (``tests/io/test_canonical.py`` states it as a property).

The canonical form
------------------
* **Types**: every integer type becomes int64 (uint64 beyond its range stays uint64),
  every float float64, every text type (and any dictionary) its plain value type;
  fields are nullable and carry no metadata; the schema carries none.
* **Values**: NaN is missing (as everywhere in the library); ``-0.0`` is ``0.0``.
* **Rows**: sorted by every column (ascending, missing last), then permuted by a
  uniformly random permutation drawn from the seed. The order is therefore a function
  of the *multiset* of rows and the seed: nothing of the staged order survives, so a
  within-class shuffle that kept the rows in the source's order publishes nothing of
  that order (the seed may be public).
* **CSV**: UTF-8 without BOM, ``\\n`` line ends (one after the last row), ``,``
  separator; the header's names and every text value always in double quotes (a quote
  doubled inside); numbers in Arrow's shortest round-trip form (``4``, ``24.7``,
  ``1e+20``), booleans ``true``/``false``, a missing value an empty field.
* **Parquet**: one writer configuration (:data:`PARQUET_OPTIONS`): row groups of
  :data:`ROW_GROUP_ROWS` rows, zstd level 3, dictionary pages, statistics, no page
  index, format 2.6, data page v1.

A form is kept only if it is a fixed point: the bytes read back and written again give
the same bytes (otherwise a value does not survive the format, and publishing is
refused with the reason).
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from astrid_airflow._errors import DataError, ParameterError

ROW_GROUP_ROWS = 1 << 20
PARQUET_OPTIONS: dict[str, Any] = {
    "row_group_size": ROW_GROUP_ROWS, "compression": "zstd", "compression_level": 3,
    "use_dictionary": True, "write_statistics": True, "version": "2.6",
    "data_page_version": "1.0", "data_page_size": 1 << 20, "write_page_index": False,
    "store_schema": True, "use_compliant_nested_type": True,
}
KINDS = ("csv", "parquet")


def _canonical_column(name: str, column: Any) -> tuple[Any, Any]:
    """``(array, type)`` of one column in the canonical types and values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    typ = array.type
    if pa.types.is_integer(typ):
        try:
            return pc.cast(array, pa.int64()), pa.int64()
        except (pa.ArrowInvalid, OverflowError):  # uint64 beyond int64: kept exact
            return array, typ
    if pa.types.is_floating(typ):
        array = pc.cast(array, pa.float64())
        # NaN is missing everywhere in the library; -0.0 == 0.0 is the same value
        array = pc.if_else(pc.is_nan(array), pa.scalar(None, pa.float64()), array)
        array = pc.if_else(pc.equal(array, 0.0), pa.scalar(0.0), array)
        return array, pa.float64()
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or \
            getattr(pa.types, "is_string_view", lambda _: False)(typ):
        return pc.cast(array, pa.string()), pa.string()
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ):
        return pc.cast(array, pa.binary()), pa.binary()
    if pa.types.is_date64(typ):
        return pc.cast(array, pa.date32()), pa.date32()
    if pa.types.is_nested(typ):
        raise DataError(f"Column {name!r} is nested ({typ}); a release holds flat columns.")
    return array, typ  # bool, null, date32, time, timestamp, duration, decimal


def canonical_table(table: Any, *, columns: Sequence[str] | None = None) -> Any:
    """``table`` (a pyarrow Table) in the canonical types and values, row order kept.

    ``columns``: the order of the columns (exactly the table's names); default the
    table's own order.
    """
    import pyarrow as pa

    names = list(table.column_names)
    if columns is not None:
        columns = list(columns)
        if sorted(columns) != sorted(names):
            raise DataError(f"The table's columns {names[:20]} are not the release's "
                            f"columns {columns[:20]}.")
        names = columns
    arrays, fields = [], []
    for name in names:
        array, typ = _canonical_column(name, table.column(name))
        arrays.append(array)
        fields.append(pa.field(name, typ, nullable=True))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _seed(random_state: object) -> int:
    import numbers

    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) \
            or random_state < 0:
        raise ParameterError(f"Invalid random_state {random_state!r} for the release's row "
                             "order: a non-negative int is needed (it is recorded).")
    return int(random_state)


def _sort_indices(table: Any) -> Any:
    """The row indices that sort canonical ``table`` by every column (missing last);
    ``None`` when it has no column to sort by."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = [(f.name, "ascending", "at_end") for f in table.schema
            if not pa.types.is_null(f.type)]
    return pc.sort_indices(table, sort_keys=keys) if keys else None


def _order_indices(table: Any, random_state: int) -> Any:
    """The row indices of :func:`canonical_order`: the sort's indices permuted by the
    seed's permutation, so the order takes one copy of the table, not two."""
    rng = np.random.default_rng(np.random.SeedSequence(_seed(random_state)))
    permutation = rng.permutation(table.num_rows)
    ordered = _sort_indices(table)
    return permutation if ordered is None else ordered.take(permutation)


def canonical_sort(table: Any) -> Any:
    """The rows of canonical ``table`` sorted by every column (missing last)."""
    indices = _sort_indices(table)
    return table if indices is None else table.take(indices)


def canonical_order(table: Any, random_state: int) -> Any:
    """The rows of canonical ``table`` sorted by every column, then permuted uniformly
    at random by ``random_state``: an order that depends on the rows, never on the
    order they came in."""
    seed = _seed(random_state)  # checked on an empty table too
    return table.take(_order_indices(table, seed)) if table.num_rows else table


def _csv_cell_texts(array: Any) -> Any:
    """Every cell of one canonical column as CSV text (an Arrow large_string array)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    typ = array.type
    if pa.types.is_null(typ):
        return pa.array([""] * len(array), pa.large_string())
    text = pc.cast(array, pa.large_string())  # Arrow's shortest round-trip numbers
    quoted = not (pa.types.is_integer(typ) or pa.types.is_floating(typ)
                  or pa.types.is_boolean(typ))
    if quoted:
        text = pc.binary_join_element_wise(
            _text('"'), pc.replace_substring(text, '"', '""'), _text('"'), _text(""))
    return text.fill_null(_text(""))


def _text(value: str) -> Any:
    import pyarrow as pa

    return pa.scalar(value, pa.large_string())


def _quote_name(name: str) -> str:
    if "\n" in name or "\r" in name:
        raise DataError(f"Column name {name!r} holds a line break: not publishable as CSV.")
    return '"' + name.replace('"', '""') + '"'


def canonical_csv_bytes(table: Any) -> bytes:
    """A canonical (typed, ordered) table as canonical CSV bytes.

    Built in Arrow (cells, then lines joined element-wise, each ending in ``\\n``) and
    taken from the lines' data buffer: no Python string per cell.
    """
    import pyarrow.compute as pc

    header = (",".join(_quote_name(n) for n in table.column_names) + "\n").encode("utf-8")
    if table.num_columns == 0 or table.num_rows == 0:
        return header + b"\n" * table.num_rows
    cells = [_csv_cell_texts(table.column(n).combine_chunks()) for n in table.column_names]
    row = cells[0] if len(cells) == 1 else pc.binary_join_element_wise(*cells, _text(","))
    lines = pc.binary_join_element_wise(row, _text(""), _text("\n"))
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)
    start, stop = offsets[lines.offset], offsets[lines.offset + len(lines)]
    return header + lines.buffers()[2].to_pybytes()[start:stop]


def canonical_parquet_bytes(table: Any) -> bytes:
    """A canonical (typed, ordered) table as Parquet bytes, one writer configuration."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **PARQUET_OPTIONS)
    return buf.getvalue()


def _check_kind(kind: object) -> str:
    if kind not in KINDS:
        raise ParameterError(f"Invalid kind {kind!r} for a release: one of {KINDS}.")
    return str(kind)


def _serialised(ordered: Any, kind: str) -> bytes:
    return canonical_csv_bytes(ordered) if kind == "csv" else canonical_parquet_bytes(ordered)


def canonical_bytes(table: Any, kind: str, *, random_state: int,
                    columns: Sequence[str] | None = None) -> bytes:
    """``table`` (pyarrow Table) in the canonical ``kind`` form and a seeded row order."""
    kind = _check_kind(kind)
    return _serialised(canonical_order(canonical_table(table, columns=columns),
                                       random_state), kind)


def canonical_release(source: str | os.PathLike, *, seed_of: Callable[[str], int],
                      columns: Sequence[str] | None = None, kind: str | None = None
                      ) -> tuple[bytes, int, str]:
    """``(bytes, seed, content digest)`` to publish for the staged file ``source``.

    ``content digest`` is the SHA-256 of the sorted canonical form: a function of the
    values alone (any re-formatting of the file, any row order gives the same). The
    row order's seed is ``seed_of(content digest)``, so a publication retried with the
    same values gives the same bytes, and nothing of the staged bytes but their values
    decides them. ``DataError`` if a value does not survive the format.
    """
    from ._io import input_format, read_arrow

    text = os.fspath(source)
    kind = _check_kind(kind or input_format(text))
    # one typed copy at a time beside the sorted or ordered one (peak memory)
    typed = canonical_table(read_arrow(text, kind=kind), columns=columns)
    content = hashlib.sha256(_serialised(canonical_sort(typed), kind)).hexdigest()
    seed = _seed(seed_of(content))
    data = _serialised(canonical_order(typed, seed), kind)
    del typed
    check_fixed_point(data, kind, random_state=seed, columns=columns, shown=text)
    return data, seed, content


def canonical_file_bytes(source: str | os.PathLike, *, random_state: int,
                         columns: Sequence[str] | None = None,
                         kind: str | None = None) -> bytes:
    """The bytes to publish for the staged file ``source``: its values, as the gate reads
    them, in the canonical form of its own format and the order ``random_state`` draws.

    Raises ``DataError`` if a value does not survive the format (the bytes, read back
    and written again, would differ): nothing is then published.
    """
    from ._io import input_format, read_arrow

    text = os.fspath(source)
    kind = _check_kind(kind or input_format(text))
    data = canonical_bytes(read_arrow(text, kind=kind), kind, random_state=random_state,
                           columns=columns)
    check_fixed_point(data, kind, random_state=random_state, columns=columns, shown=text)
    return data


def check_fixed_point(data: bytes, kind: str, *, random_state: int,
                      columns: Sequence[str] | None = None, shown: str = "the table") -> None:
    """Raise ``DataError`` unless canonical ``data``, read back and written again, gives
    the same bytes (every value survives the format)."""
    kind = _check_kind(kind)
    try:  # the read-back table is dropped once typed: one copy of it at a time
        typed = canonical_table(_read_back(data, kind), columns=columns)
        again = _serialised(canonical_order(typed, random_state), kind)
    except DataError:
        again = None
    if again != data:
        raise DataError(f"Cannot publish {shown!r} in the canonical {kind} form: some values "
                        "do not read back as written (e.g. the text 'NA', which a CSV "
                        "reader takes as missing); nothing was published.")


def _read_back(data: bytes, kind: str) -> Any:
    from ._io import read_arrow

    with tempfile.TemporaryDirectory(prefix="astrid_canonical_") as tmp:
        path = os.path.join(tmp, f"release.{kind}")
        with open(path, "wb") as fh:
            fh.write(data)
        return read_arrow(path, kind=kind)


def is_canonical(source: str | os.PathLike, *, random_state: int,
                 columns: Sequence[str] | None = None) -> bool:
    """Whether the file's bytes are exactly its canonical form for ``random_state``."""
    from ._io import filesystem

    text = os.fspath(source)
    fs, inner = filesystem(text)
    with (fs.open(inner, "rb") if fs is not None else open(inner, "rb")) as fh:
        found = fh.read()
    return canonical_file_bytes(text, random_state=random_state, columns=columns) == found
