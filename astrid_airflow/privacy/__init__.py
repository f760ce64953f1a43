"""Disclosure risk of a surrogate: per-group disclosure, cross-group linkage and
the attack-based risks (singling out, linkability, inference).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._attacks import AttackRisk
    from ._class_from_column import class_from_column_risks
    from ._closeness import ClosenessEvaluator
    from ._control import check_control, control_overlap
    from ._disclosure import cross_group_linkage, disclosure_risk, group_disclosure
    from ._disclosure_measure import PAIR_SAMPLE_ROWS
    from ._disclosure_results import (
        LINKAGE_Z,
        DisclosureRisk,
        GroupDisclosure,
        PairLinkage,
        worst_group,
        worst_pair,
    )
    from ._inference import inference_risk
    from ._linkability import linkability_risk, linkability_split
    from ._risk import SHADOW_MAX_ROWS, RiskReport, measure_risk, shadow_attacks
    from ._singling_out import singling_out_risk

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
