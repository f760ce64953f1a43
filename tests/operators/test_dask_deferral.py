"""The deferrable building blocks for learn on Dask: a detached run and its trigger.

``submit_astrid`` starts a whole run on a LocalCluster and returns at once; the client
that started it is gone while ``DaskRunTrigger`` polls (as the triggerer would, freeing
the worker slot), and ``collect_astrid`` returns the same result as a run in the worker.
"""

from __future__ import annotations

import asyncio

import pytest

distributed = pytest.importorskip("distributed")

from astrid_airflow.operators.triggers import DaskRunTrigger  # noqa: E402

from astrid_airflow._errors import ParameterError  # noqa: E402
from astrid_airflow.engine._search import astrid  # noqa: E402
from astrid_airflow.engine._synthetic import make_synthetic  # noqa: E402
from astrid_airflow.scale._dask import collect_astrid, submit_astrid  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GiB") as c:
        yield c


async def _first_event(trigger: DaskRunTrigger):
    async for event in trigger.run():
        return event.payload


def test_a_detached_run_is_polled_by_the_trigger_and_collected(cluster):
    table = make_synthetic(60, random_state=1)
    kwargs = dict(target="class", classifier="svm", n_search=6, n_test=12, random_state=3,
                  progress=False)
    key = submit_astrid(table, scheduler=cluster.scheduler_address, **kwargs)
    trigger = DaskRunTrigger(cluster.scheduler_address, key, poll_interval=0.2)
    classpath, args = trigger.serialize()
    assert classpath == "astrid_airflow.operators.triggers.DaskRunTrigger"
    assert DaskRunTrigger(**args).key == key  # what the triggerer rebuilds
    event = asyncio.run(asyncio.wait_for(_first_event(trigger), timeout=150))
    assert event == {"key": key, "status": "finished",
                     "scheduler": cluster.scheduler_address}
    remote = collect_astrid(cluster.scheduler_address, key)
    local = astrid(table, n_jobs=1, **kwargs)
    assert remote.grouping == local.grouping and remote.table == local.table
    with pytest.raises(ParameterError, match="No ASTRID run"):  # released once collected
        collect_astrid(cluster.scheduler_address, key)
    lost = asyncio.run(_first_event(DaskRunTrigger(cluster.scheduler_address, key, 0.1)))
    assert lost["status"] == "lost"


def test_learn_defers_to_the_trigger_and_resumes_with_the_clusters_result(cluster, tmp_path):
    import types

    from airflow.sdk.exceptions import TaskDeferred
    from astrid_airflow.operators.demo import bundled_table
    from astrid_airflow.operators.learn import AstridLearnOperator

    ti = types.SimpleNamespace(dag_id="d", run_id="manual__1", task_id="learn", map_index=-1)
    context = {"ti": ti, "run_id": "manual__1"}
    common = dict(reference=bundled_table("synthetic.csv"), name="syn", n_search=6,
                  n_test=12, random_state=3, sample=None, max_seconds=None)
    op = AstridLearnOperator(task_id="learn", store=str(tmp_path / "remote"),
                             scheduler=cluster.scheduler_address, deferrable=True,
                             poll_interval=0.2, **common)
    with pytest.raises(TaskDeferred) as deferred:
        op.execute(context)
    trigger = deferred.value.trigger
    assert isinstance(trigger, DaskRunTrigger) and deferred.value.method_name == \
        "execute_complete"
    assert not (tmp_path / "remote").exists()  # nothing saved before the run ends
    event = asyncio.run(asyncio.wait_for(_first_event(trigger), timeout=150))
    out = op.execute_complete(context, event, **deferred.value.kwargs)
    local = AstridLearnOperator(task_id="learn", store=str(tmp_path / "local"),
                                **common).execute(context)
    assert out["learned"] and out["grouping"] == local["grouping"] and out["k"] == local["k"]
