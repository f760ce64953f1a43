"""Disclosure risk of a surrogate: per-group disclosure, cross-group linkage and
the attack-based risks (singling out, linkability, inference).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._attacks import (
        AttackRisk,
        class_from_column_risks,
        inference_risk,
        linkability_risk,
        linkability_split,
        singling_out_risk,
    )
    from ._control import check_control, control_overlap
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

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
