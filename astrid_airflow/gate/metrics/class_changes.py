"""GX metric ``astrid.class_changes``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference, class_changes


def define(kit: SimpleNamespace) -> type:
    class ClassChanges(kit.TableMetricProvider):
        metric_name = "astrid.class_changes"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = bound_reference(metric_value_kwargs["reference"])
            return class_changes(ref.original, kit.table_of(execution_engine,
                                                        metric_domain_kwargs), ref.target)

    return ClassChanges
