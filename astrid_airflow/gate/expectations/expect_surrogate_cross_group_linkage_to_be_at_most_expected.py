"""GX expectation ``expect_surrogate_cross_group_linkage_to_be_at_most_expected``."""

from __future__ import annotations

from astrid_airflow.gate._checks import judge_linkage

from ._families import GroupingRisk


class ExpectSurrogateCrossGroupLinkageToBeAtMostExpected(GroupingRisk):
    """Privacy: for every pair of groups, the share of rows whose two group tuples
    still sit together as in an original row of the same class exceeds its
    expectation under independent within-class shuffles by at most
    ``max(threshold, 6 sd)``: the groups really were shuffled independently."""

    metric = "astrid.cross_group_linkage"
    parameter = "max_linkage_excess"
    sentence = ("For every pair of groups, the share of rows still linked as in the original "
                "must exceed its expectation under independent shuffles by at most "
                "$threshold (or 6 standard deviations, if larger).")

    def _judge(self, pairs, threshold):
        return judge_linkage(pairs, threshold)
