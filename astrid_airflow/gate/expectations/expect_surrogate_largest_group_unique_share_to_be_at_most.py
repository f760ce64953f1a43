"""GX expectation ``expect_surrogate_largest_group_unique_share_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import AtMost

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateLargestGroupUniqueShareToBeAtMost(AtMost, kit.BatchExpectation):
        """Privacy: for the grouping's largest group, the share of rows whose values on
        that group's columns are unique in the table is at most ``threshold``."""

        threshold: Threshold
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        grouping: list
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "grouping")
        metric_dependencies: ClassVar[tuple[str, ...]] = (
            "astrid.largest_group_unique_share",)
        _prescriptive_renderer = kit.prescriptive(
            "Share of rows unique on the largest group's columns (linkage risk) must be "
            "at most $threshold.", ["threshold"])

    return ExpectSurrogateLargestGroupUniqueShareToBeAtMost
