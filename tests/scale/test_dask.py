"""ASTRID's fits on a real Dask cluster: a LocalCluster with two worker processes.

The cluster is started once for the module; the tables and permutation counts are small
so the whole module takes seconds beyond the cluster start-up.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="needs the 'dask' extra")

from sklearn.tree import DecisionTreeClassifier  # noqa: E402

from astrid_airflow._errors import ParameterError  # noqa: E402
from astrid_airflow.engine._search import astrid  # noqa: E402
from astrid_airflow.engine._synthetic import make_synthetic  # noqa: E402
from astrid_airflow.engine._test import test_grouping  # noqa: E402
from astrid_airflow.scale._dask import (  # noqa: E402
    astrid_on_dask,
    dask_parallel,
    test_grouping_on_dask,
)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GiB") as c:
        yield c


@pytest.fixture(scope="module")
def table():
    return make_synthetic(60, random_state=1)


def _without_seconds(d: dict) -> dict:
    d = dict(d)
    d.pop("seconds"), d.pop("estimate", None)
    return d


@pytest.mark.parametrize("adaptive", [False, True], ids=["exact", "adaptive"])
def test_astrid_on_cluster_equals_local_run(cluster, table, adaptive):
    kwargs = dict(target="class", classifier="svm", n_search=6, n_test=12, random_state=3,
                  progress=False, **({"adaptive": True} if adaptive else {}))
    local = astrid(table, n_jobs=1, **kwargs)
    with dask_parallel(cluster.scheduler_address) as run:
        assert run.n_jobs == 2
        remote = astrid(table, n_jobs=run.n_jobs, **kwargs)
        # one FitData shipped for the whole run (m + 2 engine calls), not one per call
        assert run.scatters == 1
    assert remote.grouping == local.grouping
    assert _without_seconds(remote.to_dict()) == _without_seconds(local.to_dict())
    # and a different seed gives a different table (the comparison can fail)
    other = astrid_on_dask(table, scheduler=cluster.scheduler_address,
                           **{**kwargs, "random_state": 4})
    assert [r.acc_ave for r in other.table] != [r.acc_ave for r in local.table]


def test_fits_run_on_the_workers(cluster, table):
    client = distributed.Client(cluster.scheduler_address, set_as_default=False)
    try:
        before = _tasks_done(client)
        test_grouping_on_dask(table, scheduler=client, target="class", grouping="a1,a2;a3;a4",
                              classifier="nb", n_permutations=20, random_state=0,
                              progress=False)
        done = {w: n - before.get(w, 0) for w, n in _tasks_done(client).items()}
        assert sum(done.values()) >= 2 and all(n > 0 for n in done.values()), done
        assert client.status == "running"  # a client passed in is not closed
    finally:
        client.close()


def _executed(dask_worker) -> int:
    return dask_worker.state.executed_count


def _tasks_done(client) -> dict:
    return client.run(_executed)


@pytest.mark.parametrize("classifier", ["nb", DecisionTreeClassifier(max_depth=3)],
                         ids=["preset-encoded", "user-estimator-raw"])
def test_grouping_test_on_cluster_equals_local_run(cluster, table, classifier):
    kwargs = dict(target="class", grouping="a1,a2;a3;a4", classifier=classifier,
                  n_permutations=25, random_state=11, progress=False)
    local = test_grouping(table, n_jobs=1, **kwargs)
    remote = test_grouping_on_dask(table, scheduler=cluster.scheduler_address, **kwargs)
    np.testing.assert_array_equal(remote.null_accuracies, local.null_accuracies)
    assert remote.p_value == local.p_value and remote.accuracy == local.accuracy
    assert _without_seconds(remote.to_dict()) == _without_seconds(local.to_dict())


def test_unreachable_scheduler_is_a_clear_error():
    with pytest.raises(ParameterError, match="Cannot connect to the Dask scheduler"):
        with dask_parallel("tcp://127.0.0.1:9", timeout=1):
            pass


@pytest.mark.parametrize("bad", ["", "  ", 8786, None])
def test_invalid_scheduler_value(bad):
    with pytest.raises(ParameterError, match="Invalid scheduler"):
        with dask_parallel(bad):
            pass


def test_engine_arguments_are_set_by_the_cluster(cluster, table):
    with pytest.raises(ParameterError, match=r"\['n_jobs'\]"):
        astrid_on_dask(table, scheduler=cluster.scheduler_address, target="class", n_jobs=4)


def test_worker_version_mismatch_is_reported(cluster, monkeypatch):
    monkeypatch.setattr("astrid_airflow._version.__version__", "0.0.0-client")
    with pytest.raises(ParameterError, match=r"need astrid_airflow 0\.0\.0-client"):
        with dask_parallel(cluster.scheduler_address):
            pass


def _cli_json(capsys, argv):
    from astrid_airflow.cli import main

    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    out.pop("seconds", None), out.pop("estimate", None)
    return out


def test_cli_scheduler_flag_equals_a_local_run(cluster, table, tmp_path, capsys):
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    common = ["--target", "class", "--classifier", "nb", "--r-search", "3", "--r-test", "5",
              "--seed", "4", "--json", "--quiet"]
    local = _cli_json(capsys, ["learn", str(path), *common])
    remote = _cli_json(capsys, ["learn", str(path), *common,
                                "--scheduler", cluster.scheduler_address])
    assert remote == local
    test_args = ["--target", "class", "--grouping", "a1,a2;a3;a4", "--r-test", "6",
                 "--seed", "2", "--json"]
    assert _cli_json(capsys, ["test", str(path), *test_args,
                              "--scheduler", cluster.scheduler_address]) == \
        _cli_json(capsys, ["test", str(path), *test_args])


def test_cli_scheduler_with_jobs_is_bad_input(cluster, table, tmp_path, capsys):
    from astrid_airflow.cli import main

    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    assert main(["learn", str(path), "--target", "class", "--jobs", "2", "--quiet",
                 "--scheduler", cluster.scheduler_address]) == 2
    assert "--jobs does not go with --scheduler" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")
def test_learn_operator_runs_its_fits_on_the_cluster(cluster, table, tmp_path):
    import types

    from astrid_airflow.operators.learn import AstridLearnOperator

    from astrid_airflow.release._store import ArtefactStore

    path = tmp_path / "ref.csv"
    table.to_csv(path, index=False)
    ti = types.SimpleNamespace(dag_id="d", run_id="r1", task_id="learn", map_index=-1)

    def learn(store, **kw):
        return AstridLearnOperator(task_id="learn", reference=str(path), store=str(store),
                                   name="m", classifier="nb", n_search=3, n_test=5,
                                   random_state=3, **kw).execute({"ti": ti, "run_id": "r1"})

    remote = learn(tmp_path / "remote", scheduler=cluster.scheduler_address)
    local = learn(tmp_path / "local")
    assert remote["grouping"] == local["grouping"]
    a = ArtefactStore(tmp_path / "remote").load("m", "v0001").result
    b = ArtefactStore(tmp_path / "local").load("m", "v0001").result
    for x in (a, b):
        x.pop("seconds"), x.pop("estimate", None)
    assert a == b


def test_a_classifiers_own_joblib_calls_stay_in_its_batch(cluster):
    """A fit whose classifier calls joblib itself (the presets' ColumnTransformer on a
    table with text columns) runs that inside the worker's batch: before, each fit sent
    its transformers back to the cluster as tasks of their own (2,712 tiny tasks beside
    216 batches at 25,000 x 30)."""
    from astrid_airflow.engine import make_mixed_table

    client = distributed.Client(cluster.scheduler_address, set_as_default=False)
    try:
        t, planted = make_mixed_table(400, random_state=0)
        cols = [c for group in planted[:2] for c in group]  # amount x region, ...
        t = t[[*cols, "class"]]
        assert any(t[c].dtype == object or str(t[c].dtype) in ("str", "string")
                   for c in cols), t.dtypes
        before = sum(_tasks_done(client).values())
        test_grouping_on_dask(t, scheduler=client, target="class",
                              grouping=";".join(cols), classifier="hgb",
                              n_permutations=12, random_state=0, progress=False)
        done = sum(_tasks_done(client).values()) - before
        assert 2 <= done <= 12, done  # the batches, not a task per transformer and fit
    finally:
        client.close()
