"""GX metric ``astrid.group_disclosure``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference, group_disclosure_values


def define(kit: SimpleNamespace) -> type:
    class GroupDisclosureMetric(kit.TableMetricProvider):
        metric_name = "astrid.group_disclosure"
        value_keys = ("reference", "grouping", "k")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = bound_reference(metric_value_kwargs["reference"])
            return group_disclosure_values(
                kit.table_of(execution_engine, metric_domain_kwargs), ref.target,
                metric_value_kwargs["grouping"], int(metric_value_kwargs["k"]))

    return GroupDisclosureMetric
