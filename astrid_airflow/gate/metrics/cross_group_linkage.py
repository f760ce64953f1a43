"""GX metric ``astrid.cross_group_linkage``."""

from __future__ import annotations

from astrid_airflow.gate._checks import linkage_values

from ._base import TableMetric


def measure(table, reference, grouping):
    return linkage_values(reference.original, table, reference.target, grouping)


METRIC = TableMetric("astrid.cross_group_linkage", ("reference", "grouping"), measure)
