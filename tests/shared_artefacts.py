"""Learned artefacts built once per test run and shared by the modules that only use them.

Learning a grouping and choosing its release takes minutes; most tests that need a
learned artefact test what comes after (the shuffle, the gate, publish, the links, the
lineage). :func:`built_once` builds a directory once per ``pytest`` run, also under
pytest-xdist (each worker is its own session: the first worker to ask builds it under a
file lock in the run's shared temporary root, the others wait and reuse it), always by
the real code, so a shared artefact cannot drift from what the code writes.

:func:`diabetes_store` is the store the publishing DAG's ``learn_if_changed`` task writes
(``dags/astrid_publish.py``: the bundled diabetes table, svm, R' = 20, R = 50, learn
seed 0, the default policy, the release chosen), made by that operator. Copied into a
demo root as ``artefacts/``, the DAG's learn task finds the table unchanged and keeps
that version: the run shuffles, gates and publishes the chosen release without
choosing it again. ``tests/dags/test_dags.py`` runs the DAG's real learn (and choice).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import types
from collections.abc import Callable
from pathlib import Path

#: The signing key of every module that runs the DAGs with a key: stores are signed with
#: the key in force when saved, so a store shared between modules is built under it.
DAG_SIGNING_KEY = "dags-test-key-0123456789abcdef"


def shared_root(tmp_path_factory) -> Path:
    """The directory every process of this test run sees (the xdist recipe)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the workers' basetemps are siblings under the run's root
    root = base / "astrid-shared"
    root.mkdir(exist_ok=True)
    return root


def built_once(tmp_path_factory, key: str, build: Callable[[Path], None]) -> Path:
    """``build(directory)`` once per test run for ``key``; its directory afterwards.

    Readers must not change it (copy it first: :func:`copy_into`). A failed build
    leaves nothing behind, so the next process to ask tries again (and fails the same
    way, with its own traceback).
    """
    root = shared_root(tmp_path_factory)
    done = root / key
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_dir():
            work = root / f"{key}.building"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir()
            build(work)
            work.rename(done)
    return done


def copy_into(built: Path, dest: Path) -> Path:
    """A private copy of a built directory at ``dest`` (created; must not exist)."""
    shutil.copytree(built, dest)
    return dest


def _key_tag(signing_key: str | None) -> str:
    return "default-key" if not signing_key else hashlib.sha256(
        signing_key.encode()).hexdigest()[:12]


def diabetes_store(tmp_path_factory, signing_key: str | None = DAG_SIGNING_KEY) -> Path:
    """The store (``<store>/diabetes/v0001``) the publishing DAG's learn task writes,
    built once per run and per signing key; copy it before use."""

    def build(work: Path) -> None:
        import pytest
        from astrid_airflow.operators.demo import DEMO_ATTACKER_MODEL, bundled_table
        from astrid_airflow.operators.learn import AstridLearnOperator

        with pytest.MonkeyPatch.context() as mp:
            if signing_key:
                mp.setenv("ASTRID_SIGNING_KEY", signing_key)
            else:
                mp.delenv("ASTRID_SIGNING_KEY", raising=False)
            # the task of dags/astrid_publish.py with its default params
            op = AstridLearnOperator(task_id="learn_if_changed",
                                     reference=bundled_table("diabetes.csv"),
                                     store=str(work), name="diabetes", classifier="svm",
                                     n_search=20, n_test=50, random_state=0, force=False,
                                     gate_policy=dict(DEMO_ATTACKER_MODEL))
            ti = types.SimpleNamespace(dag_id="astrid_publish_diabetes", run_id="shared",
                                       task_id="learn_if_changed", map_index=-1)
            out = op.execute({"ti": ti, "run_id": "shared"})
        assert out["learned"] and out["version"] == "v0001", out
        assert out["release"]["status"] == "chosen", out["release"]

    return built_once(tmp_path_factory, f"diabetes-store-{_key_tag(signing_key)}", build)
