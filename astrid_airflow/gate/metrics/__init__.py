"""The gate's Great Expectations metrics (``astrid.*``), one module per metric.

Each module declares ``METRIC = TableMetric(name, value keys, measure)``
(``metrics/_base.py``), whose ``define(kit)`` builds the ``TableMetricProvider`` (GX
registers a metric when its class is defined); :mod:`astrid_airflow.gate._registry` lists
them.
"""
