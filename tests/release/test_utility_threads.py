"""The utility check fits its classifiers with one BLAS/OpenMP thread, as the engine does.

A check runs beside other tasks of a worker; with OpenMP's default of a thread per core
a histogram-boosting fit there spins against the other processes and takes many times
its one-thread time (docs/performance.md). The limit is observed from inside each fit.
"""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import astrid_airflow.engine as engine
from astrid_airflow import make_synthetic, surrogate_utility


def _threads_seen(monkeypatch) -> list[dict[str, int]]:
    seen: list[dict[str, int]] = []
    real = engine.make_classifier

    def recording(*args, **kwargs):
        model = real(*args, **kwargs)
        fit = model.fit

        def fit_and_record(X, y, **params):
            seen.append({i["internal_api"]: i["num_threads"] for i in threadpool_info()})
            return fit(X, y, **params)

        model.fit = fit_and_record
        return model

    monkeypatch.setattr(engine, "make_classifier", recording)
    return seen


@pytest.mark.parametrize("classifier", ["hgb", "svm"])
def test_every_utility_fit_runs_on_one_thread(monkeypatch, classifier):
    table = make_synthetic(200, random_state=0)
    seen = _threads_seen(monkeypatch)
    with threadpool_limits(limits=2):  # whatever the caller's setting
        before = {i["internal_api"]: i["num_threads"] for i in threadpool_info()}
        surrogate_utility(table, [["a1", "a2"], ["a3"], ["a4"]], target="class",
                          classifier=classifier, random_state=0, n_repeats=2)
        after = {i["internal_api"]: i["num_threads"] for i in threadpool_info()}
    assert len(seen) == 4  # the original's and the surrogate's classifier per split
    assert all(set(s.values()) == {1} for s in seen), seen
    assert after == before  # the caller's limits are restored
