"""Resource settings that used to be traps fail fast or are cut, saying so (issue 30).

* ``n_jobs`` above the pool slots the running task holds: cut to them, with a warning
  in the task log (joblib would otherwise take cores the pool gave other tasks).
* ``execution_timeout`` below the learn's own cost estimate: one clear, final failure
  (``AirflowFailException``: no retry repeats the doomed work) before any fitting, the
  estimate in the message; nothing saved.
* ``deferrable`` defaults to ``[operators] default_deferrable``.
"""

from __future__ import annotations

import datetime as dt
import time
import types

import pytest
from astrid_airflow.operators import learn as learn_module
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.learn import AstridLearnOperator

import astrid_airflow

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")


def ctx() -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id="manual__1", task_id="learn", map_index=-1)
    return {"ti": ti, "run_id": "manual__1"}


class _Stop(Exception):
    pass


@pytest.fixture
def learn_call(monkeypatch):
    """What the operator hands the library (the learn itself is not run)."""
    seen: dict = {}

    def spy(request):
        seen.update(settings=dict(request.settings), n_jobs=request.n_jobs)
        raise _Stop

    monkeypatch.setattr(astrid_airflow, "learn_release", spy)
    return seen


@pytest.mark.parametrize("n_jobs, slots, used", [(4, 2, 2), (-1, 1, 1), (2, 2, 2)])
def test_n_jobs_above_the_slots_held_is_cut_with_a_warning(tmp_path, learn_call, capsys,
                                                           n_jobs, slots, used):
    op = AstridLearnOperator(task_id="learn", reference=bundled_table("synthetic.csv"),
                             store=str(tmp_path / "store"), name="syn", n_jobs=n_jobs,
                             pool_slots=slots)
    with pytest.raises(_Stop):
        op.execute(ctx())
    assert learn_call["n_jobs"] == used
    warned = "slot(s) of pool" in capsys.readouterr().out
    assert warned == (used != n_jobs)


def test_a_timeout_below_the_estimate_fails_once_before_fitting(tmp_path):
    op = AstridLearnOperator(task_id="learn", reference=bundled_table("synthetic.csv"),
                             store=str(tmp_path / "store"), name="syn", n_search=100,
                             n_test=250, random_state=0, classifier="svm",
                             execution_timeout=dt.timedelta(seconds=3))
    start = time.perf_counter()
    with pytest.raises(AirflowFailException) as info:  # final: retries are skipped
        op.execute(ctx())
    message = str(info.value)
    assert "execution_timeout (3 s)" in message and "Estimated 2,251 fits" in message
    assert "\n" not in message
    assert time.perf_counter() - start < 30  # the search (2,251 fits) never started
    assert not (tmp_path / "store" / "syn").exists()


def test_the_timeout_bounds_the_budget_only_when_it_is_smaller():
    started = time.perf_counter()
    assert learn_module._budget_within_timeout(600.0, None, started) == (600.0, None)
    assert learn_module._budget_within_timeout(600.0, 3600.0, started) == (600.0, None)
    budget, timeout = learn_module._budget_within_timeout(None, 60.0, started)
    assert timeout == 60.0 and 59.0 < budget <= 60.0
    budget, timeout = learn_module._budget_within_timeout(600.0, 60.0, started - 10)
    assert timeout == 60.0 and 49.0 < budget <= 50.0  # less the time already spent


@pytest.mark.parametrize("setting, given, expected", [
    (None, None, False), ("True", None, True), ("False", None, False),
    ("True", False, False), (None, True, True),
])
def test_deferrable_defaults_to_the_operators_setting(monkeypatch, setting, given,
                                                      expected):
    if setting is None:
        monkeypatch.delenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", raising=False)
    else:
        monkeypatch.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", setting)
    kwargs = {} if given is None else {"deferrable": given}
    op = AstridLearnOperator(task_id="learn", reference="t.csv", store="s", name="n",
                             **kwargs)
    assert op.deferrable is expected
