"""GX expectation ``expect_surrogate_group_share_below_k_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import WorstGroup

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Count, Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateGroupShareBelowKToBeAtMost(WorstGroup, kit.BatchExpectation):
        """Privacy: for every group of the grouping, the share of rows whose (group
        values, class) combination is shared by fewer than ``k`` rows is at most
        ``threshold`` (k-anonymity of each group's projection with a suppression
        budget; Hundepool et al. 2012)."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        k: Count = 5
        measure: ClassVar[str] = "share_below_k"
        _prescriptive_renderer = kit.prescriptive(
            "In every group, the share of rows whose group values and class are shared "
            "by fewer than $k rows must be at most $threshold.", ["threshold", "k"])

    return ExpectSurrogateGroupShareBelowKToBeAtMost
