"""What a surrogate file carries besides its columns: the gate's allow-list.

The release gate judges a table; what is published is a file (or a database table). A
file can carry data the table reader never shows: Parquet index columns, key-value or
field metadata, dictionary entries no row uses, bytes no column chunk references; a CSV
index column or rows longer than the header; a database table's extra columns and
comments. So before the gate judges a surrogate, :func:`check_publishable` holds its
container to an allow-list, and refuses anything else with the reason
(``DataError``, bad input: nothing is judged or written).

A publishable **Parquet** file holds exactly the artefact's columns (class column
included; none missing from the check here, a missing column is a gate failure), as flat
columns, with:

* key-value metadata keys ``ARROW:schema`` (the Arrow schema of exactly those columns,
  with no field metadata and no embedded metadata besides the two below), ``pandas``
  (describing exactly those columns, with no index or a ``RangeIndex`` 0..n, no
  ``attrs``) and ``astrid.sql`` (the SQL types :func:`~astrid_airflow.io._sql_read.sql_to_parquet`
  records: one entry per column; enum labels only the artefact's categories); nothing else;
* column chunks that tile the file from its magic bytes to its footer (no unreferenced
  bytes), stored in the file itself, without page indexes;
* a footer whose every Thrift field is one a Parquet reader knows (readers skip unknown
  fields, so they could hide anything), decoded to its last byte;
* column chunks filled exactly by their pages (no bytes after the last page), holding
  the values they declare, with dictionaries no larger than the values used (plus the
  artefact's categories) and statistics that are values of the column;
* dictionaries holding only values some row uses or the artefact's recorded categories.

Not inspected: bytes inside a page's compressed payload beyond what its decoder reads
(that needs decoding every page).

A publishable **CSV** file has a header of exactly the artefact's columns (no unnamed or
duplicated column) and every row has as many fields as the header. A publishable
**PostgreSQL** table has exactly the artefact's columns, no column comments and no table
comment other than the release record :class:`PublishSurrogateOperator` writes.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Sequence
from typing import Any

from astrid_airflow._errors import DataError

_ALLOWED_KEYS = (b"ARROW:schema", b"pandas", b"astrid.sql")
_INDEX_NAME = re.compile(r"^__index_level_\d+__$")
_SHORT = re.compile(r"^[\w .:/()\[\],+-]{0,64}$")  # a type name, version, encoding...
# "parquet-cpp-arrow version 26.0.1", "parquet-mr version 1.13.1 (build abc)", "Polars"
_CREATED_BY = re.compile(r"^(?:[\w.+-]+(?: [\w.+-]+){0,3} version v?[\w.+-]{1,32}"
                         r"(?: \(build [\w.+-]{1,64}\))?|[\w.+-]{1,32})$")
_PANDAS_KEYS = {"index_columns", "column_indexes", "columns", "creator", "pandas_version",
                "attributes"}
_PANDAS_COLUMN_KEYS = {"name", "field_name", "pandas_type", "numpy_type", "metadata"}
_PANDAS_COLUMN_META = {"num_categories", "ordered", "timezone", "encoding", "precision",
                       "scale", "unit"}
_RELEASE_KEYS = {"astrid_release", "sha256", "artefact", "run_id", "published_at"}
_SHOWN = 3  # reasons named in the one-line error


def check_publishable(source: Any, artefact: Any) -> None:
    """Refuse a surrogate that carries anything besides the artefact's columns.

    Parameters
    ----------
    source : path, URL or DataFrame
        The surrogate as it will be published: a ``.parquet``/``.pq`` or ``.csv`` file
        (local or fsspec URL), or a PostgreSQL URL naming a table. A DataFrame has no
        container and passes.
    artefact : GroupingArtefact
        Gives the allowed columns (and the categories a dictionary may hold).

    Raises
    ------
    DataError
        One line naming what the file carries besides its columns.
    """
    problems = publishability_problems(source, artefact)
    if problems:
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise DataError(f"Not publishable: {_shown(source)} carries more than the "
                        f"artefact's columns: {'; '.join(problems[:_SHOWN])}{more}.")


def publishability_problems(source: Any, artefact: Any) -> list[str]:
    """Every reason ``source`` is not publishable (empty when it is); see the module."""
    if not isinstance(source, (str, os.PathLike)):  # a DataFrame: no container
        return []  # (anything else is refused by the reader with its own message)
    from astrid_airflow.io import is_sql_url

    text = os.fspath(source)
    if is_sql_url(text):
        return _sql_problems(text, artefact)
    suffix = os.path.splitext(text.split("?")[0])[1].lower()
    if suffix in (".parquet", ".pq"):
        return _guarded(_parquet_problems, text, artefact)
    if suffix == ".csv":
        return _guarded(_csv_problems, text, artefact)
    raise DataError(f"Unreadable file {text!r}: expected a .csv or .parquet surrogate.")


def _guarded(check, text: str, artefact: Any) -> list[str]:
    try:
        return check(text, artefact)
    except FileNotFoundError:
        raise DataError(f"Unreadable file {text!r}: no such file.") from None
    except DataError:
        raise
    except Exception as exc:  # a parser's many error types; the user needs one line
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise DataError(f"Unreadable file {text!r}: {type(exc).__name__}: {first}") from None


def _shown(source: Any) -> str:
    text = os.fspath(source) if isinstance(source, (str, os.PathLike)) else str(source)
    return repr(re.sub(r"//[^/@]*@", "//", text))  # no password of a database URL


def _column_problems(names: Sequence[str], artefact: Any, index: Sequence[str] = ()
                     ) -> list[str]:
    """Extra, unnamed and duplicated column names."""
    allowed = set(artefact.columns)
    out = []
    dup = sorted({n for n in names if list(names).count(n) > 1})
    if dup:
        out.append(f"duplicated column name(s) {dup}")
    for n in dict.fromkeys(names):
        if n in allowed:
            continue
        if n in index or _INDEX_NAME.match(str(n)):
            out.append(f"index column {n!r} (a pandas index written into the file)")
        elif str(n).strip() == "" or str(n).startswith("Unnamed: "):
            out.append("an unnamed column (a pandas index written by to_csv)")
        else:
            out.append(f"extra column {n!r}")
    return out


# ---------------------------------------------------------------------------- Parquet

def _parquet_problems(text: str, artefact: Any) -> list[str]:
    import fsspec
    import pyarrow as pa
    import pyarrow.parquet as pq

    fs, inner = fsspec.core.url_to_fs(text)
    size = fs.size(inner)
    with fs.open(inner, "rb") as fh:
        head = fh.read(4)
        fh.seek(max(size - 8, 0))
        tail = fh.read(8)
        pf = pq.ParquetFile(fh)
        meta, schema = pf.metadata, pf.schema_arrow
        raw = dict(meta.metadata or {})
        pandas_meta = _json(raw.get(b"pandas"))
        index = [i for i in (pandas_meta or {}).get("index_columns", [])
                 if isinstance(i, str)] if isinstance(pandas_meta, dict) else []
        out = _column_problems(schema.names, artefact, index)
        out += _metadata_problems(raw, schema, meta.num_rows, artefact)
        out += _layout_problems(meta, size, head, tail, len(schema.names))
        if out:  # the values are worth reading only for a file of the right shape
            return out
        dictionaries = [f.name for f in schema if pa.types.is_dictionary(f.type)]
        if dictionaries:
            out += _dictionary_problems(pf.read(columns=dictionaries), artefact)
        return out or _byte_problems(fh, size, pf, artefact)


def _json(raw: bytes | None) -> Any:
    """Decoded JSON; ``None`` if absent; ``ValueError`` (the class) if not JSON."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return ValueError


