"""GX expectation ``expect_surrogate_singling_out_risk_to_be_at_most``."""

from __future__ import annotations

from ._families import AttackAtMost


class ExpectSurrogateSinglingOutRiskToBeAtMost(AttackAtMost):
    """Privacy: the singling-out risk of Giomi et al. (PETS 2023), univariate and
    multivariate predicates, on a shadow release of the original (a GoldenEye
    surrogate of a random half, the rest as control), has its upper 95 % bound at
    most ``threshold``."""

    parameter = "max_singling_out_risk"
    attack = "singling_out"
    sentence = ("Singling-out risk (Giomi et al. 2023; shadow release, $n attacks) must have "
                "its upper 95 % bound at most $threshold.")
