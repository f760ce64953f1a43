"""The pipeline: the stages that orchestrate every layer below, one library function each.

Learning (the search, the recipe's fitting and the privacy-aware choice of a release),
staging a surrogate with its metrics record, gating it (the verdict, the release report
and the sealed receipt) and publishing it to a file or a table. The CLI commands and the
Airflow operators are thin adapters over these functions, each taking one request:
``learn_release(LearnRequest)`` learns or reuses a version, ``stage_release(StageRequest)``
writes a measured surrogate, ``gate_release(GateRequest)`` judges it, and ``publish_release`` is the
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
    from ._gate_stage import (
        Gated,
        GateRequest,
        gate_receipt,
        gate_release,
        receipt_path,
        sealed_receipt_of,
    )
    from ._integrity import CanonicalRelease, trusted_canonical
    from ._learn import (
        LEARN_FILE,
        Learned,
        LearnRequest,
        choice_reserve,
        learn_or_reuse,
        learn_record,
        learn_release,
        resolve_table_defaults,
        save_learned,
    )
    from ._publication import Published, PublishRequest
    from ._publish import publish_release, read_receipt
    from ._publish_table import SqlTableWriter, TableWriter, table_release
    from ._release_plan import ReleasePlan, release_manifest, release_plan
    from ._risk_stage import RiskRequest, measure_release_risk
    from ._stage import (
        Staged,
        StagedSurrogate,
        StageRequest,
        metrics_path,
        stage_release,
        stage_surrogate,
    )

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
