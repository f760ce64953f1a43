"""GX expectation ``expect_surrogate_intact_row_proportion_to_be_at_most``."""

from __future__ import annotations

from ._families import AtMost


class ExpectSurrogateIntactRowProportionToBeAtMost(AtMost):
    """Privacy: the proportion of the original's unique rows found unchanged in the
    surrogate (the paper's P_anon, Sec. 6.2) is at most ``threshold``."""

    category = "privacy"
    metric = "astrid.intact_row_proportion"
    parameter = "max_intact"
    sentence = ("Intact-row proportion (share of the original's unique rows found unchanged "
                "in the surrogate) must be at most $threshold.")
