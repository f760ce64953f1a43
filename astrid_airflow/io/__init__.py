"""Tables and bytes in and out: the one table reader, atomic writes on local and
object-store paths, filesystems, JSON-native values, PostgreSQL and DB-API.

Public names, exported lazily (:mod:`astrid_airflow._lazy`); the modules that own them
are private to this package (``tests/test_public_imports.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# public name -> the module of this package that owns it
_EXPORTS: dict[str, str] = {
    "atomic_path": "._atomic",
    "atomic_write_bytes": "._atomic",
    "atomic_write_text": "._atomic",
    "fs_put_file": "._atomic",
    "fs_write_bytes": "._atomic",
    "fsync_dir": "._atomic",
    "is_local": "._atomic",
    "refuse_overwriting_inputs": "._atomic",
    "replace_dir": "._atomic",
    "split_url": "._atomic",
    "staged_dir": "._atomic",
    "publish_dbapi": "._dbapi",
    "read_dbapi_to_parquet": "._dbapi",
    "url_to_fs": "._fs",
    "using": "._fs",
    "check_attributes": "._io",
    "check_regular_file": "._io",
    "check_table": "._io",
    "csv_floats_like": "._io",
    "drop_missing_and_constant": "._io",
    "filesystem": "._io",
    "input_format": "._io",
    "read_arrow": "._io",
    "read_schema": "._io",
    "read_table": "._io",
    "load_json": "._jsonable",
    "native": "._jsonable",
    "plain": "._jsonable",
    "strict": "._jsonable",
    "CHUNK_ROWS": "._sql",
    "connect": "._sql",
    "is_sql_url": "._sql",
    "publish_table": "._sql",
    "qualified_name": "._sql",
    "read_sql": "._sql",
    "read_sql_arrow": "._sql",
    "sql_source": "._sql",
    "sql_to_parquet": "._sql",
    "SqlConnectionError": "._sql",
    "SqlPublishError": "._sql",
}

if TYPE_CHECKING:
    from ._atomic import (
        atomic_path,
        atomic_write_bytes,
        atomic_write_text,
        fs_put_file,
        fs_write_bytes,
        fsync_dir,
        is_local,
        refuse_overwriting_inputs,
        replace_dir,
        split_url,
        staged_dir,
    )
    from ._dbapi import publish_dbapi, read_dbapi_to_parquet
    from ._fs import url_to_fs, using
    from ._io import (
        check_attributes,
        check_regular_file,
        check_table,
        csv_floats_like,
        drop_missing_and_constant,
        filesystem,
        input_format,
        read_arrow,
        read_schema,
        read_table,
    )
    from ._jsonable import load_json, native, plain, strict
    from ._sql import (
        CHUNK_ROWS,
        SqlConnectionError,
        SqlPublishError,
        connect,
        is_sql_url,
        publish_table,
        qualified_name,
        read_sql,
        read_sql_arrow,
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
    "check_attributes",
    "check_regular_file",
    "check_table",
    "connect",
    "csv_floats_like",
    "drop_missing_and_constant",
    "filesystem",
    "fs_put_file",
    "fs_write_bytes",
    "fsync_dir",
    "input_format",
    "is_local",
    "is_sql_url",
    "load_json",
    "native",
    "plain",
    "publish_dbapi",
    "publish_table",
    "qualified_name",
    "read_arrow",
    "read_dbapi_to_parquet",
    "read_schema",
    "read_sql",
    "read_sql_arrow",
    "read_table",
    "refuse_overwriting_inputs",
    "replace_dir",
    "split_url",
    "sql_source",
    "sql_to_parquet",
    "staged_dir",
    "strict",
    "url_to_fs",
    "using",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
