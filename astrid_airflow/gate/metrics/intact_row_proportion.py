"""GX metric ``astrid.intact_row_proportion``."""

from __future__ import annotations

from ._base import TableMetric


def measure(table, reference, k=None):
    """The paper's P_anon; under a declared attacker model (``k``: the policy's
    ``disclosure_k``), ``{"counted", "all_rows"}``: the share of the original's distinct
    rows that disclose someone and are intact, beside P_anon."""
    from astrid_airflow.release import disclosing_rows, intact_row_shares

    # On the columns both tables have: a dropped column (an integrity failure of its
    # own) must not hide rows that are intact on the others.
    original = reference.original
    columns = [c for c in original.columns if c in table.columns]
    if not columns:
        return 0.0
    counted = None if not k else disclosing_rows(original, reference.target,
                                                 reference.attacker_model, int(k))
    every, share = intact_row_shares(original, table, columns=columns, counted=counted)
    return every if counted is None else {"counted": share, "all_rows": every}


METRIC = TableMetric("astrid.intact_row_proportion", ("reference", "k"), measure)
