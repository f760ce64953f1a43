"""astrid-airflow: ASTRID attribute groupings and GoldenEye surrogate tables.

The public API is re-exported here lazily (PEP 562), so ``import astrid_airflow`` is
cheap and never imports Airflow, scikit-learn or Great Expectations until a name
that needs them is used.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("astrid-airflow")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

# public name -> private module that owns it
_EXPORTS: dict[str, str] = {
    # errors
    "AstridError": "_errors",
    "DataError": "_errors",
    "ParameterError": "_errors",
    "GroupingError": "_errors",
    "ArtefactError": "_errors",
    "SchemaMismatchError": "_errors",
    "StoreError": "_errors",
    "GateError": "_errors",
    "RecipeError": "_errors",
    "ReleaseError": "_errors",
    # the release protocol (decisions only, no I/O)
    "ReleaseDecision": "_release",
    "check_receipt": "_release",
    "check_release_id": "_release",
    "decide_release": "_release",
    "release_time": "_release",
    "BudgetError": "_errors",
    # tables and groupings
    "read_table": "_io",
    "check_table": "_io",
    "drop_missing_and_constant": "_io",
    "Grouping": "_grouping",
    "letters": "_grouping",
    "goldeneye_indices": "_permutation",
    "goldeneye_permute": "_permutation",
    # engine
    "make_classifier": "_classifiers",
    "test_grouping": "_test",
    "astrid": "_search",
    "AdaptiveConfig": "_adaptive",
    "AstridResult": "_result",
    "GroupingTestResult": "_result",
    "make_synthetic": "_synthetic",
    "make_planted": "_synthetic",
    # artefacts, surrogates, metrics
    "GroupingArtefact": "_artefact",
    "fingerprint_table": "_artefact",
    "ArtefactStore": "_store",
    "load_artefact": "_store",
    "parse_artefact_ref": "_store",
    "split_artefact_ref": "_store",
    "make_surrogate": "_surrogate",
    "shuffle_file": "_surrogate",
    "ProtectsNothingWarning": "_surrogate",
    "surrogate_metrics": "_metrics",
    "SurrogateMetrics": "_metrics",
    "intact_row_proportion": "_metrics",
    "expected_intact_row_proportion": "_metrics",
    "largest_group_unique_share": "_metrics",
    "surrogate_utility": "_metrics",
    # the release pipeline's steps (CLI and operators call these)
    "stage_surrogate": "_pipeline",
    "StagedSurrogate": "_pipeline",
    "learn_or_reuse": "_pipeline",
    "Learned": "_pipeline",
    "save_learned": "_pipeline",
    "gate_receipt": "_pipeline",
    "release_plan": "_pipeline",
    "ReleasePlan": "_pipeline",
    # disclosure risk
    "GroupDisclosure": "_disclosure",
    "PairLinkage": "_disclosure",
    "DisclosureRisk": "_disclosure",
    "group_disclosure": "_disclosure",
    "cross_group_linkage": "_disclosure",
    "disclosure_risk": "_disclosure",
    "worst_group": "_disclosure",
    "worst_pair": "_disclosure",
    "PAIR_SAMPLE_ROWS": "_disclosure",
    # attack-based privacy risk (Giomi et al. 2023)
    "measure_risk": "_risk",
    "RiskReport": "_risk",
    "AttackRisk": "_attacks",
    "singling_out_risk": "_attacks",
    "linkability_risk": "_attacks",
    "inference_risk": "_attacks",
    # release remedies (generalisation, suppression, MDAV) and the privacy-aware choice
    "ReleaseRecipe": "_remedies",
    "apply_recipe": "_remedies",
    "fit_recipe": "_remedies",
    "choose_release": "_choice",
    "linkability_split": "_attacks",
    # scale-out
    "dask_parallel": "_dask",
    "astrid_on_dask": "_dask",
    "submit_astrid": "_dask",
    "collect_astrid": "_dask",
    "detached_status": "_dask",
    "test_grouping_on_dask": "_dask",
    "spark_surrogate": "_spark",
    "spark_shuffle_parquet": "_spark",
    "spark_intact_row_proportion": "_spark",
    # databases
    "read_sql": "_sql",
    "publish_table": "_sql",
    "sql_to_parquet": "_sql",
    # data fusion
    "fuse_parts": "_fusion",
    "collection_plan": "_fusion",
    "FusionResult": "_fusion",
    "CollectionPlan": "_fusion",
    # reports
    "write_report": "_report",
    "report_dir_for": "_report",
    # gate
    "GatePolicy": "_gate",
    "raw_release_demo_policy": "_presets",
    "GateResult": "_gate",
    "build_suite": "_gate",
    "gate_extra_files": "_gate",
    "validate_surrogate": "_gate",
    "render_validation_html": "_datadocs",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'astrid_airflow' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