def _metadata_problems(raw: dict, schema: Any, rows: int, artefact: Any) -> list[str]:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    out = [f"key-value metadata {k.decode(errors='replace')[:40]!r} ({len(v)} bytes)"
           for k, v in raw.items() if k not in _ALLOWED_KEYS]
    for f in schema:
        if f.metadata:
            out.append(f"field metadata on column {f.name!r}")
        if pa.types.is_nested(f.type):
            out.append(f"nested column {f.name!r} ({f.type})")
    if b"ARROW:schema" in raw:
        try:
            blob = base64.b64decode(raw[b"ARROW:schema"], validate=True)
            stored = ipc.read_schema(pa.py_buffer(blob))
        except Exception:  # any decoding failure is the same finding
            out.append("an undecodable ARROW:schema")
        else:
            if stored.serialize().to_pybytes() != blob:
                out.append("ARROW:schema with bytes beyond the schema")
            if stored.names != schema.names:
                out.append(f"ARROW:schema of other columns {stored.names[:10]}")
            out += [f"field metadata on column {f.name!r} (in ARROW:schema)"
                    for f in stored if f.metadata]
            extra = {k: v for k, v in (stored.metadata or {}).items()
                     if k not in _ALLOWED_KEYS or raw.get(k) != v}
            if extra:
                out.append(f"metadata embedded in ARROW:schema {sorted(extra)[:5]}")
    if b"pandas" in raw:
        out += _pandas_problems(_json(raw[b"pandas"]), schema.names, rows)
    if b"astrid.sql" in raw:
        out += _sql_metadata_problems(_json(raw[b"astrid.sql"]), schema.names, artefact)
    return out


