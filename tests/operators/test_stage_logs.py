"""What the shuffle, gate and publish tasks' logs show (issue 33): each stage's estimate
and its progress lines with the time left.

The library logs them on the ``astrid_airflow`` logger (no Airflow import); Airflow's task
runner captures stdlib logging through a root handler at INFO, which the test installs
(as ``test_learn_log.py`` does for learn), with a heartbeat every 50 ms and each stage
slowed past it.
"""

from __future__ import annotations

import time
import types

import pytest
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

from astrid_airflow import ArtefactStore, GatePolicy
from astrid_airflow.engine import _progress
from astrid_airflow.gate import gate_extra_files
from astrid_airflow.io import read_table
from tests.gate.test_gate import artefact_for

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")

BATCH = bundled_table("synthetic_batch.csv")
# a raw release judged by a policy that lets it pass (as test_operators' learned artefact)
LOOSE = GatePolicy().with_overrides(
    max_intact=0.01, max_accuracy_drop=0.03, max_share_below_k=1,
    max_class_disclosure_share=1, max_largest_group_unique_share=1.0,
    max_singling_out_risk=1, max_inference_risk=1.0, max_class_from_one_column_risk=1)


def ctx(task_id: str) -> dict:
    run_id = "manual__2026-01-01T00:00:00+00:00"
    ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": run_id}


@pytest.fixture
def task_log(monkeypatch, root_log):
    """A root handler at INFO, as Airflow's task runner installs; the key the gate signs
    its receipt with and publish trusts."""
    monkeypatch.setenv("ASTRID_SIGNING_KEY", "stage-logs-key-0123456789abcdef")
    monkeypatch.setattr(_progress, "INTERVAL", 0.05)
    return root_log


def slowed(monkeypatch, module, name: str) -> None:
    real = getattr(module, name)

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)


def stage_lines(log: list[str], stage: str) -> tuple[list[str], list[str]]:
    """The stage's estimate lines and progress lines, as the task log shows them."""
    estimates = [line for line in log if line.startswith(f"astrid_airflow: astrid {stage}: ")
                 and ", estimated " in line]
    beats = [line for line in log
             if line.startswith(f"astrid_airflow: astrid progress: {stage}: ")
             and "time left" in line]
    return estimates, beats


def test_shuffle_gate_and_publish_logs_show_estimates_and_time_left(tmp_path, task_log,
                                                                     monkeypatch):
    from astrid_airflow.gate import _gate
    from astrid_airflow.pipeline import _integrity
    from astrid_airflow.release import _surrogate

    table = read_table(bundled_table("synthetic.csv"))
    art = artefact_for(table, "a1,a2;a3;a4")
    store = tmp_path / "store"
    version = ArtefactStore(store).save("syn", art, extra_files=gate_extra_files(art, LOOSE))
    for module, name in ((_surrogate, "_write_shuffled"), (_gate, "_gx_definition"),
                         (_integrity, "canonical_of")):
        slowed(monkeypatch, module, name)
    out = tmp_path / "staging" / "surrogate.parquet"
    s = GoldenEyeShuffleOperator(task_id="shuffle", table=BATCH, store=str(store),
                                 artefact=f"syn@{version}", out=str(out), random_state=1,
                                 remedies=False).execute(ctx("shuffle"))
    g = SurrogateGateOperator(task_id="gate", original=s["original"], surrogate=s["surrogate"],
                              store=str(store), artefact=s["artefact"],
                              random_state=1, allow_weaker_policy=True  # LOOSE, stored
                              ).execute(ctx("gate"))
    assert g["success"] is True, g
    p = PublishSurrogateOperator(task_id="publish", surrogate=str(out),
                                 destination=str(tmp_path / "pub" / "s.parquet")
                                 ).execute(ctx("publish"))
    assert p["sha256"]
    for stage in ("shuffle", "validate", "publish"):
        estimates, beats = stage_lines(task_log, stage)
        assert len(estimates) == 1 and "(an estimate: " in estimates[0], (stage, task_log)
        assert beats, (stage, task_log)
