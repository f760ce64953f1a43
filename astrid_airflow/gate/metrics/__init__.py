"""The gate's Great Expectations metrics (``astrid.*``), one module per metric.

Each module's ``define(kit)`` defines its ``TableMetricProvider`` (GX registers a
metric when its class is defined); :mod:`astrid_airflow.gate._registry` lists them.
"""
