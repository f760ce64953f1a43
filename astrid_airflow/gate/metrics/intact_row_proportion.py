"""GX metric ``astrid.intact_row_proportion``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import bound_reference


def define(kit: SimpleNamespace) -> type:
    class IntactRowProportion(kit.TableMetricProvider):
        metric_name = "astrid.intact_row_proportion"
        value_keys = ("reference",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            from astrid_airflow.release import intact_row_proportion

            ref = bound_reference(metric_value_kwargs["reference"])
            surrogate = kit.table_of(execution_engine, metric_domain_kwargs)
            # On the columns both tables have: a dropped column (an integrity failure
            # of its own) must not hide rows that are intact on the others.
            columns = [c for c in ref.original.columns if c in surrogate.columns]
            if not columns:
                return 0.0
            return float(intact_row_proportion(ref.original, surrogate, columns=columns))

    return IntactRowProportion
