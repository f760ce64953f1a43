"""GX metric ``astrid.reference_row_count``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference


def define(kit: SimpleNamespace) -> type:
    class ReferenceRowCount(kit.TableMetricProvider):
        metric_name = "astrid.reference_row_count"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            return len(bound_reference(metric_value_kwargs["reference"]).original)

    return ReferenceRowCount
