"""GX expectation ``expect_surrogate_group_class_disclosure_share_to_be_at_most``."""

from __future__ import annotations

from ._families import WorstGroup


class ExpectSurrogateGroupClassDisclosureShareToBeAtMost(WorstGroup):
    """Privacy: for every group, the share of rows whose group values occur in one
    class only (so they disclose the class: distinct l-diversity with l = 2 fails)
    is at most ``threshold``."""

    parameter = "max_class_disclosure_share"
    measure = "class_disclosure_share"
    sentence = ("In every group, the share of rows whose group values occur in one class only "
                "(class disclosure) must be at most $threshold.")
