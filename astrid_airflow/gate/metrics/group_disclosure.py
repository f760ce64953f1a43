"""GX metric ``astrid.group_disclosure``."""

from __future__ import annotations

from astrid_airflow.gate._checks import group_disclosure_values

from ._base import TableMetric


def measure(table, reference, grouping, k):
    return group_disclosure_values(table, reference.target, grouping, int(k),
                                   reference.attacker_model, reference.copies,
                                   reference.synthesised)


METRIC = TableMetric("astrid.group_disclosure", ("reference", "grouping", "k"), measure)
