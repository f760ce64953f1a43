"""Public I/O helpers for the operators, DAGs, benchmarks and scripts.

Atomic writes, the one JSON reader and JSON-native copies, and the PostgreSQL
connection helpers, under public names. The owning modules are private; this module
is their public face (in the layout move it becomes the ``io`` subpackage's
``__init__``).
"""

from __future__ import annotations

from ._atomic import (
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    fs_put_file,
    fs_write_bytes,
    is_local,
)
from ._dbapi import publish_dbapi, read_dbapi_to_parquet
from ._fs import using
from ._jsonable import load_json, native, plain, strict
from ._sql import (
    CHUNK_ROWS,
    SqlConnectionError,
    SqlPublishError,
    connect,
    publish_table,
    sql_source,
    sql_to_parquet,
)

__all__ = [
    "CHUNK_ROWS",
    "SqlConnectionError",
    "SqlPublishError",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "connect",
    "fs_put_file",
    "fs_write_bytes",
    "is_local",
    "load_json",
    "native",
    "plain",
    "publish_dbapi",
    "publish_table",
    "read_dbapi_to_parquet",
    "sql_source",
    "sql_to_parquet",
    "strict",
    "using",
]
