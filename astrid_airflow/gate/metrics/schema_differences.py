"""GX metric ``astrid.schema_differences``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference, schema_differences


def define(kit: SimpleNamespace) -> type:
    class SchemaDifferences(kit.TableMetricProvider):
        metric_name = "astrid.schema_differences"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = bound_reference(metric_value_kwargs["reference"])
            return schema_differences(ref.original,
                                      kit.table_of(execution_engine, metric_domain_kwargs))

    return SchemaDifferences
