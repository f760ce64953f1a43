"""GX metric ``astrid.reference_row_count``."""

from __future__ import annotations

from ._base import TableMetric


def measure(table, reference):
    return len(reference.original)


METRIC = TableMetric("astrid.reference_row_count", ("reference",), measure)
