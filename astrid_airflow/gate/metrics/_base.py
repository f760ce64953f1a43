"""The one shape of the gate's GX metrics.

Every metric of the gate is a table-level ``TableMetricProvider`` computed by the pandas
engine on the surrogate batch. A metric module declares a :class:`TableMetric`: its GX
name, its value keys and a plain function of the surrogate table and those values;
:meth:`TableMetric.define` builds the provider class around it (GX registers a metric
when its class is defined).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from astrid_airflow.gate._checks import bound_reference


@dataclass(frozen=True)
class TableMetric:
    """A gate metric: ``measure(table, **values)`` under the GX name ``name``.

    Attributes
    ----------
    name : str
        The GX metric name (``astrid.*``) that expectations list as a dependency.
    value_keys : tuple of str
        The expectation kwargs the metric takes, passed to ``measure`` by name.
    measure : callable
        ``measure(table, **values)``: ``table`` is the surrogate batch (a DataFrame);
        ``values`` has every value key, ``reference`` as the bound original
        (:func:`~astrid_airflow.gate._checks.bound_reference`) rather than its handle.
    """

    name: str
    value_keys: tuple[str, ...]
    measure: Callable[..., Any]

    def define(self, kit: SimpleNamespace) -> type:
        """Define (and so register with GX) the provider class of this metric."""
        metric = self

        @kit.metric_value(engine=kit.PandasExecutionEngine)
        def _pandas(cls, execution_engine, metric_domain_kwargs, metric_value_kwargs,
                    metrics, runtime_configuration):
            # GX passes every value key (None when the expectation lacks it)
            values = {key: metric_value_kwargs.get(key) for key in metric.value_keys}
            if values.get("reference") is None:  # a check of the surrogate alone
                return metric.measure(kit.table_of(execution_engine, metric_domain_kwargs),
                                      **values)
            values["reference"] = bound_reference(values["reference"])
            with values["reference"].step(metric.name):  # the gate's progress lines
                return metric.measure(kit.table_of(execution_engine, metric_domain_kwargs),
                                      **values)

        # named after the metric (astrid.class_changes -> ClassChanges) for GX's messages
        class_name = "".join(word.title() for word in self.name.split(".")[-1].split("_"))
        return type(class_name, (kit.TableMetricProvider,),
                    {"metric_name": self.name, "value_keys": self.value_keys,
                     "_pandas": _pandas, "__module__": self.measure.__module__})
