"""GX metric ``astrid.largest_group_unique_share``."""

from __future__ import annotations

from astrid_airflow.gate._checks import share_value

from ._base import TableMetric


def measure(table, grouping, reference=None):
    from astrid_airflow.engine import Grouping
    from astrid_airflow.release import largest_group_unique_share

    # Columns missing from the surrogate are an integrity failure; measure the groups
    # on what is there.
    groups = [[c for c in g if c in table.columns] for g in grouping]
    groups = [g for g in groups if g]
    if reference is not None:  # a synthesised group's tuples are no one's
        from astrid_airflow.gate._checks import real_groups

        groups = real_groups(groups, reference.synthesised)
    if not groups or len(table) == 0:
        return 0.0
    return share_value(largest_group_unique_share(table, Grouping(groups)))


METRIC = TableMetric("astrid.largest_group_unique_share", ("grouping", "reference"),
                     measure)
