"""GX metric ``astrid.cross_group_linkage``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference, linkage_values


def define(kit: SimpleNamespace) -> type:
    class CrossGroupLinkage(kit.TableMetricProvider):
        metric_name = "astrid.cross_group_linkage"
        value_keys = ("reference", "grouping")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = bound_reference(metric_value_kwargs["reference"])
            return linkage_values(ref.original,
                                  kit.table_of(execution_engine, metric_domain_kwargs),
                                  ref.target, metric_value_kwargs["grouping"])

    return CrossGroupLinkage
