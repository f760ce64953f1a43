"""The release gate's checks as Great Expectations 1.x custom expectations.

Every check of the gate is a table-level ``BatchExpectation`` with its own
``TableMetricProvider`` metric (named ``astrid.*``), evaluated on the surrogate batch:

==============================================================  =========  ==============
expectation                                                     category   metric
==============================================================  =========  ==============
``expect_surrogate_intact_row_proportion_to_be_at_most``        privacy    P_anon
``expect_surrogate_largest_group_unique_share_to_be_at_most``   privacy    linkage share
``expect_surrogate_group_share_below_k_to_be_at_most``           privacy    worst group
``expect_surrogate_group_class_disclosure_share_to_be_at_most``  privacy    worst group
``expect_surrogate_cross_group_linkage_to_be_at_most_expected``  privacy    worst pair
``expect_surrogate_singling_out_risk_to_be_at_most``             privacy    upper 95 % bound
``expect_surrogate_linkability_risk_to_be_at_most``              privacy    upper 95 % bound
``expect_surrogate_inference_risk_to_be_at_most``                privacy    upper 95 % bound
``expect_surrogate_synthetic_tuples_to_be_no_closer_than_real``  privacy    DCR excess
``expect_surrogate_accuracy_drop_to_be_at_most``                utility    acc_o - acc_s
``expect_surrogate_schema_to_match_original``                   integrity  differences
``expect_surrogate_row_count_to_match_original``                integrity  row count
``expect_surrogate_class_column_to_be_unchanged``               integrity  changed labels
``expect_surrogate_column_values_to_match_original_per_class``  integrity  (class, column)
``expect_surrogate_groups_to_match_original_per_class``         integrity  (class, group)
==============================================================  =========  ==============

One module per expectation, named after its GX type; each defines a plain class in one
of the families of ``_families.py`` (its sentence, policy parameter, category, metric),
whose ``define(kit, cls)`` builds the GX ``BatchExpectation``.
:mod:`astrid_airflow.gate._registry` lists them in suite order and collects ``EXPECTATIONS``
(type -> category, metric, parameter) from the classes; :mod:`astrid_airflow.gate._checks`
holds what they compute and judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._families import GateExpectation, define

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