def _pandas_problems(meta: Any, names: list[str], rows: int) -> list[str]:
    bad = "pandas metadata"
    if not isinstance(meta, dict):
        return [f"{bad} that is not a JSON object"]
    out = [f"{bad} key {k!r}" for k in meta if k not in _PANDAS_KEYS]
    if meta.get("attributes") not in (None, {}):
        out.append(f"{bad} 'attributes' (DataFrame.attrs)")
    index = meta.get("index_columns", [])
    range_index = {"kind": "range", "name": None, "start": 0, "stop": rows, "step": 1}
    if index not in ([], [range_index]):
        out.append(f"{bad} index {_short(index)} (only none or a RangeIndex 0..{rows})")
    columns = meta.get("columns")
    if not isinstance(columns, list) or [c.get("name") if isinstance(c, dict) else None
                                         for c in columns] != list(names):
        out.append(f"{bad} describing other columns than the file's")
    else:
        for c in columns:
            if set(c) - _PANDAS_COLUMN_KEYS or c.get("field_name") != c.get("name") \
                    or not all(_is_short(c.get(k)) for k in ("pandas_type", "numpy_type")) \
                    or not _small_meta(c.get("metadata")):
                out.append(f"{bad} of column {c.get('name')!r} holding more than its type")
    for c in meta.get("column_indexes", []) or []:
        if not isinstance(c, dict) or set(c) - _PANDAS_COLUMN_KEYS or c.get("name") \
                is not None or not _small_meta(c.get("metadata")):
            out.append(f"{bad} column index {_short(c)}")
    creator = meta.get("creator", {})
    if not isinstance(creator, dict) or set(creator) - {"library", "version"} \
            or not all(_is_short(v) for v in creator.values()) \
            or not _is_short(meta.get("pandas_version")):
        out.append(f"{bad} creator/version fields holding more than versions")
    return out


def _is_short(value: Any) -> bool:
    return value is None or (isinstance(value, str) and bool(_SHORT.match(value)))


def _small_meta(meta: Any) -> bool:
    return meta is None or (isinstance(meta, dict) and set(meta) <= _PANDAS_COLUMN_META
                            and all(isinstance(v, (bool, int)) or _is_short(v)
                                    for v in meta.values()))


def _sql_metadata_problems(meta: Any, names: list[str], artefact: Any) -> list[str]:
    bad = "astrid.sql metadata"
    if not isinstance(meta, dict) or set(meta) != {"dialect", "columns"} \
            or meta["dialect"] != "postgresql" or not isinstance(meta["columns"], list):
        return [f"{bad} of an unknown form"]
    cols = meta["columns"]
    if [c.get("name") if isinstance(c, dict) else None for c in cols] != list(names):
        return [f"{bad} describing other columns than the file's"]
    out = []
    for c in cols:
        keys = set(c) - {"labels"}
        labels = c.get("labels", [])
        allowed = _categories(artefact, c["name"])
        if keys != {"name", "type", "kind"} or not _is_short(c["type"]) \
                or not _is_short(c["kind"]) or not isinstance(labels, list) \
                or not {str(v) for v in labels} <= allowed:
            out.append(f"{bad} of column {c['name']!r} holding more than its type")
    return out


def _categories(artefact: Any, column: str) -> set[str]:
    try:
        entry = artefact.column_schema(column)
    except KeyError:
        return set()
    return {str(v) for v in entry.get("categories") or []}


