"""GX expectation ``expect_surrogate_inference_risk_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import AttackAtMost

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Count, Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateInferenceRiskToBeAtMost(AttackAtMost, kit.BatchExpectation):
        """Privacy: the inference risk of Giomi et al. for every secret (the class from
        the attributes or from one column, each member of a multi-column group from its
        group-mates), on a shadow release, has its upper 95 % bound at most
        ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        n: Count = 500
        attack: ClassVar[str] = "inference"
        _prescriptive_renderer = kit.prescriptive(
            "Inference risk of every secret (Giomi et al. 2023; shadow release, $n "
            "attacks) must have its upper 95 % bound at most $threshold.",
            ["threshold", "n"])

    return ExpectSurrogateInferenceRiskToBeAtMost
