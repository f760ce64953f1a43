"""GX metric ``astrid.class_changes``."""

from __future__ import annotations

from astrid_airflow.gate._checks import class_changes

from ._base import TableMetric


def measure(table, reference):
    return class_changes(reference.original, table, reference.target)


METRIC = TableMetric("astrid.class_changes", ("reference",), measure)
