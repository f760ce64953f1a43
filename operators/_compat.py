"""Airflow names that moved between the supported minors (3.1 up to the locked 3.3).

Airflow after 3.1 moved the task exceptions into ``airflow.sdk.exceptions`` and the config
object into ``airflow.sdk``; 3.1 has them in ``airflow.exceptions`` and
``airflow.configuration`` (where 3.3 still re-exports them, deprecated). Every operator
module imports these names from here, so the provider runs on each minor from 3.1 on
without a deprecation warning on the newer ones.
"""

from __future__ import annotations

try:  # Airflow after 3.1
    from airflow.sdk.exceptions import (
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSkipException,
    )
except ImportError:  # Airflow 3.1
    from airflow.exceptions import (  # type: ignore[no-redef]
        AirflowException,
        AirflowFailException,
        AirflowNotFoundException,
        AirflowSkipException,
    )

__all__ = [
    "AirflowException",
    "AirflowFailException",
    "AirflowNotFoundException",
    "AirflowSkipException",
    "airflow_conf",
]


def airflow_conf():
    """Airflow's configuration object (``airflow.sdk.conf`` after 3.1)."""
    try:
        from airflow.sdk import conf
    except ImportError:  # Airflow 3.1
        from airflow.configuration import conf
    return conf
