"""Tables and bytes in and out: the one table reader, atomic writes on local and
object-store paths, filesystems, JSON-native values, PostgreSQL and DB-API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._atomic import (
        atomic_path,
        atomic_write_bytes,
        atomic_write_text,
        fs_put_file,
        fs_write_bytes,
        fsync_dir,
        refuse_overwriting_inputs,
        replace_dir,
        staged_dir,
    )
    from ._bounded import MAX_POLICY_BYTES, load_json_file, read_bounded
    from ._canonical import (
        canonical_bytes,
        canonical_file_bytes,
        canonical_release,
        canonical_table,
        check_fixed_point,
        is_canonical,
    )
    from ._cas import LOCK_TIMEOUT, file_lock, is_s3, s3_etag, s3_put
    from ._dbapi import publish_dbapi, read_dbapi_to_parquet
    from ._digest import file_sha256
    from ._fs import is_local, split_url, url_to_fs, using
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
        suppressed_like,
    )
    from ._jsonable import MAX_JSON_BYTES, load_json, native, plain, strict
    from ._modes import current_umask, dir_mode, file_mode
    from ._signing import (
        SIGNATURE,
        allowing_unsigned,
        key_file,
        sign,
        signature_problem,
        signing,
        signing_key,
        signing_key_or_new,
        unsigned_allowed,
    )
    from ._sql import (
        CHUNK_ROWS,
        SqlConnectionError,
        SqlPublishError,
        SqlSource,
        connect,
        is_sql_url,
        qualified_name,
        sql_source,
    )
    from ._sql_publish import publish_table
    from ._sql_read import read_sql, read_sql_arrow, sql_to_parquet
    from ._store_layout import (
        ARTEFACT_FILE,
        STORE_CLAIM,
        STORE_NAME,
        STORE_VERSION_DIR,
        check_outside_store,
        refuse_inside_store,
    )
    from ._tablefile import TableFile, arrow_writer, csv_schema, file_format

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
