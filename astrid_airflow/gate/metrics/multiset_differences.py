"""GX metric ``astrid.multiset_differences``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference, multiset_differences


def define(kit: SimpleNamespace) -> type:
    class MultisetDifferences(kit.TableMetricProvider):
        metric_name = "astrid.multiset_differences"
        value_keys = ("reference", "groups")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = bound_reference(metric_value_kwargs["reference"])
            groups = metric_value_kwargs.get("groups")
            return multiset_differences(
                ref.original, kit.table_of(execution_engine, metric_domain_kwargs), ref.target,
                None if groups is None else [list(g) for g in groups])

    return MultisetDifferences
