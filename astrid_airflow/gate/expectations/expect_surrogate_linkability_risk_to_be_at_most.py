"""GX expectation ``expect_surrogate_linkability_risk_to_be_at_most``."""

from __future__ import annotations

from ._families import AttackAtMost


class ExpectSurrogateLinkabilityRiskToBeAtMost(AttackAtMost):
    """Privacy: the linkability risk of Giomi et al. (the attacker's two column sets
    cut the largest group, or split at random), on a shadow release, has its upper
    95 % bound at most ``threshold``."""

    parameter = "max_linkability_risk"
    attack = "linkability"
    sentence = ("Linkability risk (Giomi et al. 2023; shadow release, $n attacks) must have "
                "its upper 95 % bound at most $threshold.")
