"""GX metric ``astrid.attack_risks``."""

from __future__ import annotations

from ._base import TableMetric


def measure(table, reference, grouping, n):
    """The shadow release's attack risks (computed once per run, however many ask)."""
    return reference.attack_value([list(g) for g in grouping], int(n))


METRIC = TableMetric("astrid.attack_risks", ("reference", "grouping", "n"), measure)
