"""GX metric ``astrid.schema_differences``."""

from __future__ import annotations

from astrid_airflow.gate._checks import schema_differences

from ._base import TableMetric


def measure(table, reference):
    return schema_differences(reference.original, table)


METRIC = TableMetric("astrid.schema_differences", ("reference",), measure)
