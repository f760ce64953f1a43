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
import threading
import time

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


# ------------------------------------------------- the CI PostgreSQL server, watched
# CI once saw the server of scripts/ci_postgres.sh vanish mid-run (cause unknown; the
# tests after it failed). A thread notes which test was running when its process went
# away, and the session's summary says so: the next occurrence names its culprit.
_PG_STATE = pathlib.Path(os.environ.get("ASTRID_PG_STATE",
                                        f"/tmp/astrid-ci-postgres-{os.getuid()}"))
_RUNNING = {"test": "(collection)"}
_PG_DEATHS: list[str] = []


def _watch_postgres(pid: int) -> None:
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _PG_DEATHS.append(f"the PostgreSQL server (pid {pid}) was found gone at "
                              f"{time.strftime('%H:%M:%S')}, while {_RUNNING['test']} ran "
                              "(or just after the test before it)")
            return
        except PermissionError:  # alive, owned by another user
            pass
        time.sleep(1)


def pytest_sessionstart(session) -> None:
    try:
        pid = int((_PG_STATE / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return  # no server started by the script: nothing to watch
    threading.Thread(target=_watch_postgres, args=(pid,), daemon=True,
                     name="postgres-watch").start()


def pytest_runtest_logstart(nodeid, location) -> None:
    _RUNNING["test"] = nodeid


def pytest_terminal_summary(terminalreporter) -> None:
    for line in _PG_DEATHS:
        terminalreporter.write_line(line, red=True)
