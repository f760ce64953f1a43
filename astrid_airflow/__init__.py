"""astrid-airflow: ASTRID attribute groupings and GoldenEye surrogate tables.

The public API (the ``TYPE_CHECKING`` imports below) is re-exported here lazily
(PEP 562, :mod:`astrid_airflow._lazy`), so ``import astrid_airflow`` is cheap and never
imports Airflow, scikit-learn or Great Expectations until a name that needs them is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._errors import (
        ArtefactError,
        AstridError,
        BudgetError,
        DataError,
        GateError,
        GroupingError,
        IntactBudgetError,
        ParameterError,
        RecipeError,
        ReleaseError,
        SchemaMismatchError,
        StoreError,
        SuppressionBudgetError,
    )
    from ._version import __version__
    from .engine import (
        AdaptiveConfig,
        AstridResult,
        Grouping,
        GroupingTestResult,
        SearchSettings,
        astrid,
        goldeneye_indices,
        goldeneye_permute,
        letters,
        make_classifier,
        make_mixed_table,
        make_planted,
        make_synthetic,
        test_grouping,
    )
    from .gate import (
        GatePolicy,
        GateResult,
        build_suite,
        gate_extra_files,
        raw_release_demo_policy,
        render_validation_html,
        validate_surrogate,
    )
    from .io import (
        check_table,
        drop_missing_and_constant,
        publish_table,
        read_sql,
        read_table,
        sql_to_parquet,
    )
    from .pipeline import (
        Learned,
        LearnRequest,
        ReleasePlan,
        Staged,
        StagedSurrogate,
        StageRequest,
        choice_reserve,
        choose_release,
        fit_recipe,
        gate_receipt,
        learn_or_reuse,
        learn_release,
        release_plan,
        save_learned,
        stage_release,
        stage_surrogate,
    )
    from .privacy import (
        PAIR_SAMPLE_ROWS,
        AttackRisk,
        DisclosureRisk,
        GroupDisclosure,
        PairLinkage,
        RiskReport,
        cross_group_linkage,
        disclosure_risk,
        group_disclosure,
        inference_risk,
        linkability_risk,
        linkability_split,
        measure_risk,
        singling_out_risk,
        worst_group,
        worst_pair,
    )
    from .release import (
        ArtefactStore,
        GroupingArtefact,
        ProtectsNothingWarning,
        ReleaseDecision,
        ReleaseRecipe,
        SurrogateMetrics,
        apply_recipe,
        check_receipt,
        check_release_id,
        decide_release,
        expected_intact_row_proportion,
        fingerprint_table,
        intact_row_proportion,
        largest_group_unique_share,
        load_artefact,
        make_surrogate,
        parse_artefact_ref,
        release_time,
        shuffle_file,
        split_artefact_ref,
        surrogate_metrics,
        surrogate_utility,
    )
    from .report import report_dir_for, write_report
    from .scale import (
        CollectionPlan,
        FusionResult,
        astrid_on_dask,
        collect_astrid,
        collection_plan,
        dask_parallel,
        detached_status,
        fuse_parts,
        spark_intact_row_proportion,
        spark_shuffle_parquet,
        spark_surrogate,
        submit_astrid,
        test_grouping_on_dask,
    )

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
