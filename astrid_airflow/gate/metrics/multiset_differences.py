"""GX metric ``astrid.multiset_differences``."""

from __future__ import annotations

from astrid_airflow.gate._checks import multiset_differences

from ._base import TableMetric


def measure(table, reference, groups):
    """Per column (``groups`` None) or per group of columns, within every class."""
    return multiset_differences(reference.original, table, reference.target,
                                None if groups is None else [list(g) for g in groups])


METRIC = TableMetric("astrid.multiset_differences", ("reference", "groups"), measure)
