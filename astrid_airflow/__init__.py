"""astrid-airflow: ASTRID attribute groupings and GoldenEye surrogate tables.

The public API is re-exported here lazily (PEP 562), so ``import astrid_airflow`` is
cheap and never imports Airflow, scikit-learn or Great Expectations until a name
that needs them is used.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from astrid_airflow._lazy import lazy_exports

try:
    __version__ = version("astrid-airflow")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

# public name -> the subpackage (or top-level module) that exports it
_EXPORTS: dict[str, str] = {
    # errors
    "AstridError": "._errors",
    "DataError": "._errors",
    "ParameterError": "._errors",
    "GroupingError": "._errors",
    "ArtefactError": "._errors",
    "SchemaMismatchError": "._errors",
    "StoreError": "._errors",
    "GateError": "._errors",
    "RecipeError": "._errors",
    "ReleaseError": "._errors",
    # the release protocol (decisions only, no I/O)
    "ReleaseDecision": ".release",
    "check_receipt": ".release",
    "check_release_id": ".release",
    "decide_release": ".release",
    "release_time": ".release",
    "BudgetError": "._errors",
    # tables and groupings
    "read_table": ".io",
    "check_table": ".io",
    "drop_missing_and_constant": ".io",
    "Grouping": ".engine",
    "letters": ".engine",
    "goldeneye_indices": ".engine",
    "goldeneye_permute": ".engine",
    # engine
    "make_classifier": ".engine",
    "test_grouping": ".engine",
    "astrid": ".engine",
    "AdaptiveConfig": ".engine",
    "AstridResult": ".engine",
    "GroupingTestResult": ".engine",
    "make_synthetic": ".engine",
    "make_planted": ".engine",
    # artefacts, surrogates, metrics
    "GroupingArtefact": ".release",
    "fingerprint_table": ".release",
    "ArtefactStore": ".release",
    "load_artefact": ".release",
    "parse_artefact_ref": ".release",
    "split_artefact_ref": ".release",
    "make_surrogate": ".release",
    "shuffle_file": ".release",
    "ProtectsNothingWarning": ".release",
    "surrogate_metrics": ".release",
    "SurrogateMetrics": ".release",
    "intact_row_proportion": ".release",
    "expected_intact_row_proportion": ".release",
    "largest_group_unique_share": ".release",
    "surrogate_utility": ".release",
    # the release pipeline's steps (CLI and operators call these)
    "stage_surrogate": ".release",
    "StagedSurrogate": ".release",
    "learn_or_reuse": ".release",
    "Learned": ".release",
    "save_learned": ".release",
    "gate_receipt": ".release",
    "release_plan": ".release",
    "ReleasePlan": ".release",
    # disclosure risk
    "GroupDisclosure": ".privacy",
    "PairLinkage": ".privacy",
    "DisclosureRisk": ".privacy",
    "group_disclosure": ".privacy",
    "cross_group_linkage": ".privacy",
    "disclosure_risk": ".privacy",
    "worst_group": ".privacy",
    "worst_pair": ".privacy",
    "PAIR_SAMPLE_ROWS": ".privacy",
    # attack-based privacy risk (Giomi et al. 2023)
    "measure_risk": ".privacy",
    "RiskReport": ".privacy",
    "AttackRisk": ".privacy",
    "singling_out_risk": ".privacy",
    "linkability_risk": ".privacy",
    "inference_risk": ".privacy",
    # release remedies (generalisation, suppression, MDAV) and the privacy-aware choice
    "ReleaseRecipe": ".release",
    "apply_recipe": ".release",
    "fit_recipe": ".release",
    "choose_release": ".release",
    "linkability_split": ".privacy",
    # scale-out
    "dask_parallel": ".scale",
    "astrid_on_dask": ".scale",
    "submit_astrid": ".scale",
    "collect_astrid": ".scale",
    "detached_status": ".scale",
    "test_grouping_on_dask": ".scale",
    "spark_surrogate": ".scale",
    "spark_shuffle_parquet": ".scale",
    "spark_intact_row_proportion": ".scale",
    # databases
    "read_sql": ".io",
    "publish_table": ".io",
    "sql_to_parquet": ".io",
    # data fusion
    "fuse_parts": ".scale",
    "collection_plan": ".scale",
    "FusionResult": ".scale",
    "CollectionPlan": ".scale",
    # reports
    "write_report": ".report",
    "report_dir_for": ".report",
    # gate
    "GatePolicy": ".gate",
    "raw_release_demo_policy": ".gate",
    "GateResult": ".gate",
    "build_suite": ".gate",
    "gate_extra_files": ".gate",
    "validate_surrogate": ".gate",
    "render_validation_html": ".gate",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
