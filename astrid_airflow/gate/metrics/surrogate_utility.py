"""GX metric ``astrid.surrogate_utility``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference


def define(kit: SimpleNamespace) -> type:
    class SurrogateUtility(kit.TableMetricProvider):
        metric_name = "astrid.surrogate_utility"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            return dict(bound_reference(metric_value_kwargs["reference"]).utility_value())

    return SurrogateUtility
