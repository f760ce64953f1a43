"""What the learn task's log shows: the CLI's per-k table and the estimate / time-left lines.

The library logs on the ``astrid_airflow`` logger (no Airflow import); Airflow's task
runner captures stdlib logging, so the lines reach the task log only if they propagate to
the root logger at INFO. The operator's own ``self.log`` is the task SDK's structlog
logger (printed to stdout outside a task runner). The test captures both streams the
task runner merges into the task log, a root handler at INFO for the library and
stdout for the operator, and looks for each line.
"""

from __future__ import annotations

import types

import pytest
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.learn import AstridLearnOperator

from astrid_airflow.engine import _progress

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")


@pytest.fixture
def task_log(monkeypatch, root_log):
    """A root handler at INFO, as Airflow's task runner installs, for the test's duration."""
    # a heartbeat every 50 ms so a short search still logs its time-left lines
    monkeypatch.setattr(_progress, "INTERVAL", 0.05)
    return root_log


def test_learn_log_has_the_per_k_table_estimate_and_time_left(tmp_path, task_log, capsys):
    op = AstridLearnOperator(task_id="learn", reference=bundled_table("synthetic.csv"),
                             store=str(tmp_path / "store"), name="syn", n_search=20,
                             n_test=50, random_state=0)
    ti = types.SimpleNamespace(dag_id="d", run_id="manual__1", task_id="learn", map_index=-1)
    out = op.execute({"ti": ti, "run_id": "manual__1"})
    assert out["learned"] is True
    operator_log = capsys.readouterr().out
    text = operator_log + "\n".join(task_log)
    # the table the CLI prints: header, one row per k, the chosen row starred
    assert "k  acc_ave  acc_min  acc_max" in text.replace("   ", "  "), text
    table = operator_log[operator_log.index("ASTRID result for syn"):]
    starred = [row for row in table.splitlines() if row.startswith("* ")]
    assert [row.lstrip("* ").split()[0] for row in table.splitlines()[1:6]] == [
        "k", "1", "2", "3", "4"], table
    assert len(starred) == 1 and starred[0].split()[1] == str(out["k"]), table
    assert f"chosen grouping (k = {out['k']}" in table
    # the library's lines, from its own logger, reach the same log
    assert any(line.startswith("astrid_airflow: astrid estimate (") for line in task_log), text
    progress = [line for line in task_log if "astrid progress:" in line]
    assert progress and all("time left" in line for line in progress), text
    assert any(line.startswith("astrid_airflow: astrid: ") and "estimated" in line
               for line in task_log), text
