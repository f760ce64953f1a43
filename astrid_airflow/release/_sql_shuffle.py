"""Shuffle a database table (or a file) into a database table: stage, shuffle, publish.

A release operation over io's SQL staging and publishing: it lives here, above io,
so that io never imports the release layer.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from astrid_airflow.io import (
    CHUNK_ROWS,
    SqlSource,
    file_format,
    is_sql_url,
    publish_table,
    sql_to_parquet,
)


def shuffle_table(source: Any, artefact: Any, destination: Any, *,
                  target: str | None = None, random_state: object = None,
                  comment: str | Mapping[str, Any] | None = None,
                  before_publish: Callable[[str, Any], None] | None = None,
                  chunk_rows: int = CHUNK_ROWS, lock_timeout: float = 30.0) -> dict[str, Any]:
    """A GoldenEye surrogate of a table (a PostgreSQL URL or a file), published as a table.

    The source is staged to a temporary Parquet file (streamed), shuffled with
    :func:`shuffle_file` and published with :func:`~astrid_airflow.io.publish_table`
    with the source's column types. ``before_publish(original, surrogate)`` gets the two
    temporary Parquet paths (e.g. to compute metrics or run a gate); if it raises,
    nothing is published.
    """
    import tempfile

    from ._surrogate import shuffle_file

    with tempfile.TemporaryDirectory(prefix="astrid_sql_") as tmp:
        if isinstance(source, SqlSource) or is_sql_url(source):
            original = os.path.join(tmp, "original.parquet")
            sql_to_parquet(source, original, chunk_rows=chunk_rows)
        else:
            original = os.fspath(source)
            file_format(original)
        out = os.path.join(tmp, "surrogate.parquet")
        shuffle_file(original, artefact, out, target=target, random_state=random_state)
        if before_publish is not None:
            before_publish(original, out)
        return publish_table(out, destination, comment=comment, chunk_rows=chunk_rows,
                             lock_timeout=lock_timeout)
