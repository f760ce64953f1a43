"""GX expectation ``expect_surrogate_singling_out_risk_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import AttackAtMost

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Count, Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateSinglingOutRiskToBeAtMost(AttackAtMost, kit.BatchExpectation):
        """Privacy: the singling-out risk of Giomi et al. (PETS 2023), univariate and
        multivariate predicates, on a shadow release of the original (a GoldenEye
        surrogate of a random half, the rest as control), has its upper 95 % bound at
        most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        n: Count = 500
        attack: ClassVar[str] = "singling_out"
        _prescriptive_renderer = kit.prescriptive(
            "Singling-out risk (Giomi et al. 2023; shadow release, $n attacks) must have "
            "its upper 95 % bound at most $threshold.", ["threshold", "n"])

    return ExpectSurrogateSinglingOutRiskToBeAtMost
