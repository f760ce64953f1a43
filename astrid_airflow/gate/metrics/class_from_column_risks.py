"""GX metric ``astrid.class_from_column_risks``."""

from __future__ import annotations

from astrid_airflow.gate._checks import class_from_column_values

from ._base import TableMetric


def measure(table, reference, grouping):
    """The exact class-from-one-column risk of every attribute of the surrogate."""
    return class_from_column_values(table, reference.target, grouping,
                                    reference.synthesised)


METRIC = TableMetric("astrid.class_from_column_risks", ("reference", "grouping"), measure)
