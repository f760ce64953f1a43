"""GX metric ``astrid.synthetic_closeness``."""

from __future__ import annotations

from ._base import TableMetric


def measure(table, reference, grouping):
    """The DCR test of every synthesised group (``[]``: none is synthesised)."""
    from astrid_airflow.privacy import ClosenessEvaluator

    synthesised = reference.synthesised
    real = reference.real
    groups = [list(g) for g in grouping if synthesised is not None and synthesised(list(g))]
    if not groups:
        return []
    if real is None or reference.target not in table.columns:
        return None
    out = []
    for g in groups:
        if not all(c in table.columns and c in real.columns for c in g):
            return None  # a missing column: an integrity failure of its own
        out.append(ClosenessEvaluator(real, table, reference.target, g,
                                      random_state=reference.seed).evaluate().results())
    return out


METRIC = TableMetric("astrid.synthetic_closeness", ("reference", "grouping"), measure)
