"""GX expectation ``expect_surrogate_group_class_disclosure_share_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import WorstGroup

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Count, Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateGroupClassDisclosureShareToBeAtMost(WorstGroup, kit.BatchExpectation):
        """Privacy: for every group, the share of rows whose group values occur in one
        class only (so they disclose the class: distinct l-diversity with l = 2 fails)
        is at most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        k: Count = 5
        measure: ClassVar[str] = "class_disclosure_share"
        _prescriptive_renderer = kit.prescriptive(
            "In every group, the share of rows whose group values occur in one class only "
            "(class disclosure) must be at most $threshold.", ["threshold"])

    return ExpectSurrogateGroupClassDisclosureShareToBeAtMost