def _layout_problems(meta: Any, size: int, head: bytes, tail: bytes, fields: int
                     ) -> list[str]:
    out = []
    if meta.created_by and not _CREATED_BY.match(meta.created_by):
        out.append(f"a created_by field that is not a writer's name and version "
                   f"({len(meta.created_by)} characters)")
    if head != b"PAR1" or tail[4:] != b"PAR1":
        out.append("bytes before or after the Parquet file")
    if meta.num_columns != fields:
        out.append(f"{meta.num_columns} physical columns for {fields} fields")
    footer = int.from_bytes(tail[:4], "little")
    ranges, rows = [], 0
    for r in range(meta.num_row_groups):
        group = meta.row_group(r)
        rows += group.num_rows
        for i in range(group.num_columns):
            chunk = group.column(i)
            if chunk.file_path:
                out.append(f"a column chunk stored in another file {chunk.file_path!r}")
            if chunk.has_column_index or chunk.has_offset_index:
                out.append("a page index (astrid writes none)")
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page \
                else chunk.data_page_offset
            ranges.append((start, start + chunk.total_compressed_size))
    if rows != meta.num_rows:
        out.append(f"row groups holding {rows} rows for {meta.num_rows} declared")
    position, hidden = 4, 0
    for start, stop in sorted(ranges):
        hidden += max(start - position, 0)
        if start < position:
            out.append("overlapping column chunks")
        position = max(position, stop)
    hidden += max(size - 8 - footer - position, 0)
    if hidden:
        out.append(f"{hidden} bytes that no column chunk references")
    return sorted(set(out), key=out.index)


def _dictionary_problems(table: Any, artefact: Any) -> list[str]:
    import pyarrow as pa
    import pyarrow.compute as pc

    out = []
    for name in table.column_names:
        column = table.column(name)
        if not pa.types.is_dictionary(column.type):
            continue
        used = set()
        dictionary = set()
        for chunk in column.chunks:
            used.update(str(v) for v in pc.unique(chunk.dictionary_decode()).to_pylist()
                        if v is not None)
            dictionary.update(str(v) for v in chunk.dictionary.to_pylist())
        unused = dictionary - used - _categories(artefact, name)
        if unused:
            out.append(f"{len(unused)} value(s) in the dictionary of column {name!r} that "
                       "no row uses and the artefact does not record")
    return out


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ------------------------------------------------ Parquet: every byte accounted for

# Thrift fields a Parquet reader understands, per struct (parquet.thrift); readers skip
# unknown ones, so any other field is a place to hide bytes. "bin": a binary whose
# content is checked where it is used; "name": a schema name.
_I, _B, _BIN, _NAME = "int", "bool", "bin", "name"
_STATS = {1: _BIN, 2: _BIN, 3: _I, 4: _I, 5: _BIN, 6: _BIN, 7: _B, 8: _B}
_UNIT = {1: {}, 2: {}, 3: {}}
_LOGICAL = {1: {}, 2: {}, 3: {}, 4: {}, 5: {1: _I, 2: _I}, 6: {}, 7: {1: _B, 2: _UNIT},
            8: {1: _B, 2: _UNIT}, 10: {1: _I, 2: _B}, 11: {}, 12: {}, 13: {}, 14: {}, 15: {}}
_SCHEMA_ELEMENT = {1: _I, 2: _I, 3: _I, 4: _NAME, 5: _I, 6: _I, 7: _I, 8: _I, 9: _I,
                   10: _LOGICAL}
_COLUMN_META = {1: _I, 2: [_I], 3: [_NAME], 4: _I, 5: _I, 6: _I, 7: _I, 9: _I, 10: _I,
                11: _I, 12: _STATS, 13: [{1: _I, 2: _I, 3: _I}], 14: _I, 15: _I,
                16: {1: _I, 2: [_I], 3: [_I]}}
_FILE = {1: _I, 2: [_SCHEMA_ELEMENT], 3: _I, 5: [{1: _BIN, 2: _BIN}], 6: _BIN, 7: [{1: {}}],
         4: [{1: [{1: _BIN, 2: _I, 3: _COLUMN_META, 4: _I, 5: _I, 6: _I, 7: _I}],
              2: _I, 3: _I, 4: [{1: _I, 2: _B, 3: _B}], 5: _I, 6: _I, 7: _I}]}
