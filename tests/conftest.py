"""Test-session setup shared by every test module.

Airflow reads its configuration at import time, so its home, DAG folder and example
loading are set here, before any test imports ``airflow``: the tests never touch
``~/airflow``.
"""

from __future__ import annotations

import atexit
import os
import pathlib
import shutil
import tempfile

import pytest

_REPO = pathlib.Path(__file__).resolve().parents[1]
_AIRFLOW_HOME = pathlib.Path(tempfile.mkdtemp(prefix="astrid_airflow_home_"))
atexit.register(shutil.rmtree, _AIRFLOW_HOME, ignore_errors=True)  # SQLite DB, logs
os.environ["AIRFLOW_HOME"] = str(_AIRFLOW_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__CORE__DAGS_FOLDER"] = str(_REPO / "dags")
os.environ.setdefault("AIRFLOW__CORE__UNIT_TEST_MODE", "False")

REPO = _REPO
SHARED = _REPO.parent / "shared"
UCI = SHARED / "datasets" / "uci"


@pytest.fixture(scope="module")
def airflow_db() -> pathlib.Path:
    """A freshly reset SQLite metadata DB in the session's temporary AIRFLOW_HOME.

    Needed only by tests that run DAGs (``dag.test()``); costs about a second.
    Reset per module: each module parses the DAGs under its own demo root, and
    Assets of an earlier module's root (same names, other URIs) would otherwise
    stay active and make this module's Asset events 'inactive'.
    Returns the AIRFLOW_HOME.
    """
    from airflow.utils import db

    db.resetdb()
    return _AIRFLOW_HOME
