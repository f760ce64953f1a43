"""Column types: PostgreSQL result columns to Arrow and back, and the SQL types a
published table may have.

Column types come from the server (type OID and modifier of every result column,
domains resolved to their base type) and map to Arrow types:

=========================================  ==========================================
PostgreSQL                                 Arrow (pandas)
=========================================  ==========================================
boolean                                    bool
smallint, integer, bigint                  int16, int32, int64 (float64 with NULLs)
real, double precision                     float32, float64
numeric(p, s)                              float64 (ASTRID treats it as a number)
text, varchar(n), char(n), name, uuid      string
enum types                                 dictionary (categorical; the enum's labels
                                           in declaration order are the categories)
date, timestamp, timestamptz               date32, timestamp[us], timestamp[us, UTC]
time, interval, bytea                      time64[us], duration[us], binary
=========================================  ==========================================

NULL is a missing value in every type. Other types (json, arrays, ranges, composite)
are refused with a ``DataError`` naming the columns (cast them in a query). The exact
SQL type of every column (``numeric(10,2)``, ``character varying(40)``, ``public.mood``
and the enum labels) is recorded in the Arrow schema metadata under ``astrid.sql``, which
Parquet files and GoldenEye shuffles carry along, so
:func:`~astrid_airflow.io._sql_publish.publish_table` can create the surrogate table
with the source's column types.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from astrid_airflow._errors import DataError

from ._sql import IDENT, SqlSource, first_line, qualified_name

#: Arrow schema metadata key holding the SQL column types (JSON).
SQL_METADATA_KEY = b"astrid.sql"
# A type name as format_type() prints it: "numeric(10,2)", "timestamp(3) with time zone",
# "character varying(40)", "public.mood", '"Mood"', "double precision".
_TYPE_TEXT = re.compile(rf"^{IDENT}(?:\.{IDENT})?(?: [a-z]+)*(?:\(\d+(?:,\s*\d+)?\))?"
                        r"(?: with(?:out)? time zone)?(?:\[\])?$")
# Base type OID -> kind (see the module docstring for the Arrow type of each kind).
_KINDS = {16: "boolean", 21: "int16", 23: "int32", 20: "int64", 26: "int64",
          700: "float32", 701: "float64", 1700: "numeric", 25: "string", 1043: "string",
          1042: "string", 19: "string", 18: "string", 2950: "uuid", 1082: "date",
          1114: "timestamp", 1184: "timestamptz", 1083: "time", 1186: "interval",
          17: "binary"}
INTEGER_KINDS = {"int16", "int32", "int64"}


@dataclass(frozen=True)
class SqlColumn:
    """One column: its name, SQL type text, kind and (for enums) labels."""

    name: str
    type: str
    kind: str
    labels: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "kind": self.kind}
        if self.kind == "enum":
            out["labels"] = list(self.labels)
        return out


def describe(cur: Any, shown: str) -> list[SqlColumn]:
    """The columns of the result just executed on ``cur`` (types from the server)."""
    res = cur.pgresult
    fields = [(res.fname(i).decode(), res.ftype(i), res.fmod(i)) for i in range(res.nfields)]
    names = [f[0] for f in fields]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataError(f"{shown}: duplicated column name(s) {dup!r}; alias them in the query.")
    columns, bad = [], []
    for name, oid, mod in fields:
        cur.execute("SELECT format_type(%s, %s)", (oid, mod if mod >= 0 else None))
        type_text = cur.fetchone()[0]
        base, typtype = oid, None
        for _ in range(16):  # domains over domains
            cur.execute("SELECT typtype, typbasetype FROM pg_type WHERE oid = %s", (base,))
            typtype, parent = cur.fetchone()
            if typtype != "d":
                break
            base = parent
        if typtype == "e":
            cur.execute("SELECT enumlabel FROM pg_enum WHERE enumtypid = %s "
                        "ORDER BY enumsortorder", (base,))
            columns.append(SqlColumn(name, type_text, "enum",
                                     tuple(r[0] for r in cur.fetchall())))
        elif base in _KINDS:
            columns.append(SqlColumn(name, type_text, _KINDS[base]))
        else:
            bad.append(f"{name} ({type_text})")
    if bad:
        raise DataError(f"{shown}: unsupported column type(s): {', '.join(bad)}. Only scalar "
                        "columns (numbers, text, enums, booleans, dates and times) can be "
                        "analysed; cast or drop them in a query (?query=SELECT ...).")
    return columns


def arrow_type(column: SqlColumn) -> Any:
    import pyarrow as pa

    return {
        "boolean": pa.bool_(), "int16": pa.int16(), "int32": pa.int32(),
        "int64": pa.int64(), "float32": pa.float32(), "float64": pa.float64(),
        "numeric": pa.float64(), "string": pa.string(), "uuid": pa.string(),
        "date": pa.date32(), "timestamp": pa.timestamp("us"),
        "timestamptz": pa.timestamp("us", tz="UTC"), "time": pa.time64("us"),
        "interval": pa.duration("us"), "binary": pa.binary(),
        "enum": pa.dictionary(pa.int32(), pa.string()),
    }[column.kind]


def arrow_schema(columns: Sequence[SqlColumn]) -> Any:
    import pyarrow as pa

    meta = {"dialect": "postgresql", "columns": [c.to_dict() for c in columns]}
    return pa.schema([pa.field(c.name, arrow_type(c)) for c in columns],
                     metadata={SQL_METADATA_KEY: json.dumps(meta).encode()})


def _arrow_to_sql(name: str, typ: Any) -> SqlColumn:
    """The column definition of an Arrow field without recorded SQL types."""
    import pyarrow as pa

    t = typ.value_type if pa.types.is_dictionary(typ) else typ
    if pa.types.is_boolean(t):
        return SqlColumn(name, "boolean", "boolean")
    if pa.types.is_integer(t):
        bits = t.bit_width + (1 if pa.types.is_unsigned_integer(t) else 0)
        if bits <= 16:
            return SqlColumn(name, "smallint", "int16")
        if bits <= 32:
            return SqlColumn(name, "integer", "int32")
        return SqlColumn(name, "bigint" if bits <= 64 else "numeric", "int64")
    if pa.types.is_floating(t):
        return SqlColumn(name, "real" if t.bit_width == 32 else "double precision",
                         "float32" if t.bit_width == 32 else "float64")
    if pa.types.is_decimal(t):
        return SqlColumn(name, f"numeric({t.precision},{t.scale})", "numeric")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)):
        return SqlColumn(name, "text", "string")
    if pa.types.is_date(t):
        return SqlColumn(name, "date", "date")
    if pa.types.is_timestamp(t):
        return SqlColumn(name, "timestamp with time zone" if t.tz else
                         "timestamp without time zone", "timestamptz" if t.tz else "timestamp")
    if pa.types.is_time(t):
        return SqlColumn(name, "time without time zone", "time")
    if pa.types.is_duration(t):
        return SqlColumn(name, "interval", "interval")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return SqlColumn(name, "bytea", "binary")
    raise DataError(f"Column {name!r} has type {typ}, which has no PostgreSQL equivalent here.")


def recorded_metadata(path: str | os.PathLike) -> dict[bytes, bytes]:
    """The ``astrid.sql`` schema metadata of the Parquet file ``path`` ({} if none)."""
    import pyarrow.parquet as pq

    from ._tablefile import file_format

    if file_format(path) != "parquet":
        return {}
    raw = (pq.read_schema(os.fspath(path)).metadata or {}).get(SQL_METADATA_KEY)
    return {SQL_METADATA_KEY: raw} if raw else {}


def _recorded_columns(schema: Any) -> dict[str, SqlColumn]:
    from ._jsonable import load_json

    raw = (schema.metadata or {}).get(SQL_METADATA_KEY)
    if not raw:
        return {}
    try:
        meta = load_json(raw, "SQL type metadata")
        return {c["name"]: SqlColumn(c["name"], c["type"], c["kind"], tuple(c.get("labels", ())))
                for c in meta["columns"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"Corrupt SQL type metadata ({SQL_METADATA_KEY.decode()}): {exc}") from None


def definitions(cur: Any, schema: Any, like: SqlSource | None) -> list[SqlColumn]:
    from psycopg import sql

    names = list(schema.names)
    bad = [n for n in names if not isinstance(n, str) or not n]
    dup = sorted({n for n in names if names.count(n) > 1})
    if bad or dup:
        raise DataError(f"Cannot publish: column names must be unique non-empty strings "
                        f"(bad {bad!r}, duplicated {dup!r}).")
    if like is not None:
        try:
            cur.execute(sql.SQL("SELECT * FROM {} LIMIT 0").format(qualified_name(like)))
        except Exception as exc:
            raise DataError(f"Cannot read the column types of {like.table!r}: "
                            f"{first_line(exc)}") from None
        found = {c.name: c for c in describe(cur, like.table or "")}
        missing = [n for n in names if n not in found]
        if missing:
            raise DataError(f"Table {like.table!r} (like=) lacks column(s) {missing!r}.")
        columns = [found[n] for n in names]
    else:
        recorded = _recorded_columns(schema)
        columns = [recorded.get(f.name) or _arrow_to_sql(f.name, f.type) for f in schema]
    for c in columns:
        if not _TYPE_TEXT.match(c.type) or c.kind not in {*_KINDS.values(), "enum"}:
            raise DataError(f"Column {c.name!r}: refusing unexpected SQL type {c.type!r}.")
    return columns