_PAGE = {1: _I, 2: _I, 3: _I, 4: _I, 5: {1: _I, 2: _I, 3: _I, 4: _I, 5: _STATS},
         7: {1: _I, 2: _I, 3: _B}, 8: {1: _I, 2: _I, 3: _I, 4: _I, 5: _I, 6: _I, 7: _B,
                                       8: _STATS}}
_BYTE_ARRAY = (6, 7)  # physical types whose statistics are values of any length


def _byte_problems(fh: Any, size: int, pf: Any, artefact: Any) -> list[str]:
    """The footer decoded field by field, and every column chunk walked page by page."""
    from ._thrift import ThriftError, read_struct

    length = int.from_bytes(_read_at(fh, size - 8, 4), "little")
    footer = _read_at(fh, size - 8 - length, length)
    try:
        meta, end = read_struct(footer)
    except ThriftError as exc:
        return [f"a footer that does not decode ({exc})"]
    out = [] if end == length else [f"{length - end} bytes in the footer after its metadata"]
    names = {n.encode() for n in pf.schema_arrow.names}
    _allowed(meta, _FILE, "footer", out, names)
    if out:
        return out
    for r, group in enumerate(meta.get(4, [])):
        table = pf.read_row_group(r)
        for i, chunk in enumerate(group.get(1, [])):
            column = chunk[3]
            values = table.column(i)
            out += _chunk_problems(fh, column, values, read_struct, ThriftError,
                                   _categories(artefact, pf.schema_arrow.names[i]))
    return sorted(set(out), key=out.index)


def _read_at(fh: Any, offset: int, size: int) -> bytes:
    fh.seek(offset)
    return fh.read(size)


def _allowed(value: Any, spec: Any, where: str, out: list[str], names: set) -> None:
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            out.append(f"a malformed footer field {where}")
            return
        for field, item in value.items():
            if field not in spec:
                out.append(f"an unknown footer field {where}.{field}")
            else:
                _allowed(item, spec[field], f"{where}.{field}", out, names)
    elif isinstance(spec, list):
        if not isinstance(value, list):
            out.append(f"a malformed footer field {where}")
            return
        for item in value:
            _allowed(item, spec[0], where, out, names)
    elif spec == _NAME:
        if not isinstance(value, bytes) or (value not in names and not _SHORT.match(
                value.decode("utf-8", "replace"))):
            out.append(f"a schema name in the footer that is no column ({len(value)} bytes)")
    elif (spec == _BIN) != isinstance(value, bytes) or (spec == _B) != isinstance(value, bool):
        out.append(f"a malformed footer field {where}")


