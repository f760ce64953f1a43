"""Airflow internals the tests use that moved between the supported minors (3.1 to 3.3)."""

from __future__ import annotations

from typing import Any


def dagbag_class() -> Any:
    """``DagBag``: ``airflow.dag_processing.dagbag`` after 3.1, ``airflow.models`` in 3.1."""
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow 3.1
        from airflow.models.dagbag import DagBag
    return DagBag


def dag_serialization() -> Any:
    """What serializes a DAG as the scheduler stores it (``DagSerialization`` after 3.1)."""
    try:
        from airflow.serialization.serialized_objects import DagSerialization
    except ImportError:  # Airflow 3.1
        from airflow.serialization.serialized_objects import SerializedDAG as DagSerialization
    return DagSerialization
