"""GX expectation ``expect_surrogate_linkability_risk_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import AttackAtMost

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Count, Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateLinkabilityRiskToBeAtMost(AttackAtMost, kit.BatchExpectation):
        """Privacy: the linkability risk of Giomi et al. (the attacker's two column sets
        cut the largest group, or split at random), on a shadow release, has its upper
        95 % bound at most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        n: Count = 500
        attack: ClassVar[str] = "linkability"
        _prescriptive_renderer = kit.prescriptive(
            "Linkability risk (Giomi et al. 2023; shadow release, $n attacks) must have "
            "its upper 95 % bound at most $threshold.", ["threshold", "n"])

    return ExpectSurrogateLinkabilityRiskToBeAtMost