def _chunk_problems(fh: Any, column: dict, values: Any, read_struct, error,
                    categories: set[str]) -> list[str]:
    """Pages of one column chunk: they must fill it exactly and hold what it declares."""
    import pyarrow as pa
    import pyarrow.compute as pc

    name = b".".join(column.get(3, [])).decode("utf-8", "replace")
    start = column.get(11) or column[9]
    data = _read_at(fh, start, column[7])
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    distinct = pc.unique(values.drop_null()) if values.null_count else pc.unique(values)
    t, texts = distinct.type, None
    if column[1] in _BYTE_ARRAY and (pa.types.is_string(t) or pa.types.is_large_string(t)
                                     or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
        texts = {v.encode() if isinstance(v, str) else bytes(v) for v in distinct.to_pylist()}
    out, stats = [], [column.get(12, {})]
    pos, counted, dictionary = 0, 0, None
    while pos < len(data):
        try:
            header, body = read_struct(data, pos)
        except error as exc:
            return [f"a page header in column {name!r} that does not decode ({exc})"]
        bad: list[str] = []
        _allowed(header, _PAGE, f"page header of {name!r}", bad, set())
        if bad or not isinstance(header.get(3), int) or header[3] < 0:
            return bad or [f"a malformed page header in column {name!r}"]
        kind = header.get(1)
        if kind == 2:
            dictionary = header.get(7, {}).get(1, 0)
        elif kind in (0, 3):
            page = header.get(5 if kind == 0 else 8, {})
            counted += page.get(1, 0)
            stats.append(page.get(5 if kind == 0 else 8, {}))
        else:
            out.append(f"a page of type {kind} in column {name!r}")
        pos = body + header[3]
    if pos != len(data):
        out.append(f"a column chunk {name!r} whose pages do not fill it")
    if counted != column[5]:
        out.append(f"column {name!r} declaring {column[5]} values and holding {counted}")
    if dictionary is not None and dictionary > len(distinct) + len(categories):
        out.append(f"{dictionary - len(distinct)} dictionary entries in column {name!r} "
                   "that no row uses")
    for s in stats:
        for field in (1, 2, 5, 6):
            v = s.get(field)
            if v is None:
                continue
            exact = s.get(7 if field == 5 else 8, True) if field in (5, 6) else True
            if texts is None:
                if len(v) > 32:
                    out.append(f"statistics of column {name!r} longer than a value")
            elif v not in texts and (exact or not any(t.startswith(v) for t in texts)):
                out.append(f"statistics of column {name!r} that are no value of it")
    return out


# -------------------------------------------------------------------------------- CSV

def _csv_problems(text: str, artefact: Any) -> list[str]:
    import csv

    import fsspec

    with fsspec.open(text, "rt", encoding="utf-8-sig", newline="") as fh:  # BOM as pandas
        reader = csv.reader(fh)
        header = next(reader, [])
        out = _column_problems(header, artefact)
        width = len(header)
        for line, row in enumerate(reader, start=2):
            if row and len(row) != width:  # pandas takes leading extra fields as an index
                out.append(f"row {line} has {len(row)} fields, the header {width}")
                break
    return out


# ------------------------------------------------------------------------- PostgreSQL

def _sql_problems(url: str, artefact: Any) -> list[str]:
    from astrid_airflow.io import connect, qualified_name, sql_source

    src = sql_source(url)
    if not src.table:  # a query's result: only its columns can carry anything
        from astrid_airflow.io import read_sql_arrow

        return _column_problems(read_sql_arrow(src).schema.names, artefact)
    with connect(src) as conn, conn.cursor() as cur:
        name = qualified_name(src).as_string(cur)
        cur.execute("SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) "
                    "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (name,))
        out = _column_problems([r[0] for r in cur.fetchall()], artefact)
        cur.execute("SELECT d.objsubid, a.attname, d.description FROM pg_description d "
                    "LEFT JOIN pg_attribute a ON a.attrelid = d.objoid "
                    "AND a.attnum = d.objsubid WHERE d.objoid = to_regclass(%s) "
                    "AND d.classoid = 'pg_class'::regclass", (name,))
        for sub, column, description in cur.fetchall():
            if sub:
                out.append(f"a comment on column {column!r} ({len(description)} characters)")
            elif not _is_release_comment(description):
                out.append(f"a table comment that is not astrid's release record "
                           f"({len(description)} characters)")
        for what, query in _SQL_OBJECTS:  # publish_table creates none of these
            cur.execute(query, {"t": name})
            found = [r[0] for r in cur.fetchall()]
            if found:
                out.append(f"{what} {found[:5]}")
    return out


# Objects attached to a table that can hold values besides its rows (names only shown).
_SQL_OBJECTS = (
    ("column default(s) on", "SELECT a.attname FROM pg_attrdef d JOIN pg_attribute a ON "
     "a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = to_regclass(%(t)s)"),
    ("constraint(s)", "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%(t)s)"),
    ("trigger(s)", "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%(t)s) "
     "AND NOT tgisinternal"),
    ("rule(s)", "SELECT rulename FROM pg_rewrite WHERE ev_class = to_regclass(%(t)s) "
     "AND rulename <> '_RETURN'"),
    ("inheriting table(s)", "SELECT inhrelid::regclass::text FROM pg_inherits "
     "WHERE inhparent = to_regclass(%(t)s)"),
    ("comment(s) on its indexes", "SELECT i.indexrelid::regclass::text FROM pg_index i "
     "JOIN pg_description d ON d.objoid = i.indexrelid WHERE i.indrelid = to_regclass(%(t)s)"),
)


def _is_release_comment(text: str) -> bool:
    record = _json(text.encode())
    return isinstance(record, dict) and set(record) <= _RELEASE_KEYS and all(
        v is None or (isinstance(v, str) and len(v) <= 200 and bool(
            re.match(r"^[\w.:@+/ -]*$", v))) for v in record.values())
