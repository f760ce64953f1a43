"""GX metric ``astrid.intact_row_proportion``."""

from __future__ import annotations

from ._base import TableMetric


def measure(table, reference):
    from astrid_airflow.release import intact_row_proportion

    # On the columns both tables have: a dropped column (an integrity failure of its
    # own) must not hide rows that are intact on the others.
    columns = [c for c in reference.original.columns if c in table.columns]
    if not columns:
        return 0.0
    return float(intact_row_proportion(reference.original, table, columns=columns))


METRIC = TableMetric("astrid.intact_row_proportion", ("reference",), measure)
