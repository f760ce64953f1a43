"""GX expectation ``expect_surrogate_group_share_below_k_to_be_at_most``."""

from __future__ import annotations

from ._families import WorstGroup


class ExpectSurrogateGroupShareBelowKToBeAtMost(WorstGroup):
    """Privacy: for every group of the grouping, the share of rows whose (group
    values, class) combination is shared by fewer than ``k`` rows is at most
    ``threshold`` (k-anonymity of each group's projection with a suppression
    budget; Hundepool et al. 2012)."""

    parameter = "max_share_below_k"
    measure = "share_below_k"
    sentence = ("In every group, the share of rows whose group values and class are shared "
                "by fewer than $k rows must be at most $threshold.")
