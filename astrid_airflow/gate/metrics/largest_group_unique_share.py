"""GX metric ``astrid.largest_group_unique_share``."""

from __future__ import annotations

from types import SimpleNamespace

from astrid_airflow.gate._checks import share_value


def define(kit: SimpleNamespace) -> type:
    class LargestGroupUniqueShare(kit.TableMetricProvider):
        metric_name = "astrid.largest_group_unique_share"
        value_keys = ("grouping",)

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            from astrid_airflow.engine import Grouping
            from astrid_airflow.release import largest_group_unique_share

            table = kit.table_of(execution_engine, metric_domain_kwargs)
            # Columns missing from the surrogate are an integrity failure; measure the
            # groups on what is there.
            groups = [[c for c in g if c in table.columns]
                      for g in metric_value_kwargs["grouping"]]
            groups = [g for g in groups if g]
            if not groups or len(table) == 0:
                return 0.0
            return share_value(largest_group_unique_share(table, Grouping(groups)))

    return LargestGroupUniqueShare
