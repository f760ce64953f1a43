"""Disclosure risk of a surrogate: per-group disclosure, cross-group linkage and
the attack-based risks (singling out, linkability, inference).

Public names, exported lazily (:mod:`astrid_airflow._lazy`); the modules that own them
are private to this package (``tests/test_public_imports.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# public name -> the module of this package that owns it
_EXPORTS: dict[str, str] = {
    "AttackRisk": "._attacks",
    "inference_risk": "._attacks",
    "linkability_risk": "._attacks",
    "linkability_split": "._attacks",
    "singling_out_risk": "._attacks",
    "cross_group_linkage": "._disclosure",
    "disclosure_risk": "._disclosure",
    "DisclosureRisk": "._disclosure",
    "group_disclosure": "._disclosure",
    "GroupDisclosure": "._disclosure",
    "LINKAGE_Z": "._disclosure",
    "PAIR_SAMPLE_ROWS": "._disclosure",
    "PairLinkage": "._disclosure",
    "worst_group": "._disclosure",
    "worst_pair": "._disclosure",
    "measure_risk": "._risk",
    "RiskReport": "._risk",
    "shadow_attacks": "._risk",
}

if TYPE_CHECKING:
    from ._attacks import (
        AttackRisk,
        inference_risk,
        linkability_risk,
        linkability_split,
        singling_out_risk,
    )
    from ._disclosure import (
        LINKAGE_Z,
        PAIR_SAMPLE_ROWS,
        DisclosureRisk,
        GroupDisclosure,
        PairLinkage,
        cross_group_linkage,
        disclosure_risk,
        group_disclosure,
        worst_group,
        worst_pair,
    )
    from ._risk import RiskReport, measure_risk, shadow_attacks

__all__ = [
    "AttackRisk",
    "DisclosureRisk",
    "GroupDisclosure",
    "LINKAGE_Z",
    "PAIR_SAMPLE_ROWS",
    "PairLinkage",
    "RiskReport",
    "cross_group_linkage",
    "disclosure_risk",
    "group_disclosure",
    "inference_risk",
    "linkability_risk",
    "linkability_split",
    "measure_risk",
    "shadow_attacks",
    "singling_out_risk",
    "worst_group",
    "worst_pair",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
