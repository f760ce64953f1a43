"""The registry: every metric module, then every expectation module in suite order,
the checks they make (``EXPECTATIONS``), and their registration with GX (idempotent,
thread-safe). Importing it does not import GX.
"""

from __future__ import annotations

import threading
from types import ModuleType

from astrid_airflow.gate._kit import gx_kit, import_gx
from astrid_airflow.gate.expectations import (
    GateExpectation,
    define,
    expect_surrogate_accuracy_drop_to_be_at_most,
    expect_surrogate_class_column_to_be_unchanged,
    expect_surrogate_class_from_one_column_risk_to_be_at_most,
    expect_surrogate_column_values_to_match_original_per_class,
    expect_surrogate_cross_group_linkage_to_be_at_most_expected,
    expect_surrogate_group_class_disclosure_share_to_be_at_most,
    expect_surrogate_group_share_below_k_to_be_at_most,
    expect_surrogate_groups_to_match_original_per_class,
    expect_surrogate_inference_risk_to_be_at_most,
    expect_surrogate_intact_row_proportion_to_be_at_most,
    expect_surrogate_largest_group_unique_share_to_be_at_most,
    expect_surrogate_linkability_risk_to_be_at_most,
    expect_surrogate_row_count_to_match_original,
    expect_surrogate_schema_to_match_original,
    expect_surrogate_singling_out_risk_to_be_at_most,
    expect_surrogate_synthetic_tuples_to_be_no_closer_than_real,
)
from astrid_airflow.gate.metrics import (
    attack_risks,
    class_changes,
    class_from_column_risks,
    cross_group_linkage,
    group_disclosure,
    intact_row_proportion,
    largest_group_unique_share,
    multiset_differences,
    reference_row_count,
    schema_differences,
    surrogate_utility,
    synthetic_closeness,
)

METRICS = (
    intact_row_proportion,
    largest_group_unique_share,
    group_disclosure,
    cross_group_linkage,
    attack_risks,
    class_from_column_risks,
    surrogate_utility,
    schema_differences,
    reference_row_count,
    class_changes,
    multiset_differences,
    synthetic_closeness,
)
#: The checks only a release that synthesises groups has (absent from other suites).
SYNTHESIS_CHECKS = ("expect_surrogate_synthetic_tuples_to_be_no_closer_than_real",)
EXPECTATIONS_IN_ORDER = (
    expect_surrogate_intact_row_proportion_to_be_at_most,
    expect_surrogate_largest_group_unique_share_to_be_at_most,
    expect_surrogate_group_share_below_k_to_be_at_most,
    expect_surrogate_group_class_disclosure_share_to_be_at_most,
    expect_surrogate_cross_group_linkage_to_be_at_most_expected,
    expect_surrogate_singling_out_risk_to_be_at_most,
    expect_surrogate_linkability_risk_to_be_at_most,
    expect_surrogate_inference_risk_to_be_at_most,
    expect_surrogate_class_from_one_column_risk_to_be_at_most,
    expect_surrogate_synthetic_tuples_to_be_no_closer_than_real,
    expect_surrogate_accuracy_drop_to_be_at_most,
    expect_surrogate_schema_to_match_original,
    expect_surrogate_row_count_to_match_original,
    expect_surrogate_class_column_to_be_unchanged,
    expect_surrogate_column_values_to_match_original_per_class,
    expect_surrogate_groups_to_match_original_per_class,
)


def expectation_class(module: ModuleType) -> type[GateExpectation]:
    """The expectation an expectation module defines: the class named after the module
    (GX types a class by the snake case of its name; the assertion in ``_define``
    checks that this gives the module's name back)."""
    name = module.__name__.rpartition(".")[2]
    return getattr(module, "".join(part.title() for part in name.split("_")))


_CLASSES = {module.__name__.rpartition(".")[2]: expectation_class(module)
            for module in EXPECTATIONS_IN_ORDER}
#: GX type name -> (category, metric name, policy parameter or None), in the order of
#: the suite and of every report.
EXPECTATIONS: dict[str, tuple[str, str, str | None]] = {
    name: (check.category, check.metric, check.parameter) for name, check in _CLASSES.items()}

_REGISTER_LOCK = threading.Lock()
_REGISTERED: dict[str, type] = {}


def register_expectations(*, verbose: bool = False) -> dict[str, type]:
    """Define and register the gate's metrics and expectations with GX (idempotent).

    Returns the expectation classes by GX type name. GX finds expectation classes by
    that name when a suite is loaded from JSON, so this must run before
    :func:`~astrid_airflow.gate._suite.load_suite`.
    """
    with _REGISTER_LOCK:
        if not _REGISTERED:
            import_gx(verbose=verbose)
            _REGISTERED.update(_define())
        return dict(_REGISTERED)


def _define() -> dict[str, type]:
    """Define every metric and expectation class (GX registers them on definition)."""
    kit = gx_kit()
    for module in METRICS:
        module.METRIC.define(kit)
    classes = [define(kit, check) for check in _CLASSES.values()]
    out = {cls.expectation_type: cls for cls in classes}
    assert list(out) == list(EXPECTATIONS), "GX types the classes unlike their modules"
    return out
