"""GX expectation ``expect_surrogate_inference_risk_to_be_at_most``."""

from __future__ import annotations

from ._families import AttackAtMost


class ExpectSurrogateInferenceRiskToBeAtMost(AttackAtMost):
    """Privacy: the inference risk of Giomi et al. for every secret (the class from
    the attributes or from one column, each member of a multi-column group from its
    group-mates), on a shadow release, has its upper 95 % bound at most
    ``threshold``."""

    parameter = "max_inference_risk"
    attack = "inference"
    sentence = ("Inference risk of every secret (Giomi et al. 2023; shadow release, $n "
                "attacks) must have its upper 95 % bound at most $threshold.")
