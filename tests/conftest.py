"""Test-session setup shared by every test module.

Airflow reads its configuration at import time, so its home, DAG folder and example
loading are set here, before any test imports ``airflow``: the tests never touch
``~/airflow``.
"""

from __future__ import annotations

import atexit
import logging
import os
import pathlib
import shutil
import sys
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
# Stores are signed by default with a key file outside them (~/.config/...): the tests
# use one of their own, made once here and inherited by pytest-xdist's workers and every
# subprocess, and never touch the user's. A test of the key file's creation points
# ASTRID_KEY_FILE elsewhere itself.
if "ASTRID_KEY_FILE" not in os.environ:
    _KEY_DIR = pathlib.Path(tempfile.mkdtemp(prefix="astrid_test_key_"))
    atexit.register(shutil.rmtree, _KEY_DIR, ignore_errors=True)
    _KEY = _KEY_DIR / "signing.key"
    _KEY.write_text(os.urandom(32).hex() + "\n")
    _KEY.chmod(0o600)
    os.environ["ASTRID_KEY_FILE"] = str(_KEY)

# pytest-xdist's workers run under `python -c`: their __main__ has neither __file__ nor
# __spec__, which PySpark (imported by Great Expectations) takes for a doctest run of its
# own, exiting the process with status 0 when Spark Connect's extras are missing (the
# gate task then "exits" in the middle of a DAG run). A spec named "__main__" ends that,
# and, unlike a made-up __file__, multiprocessing's spawned children (Dask's nannies)
# skip re-importing such a main module, as they do for `python -c`.
_MAIN = sys.modules["__main__"]
if getattr(_MAIN, "__spec__", None) is None and not hasattr(_MAIN, "__file__"):
    import importlib.machinery

    _MAIN.__spec__ = importlib.machinery.ModuleSpec("__main__", None)

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


# ------------------------------------------------- headless Chromium (the renders)
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


@pytest.fixture(scope="session")
def chromium_binary() -> str:
    """Path of headless Chromium; skips without it, fails under CI (``.ci/run`` installs
    it), as the other real components' tests do."""
    if CHROMIUM is None:
        reason = "headless Chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Chromium for the rendering tests: {reason}")
        pytest.skip(reason)
    return CHROMIUM


# ------------------------------------------------- the CI S3-compatible server (moto)
_S3_STATE = pathlib.Path(os.environ.get("ASTRID_S3_STATE", f"/tmp/astrid-ci-s3-{os.getuid()}"))
S3_BUCKET = "astrid-test"


def _s3_endpoint() -> tuple[str | None, str | None]:
    """``(endpoint, why not)`` of the server of ``scripts/ci_s3.sh start``."""
    endpoint = os.environ.get("ASTRID_TEST_S3_ENDPOINT", "").strip()
    if not endpoint and (_S3_STATE / "endpoint").is_file():
        endpoint = (_S3_STATE / "endpoint").read_text().strip()
    if not endpoint:
        return None, ("no S3-compatible server: run `source scripts/ci_s3.sh start` (sets "
                      "ASTRID_TEST_S3_ENDPOINT)")
    try:
        import s3fs

        s3fs.S3FileSystem(**s3_options(endpoint)).ls(S3_BUCKET, refresh=True)
    except Exception as exc:  # not installed, not reachable, no bucket
        return None, f"S3 server at {endpoint} not usable: {type(exc).__name__}: {exc}"
    return endpoint, None


def s3_options(endpoint: str) -> dict:
    """s3fs storage options for the loopback server (moto accepts any credentials)."""
    return {"key": "astrid", "secret": "astrid", "use_listings_cache": False,
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}


@pytest.fixture
def s3(request, monkeypatch):
    """``(s3fs filesystem, fresh "s3://astrid-test/<test>-<uuid>" prefix)``.

    Skips without a server; fails under CI (``CI`` set), where ``.ci/run`` starts one.
    The default credential chain points at the server too (environment variables), so
    code that opens ``s3://`` URLs with fsspec's defaults reaches it.
    """
    import uuid

    endpoint, reason = _s3_endpoint()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the S3-compatible server: {reason}")
        pytest.skip(reason)
    import fsspec
    import s3fs

    for var, value in (("AWS_ACCESS_KEY_ID", "astrid"), ("AWS_SECRET_ACCESS_KEY", "astrid"),
                       ("AWS_DEFAULT_REGION", "us-east-1"), ("AWS_ENDPOINT_URL", endpoint),
                       ("AWS_ENDPOINT_URL_S3", endpoint)):
        monkeypatch.setenv(var, value)
    monkeypatch.setitem(fsspec.config.conf, "s3", s3_options(endpoint))
    s3fs.S3FileSystem.clear_instance_cache()
    fs = s3fs.S3FileSystem(**s3_options(endpoint))
    name = request.node.name.replace("[", "-").replace("]", "")[:40]
    yield fs, f"s3://{S3_BUCKET}/{name}-{uuid.uuid4().hex[:8]}"
    s3fs.S3FileSystem.clear_instance_cache()


# ------------------------------------------------- the longest modules first (xdist)
# `make test` hands whole modules to two workers (--dist loadfile) in collection order:
# the modules that run the publishing DAG end to end (each learns and chooses a release,
# about 4-5 minutes on a loaded CI machine) and the longest statistical ones go first,
# so that no worker is left with one of them at the end while the other idles.
_LONG_MODULES = ("test_release_scale_cli.py", "test_release_scale_cli_20k.py",
                 "test_dags.py", "test_ui_links_render.py", "test_dag_subprocesses.py",
                 "test_postgres_dag.py", "test_screen_blocks.py", "test_adaptive.py",
                 "test_fusion.py", "test_metrics.py", "test_s3.py", "test_report.py",
                 "test_operators.py")


def pytest_collection_modifyitems(session, config, items) -> None:
    rank = {name: i for i, name in enumerate(_LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: in-module order kept


class _RootLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def root_log():
    """The ``name: message`` lines of a root handler at INFO, as Airflow's task runner
    installs, for the test's duration."""
    handler, root = _RootLines(), logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler.lines
    root.removeHandler(handler)
    root.setLevel(old)
