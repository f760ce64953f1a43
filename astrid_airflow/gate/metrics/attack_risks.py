"""GX metric ``astrid.attack_risks``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference


def define(kit: SimpleNamespace) -> type:
    class AttackRisks(kit.TableMetricProvider):
        metric_name = "astrid.attack_risks"
        value_keys = ("reference", "grouping", "n")

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            ref = bound_reference(metric_value_kwargs["reference"])
            return ref.attack_value([list(g) for g in metric_value_kwargs["grouping"]],
                                    int(metric_value_kwargs["n"]))

    return AttackRisks
