"""The pipeline: the stages that orchestrate every layer below, one library function each.

Learning (the search, the recipe's fitting and the privacy-aware choice of a release),
staging a surrogate, and the receipt and plan of a publication. The CLI commands and the
Airflow operators are thin adapters over these functions. ``publish_release`` is the
publish stage: read (or write) the gate receipt, decide, archive, promote, with the
release protocol's guarantees under concurrent publishers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._choice import choose_release
    from ._choice_budget import release_choice_fits
    from ._choice_checks import batch_rate_upper
    from ._fit_partition import CUT_RULES, fit_partition
    from ._fit_recipe import BATCH_FACTOR, column_class_risk, fit_recipe, group_risk
    from ._integrity import CanonicalRelease, trusted_canonical
    from ._pipeline import (
        Learned,
        ReleasePlan,
        StagedSurrogate,
        choice_reserve,
        gate_receipt,
        learn_or_reuse,
        receipt_path,
        release_plan,
        save_learned,
        sealed_receipt_of,
        stage_surrogate,
    )
    from ._publish import Published, PublishRequest, publish_release, read_receipt
    from ._risk_stage import RiskRequest, measure_release_risk

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
