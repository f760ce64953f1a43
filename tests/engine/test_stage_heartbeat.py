"""A release stage's estimate and heartbeat lines (issue 33): ``engine.stage_progress``."""

from __future__ import annotations

import contextlib
import logging
import time
import types

import pytest

from astrid_airflow.engine import StageRate, _progress, stage_progress


@pytest.fixture
def lines(caplog, monkeypatch):
    """The ``astrid_airflow`` logger's messages, with a heartbeat every 50 ms."""
    monkeypatch.setattr(_progress, "INTERVAL", 0.05)
    caplog.set_level(logging.INFO, logger="astrid_airflow")
    return caplog


class Clock:
    """A fake ``time`` for :mod:`._progress`: seconds move only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


@contextlib.contextmanager
def fake_stage(monkeypatch, stage: str):
    """A started StageProgress on a fake clock (no beat: the default interval is 30 s
    and nothing here waits on it)."""
    clock = Clock()
    monkeypatch.setattr(_progress, "time", types.SimpleNamespace(perf_counter=clock.perf_counter))
    p = _progress.StageProgress(stage)
    p.start()
    try:
        yield p, clock
    finally:
        p.stop()


def test_estimate_line_then_progress_lines_with_time_left_then_the_actual(lines):
    with stage_progress("shuffle") as p:
        p.plan(3, 6.0, "1,000 rows x 5 columns")
        with p.step("copy 1/1: writing"):
            time.sleep(0.3)
        p.update(2, phase="done")
    messages = lines.messages
    assert messages[0] == ("astrid shuffle: 1,000 rows x 5 columns; 3 steps, estimated 6.0 s "
                           f"({_progress.StageProgress.NOTE})")
    beats = [m for m in messages if m.startswith("astrid progress: shuffle: copy 1/1: writing")]
    assert beats, messages
    assert all(", steps 0/3 planned (0 %), elapsed " in m and ", time left " in m
               for m in beats), beats
    assert messages[-1].startswith("astrid shuffle: 3 steps in ") and \
        messages[-1].endswith("(estimated 6.0 s)")


def test_estimate_at_entry_and_no_beat_after_the_stage(lines):
    with stage_progress("publish", steps=2, estimate_seconds=60, what="a file") as p:
        p.update(2)
    assert lines.messages[0].startswith("astrid publish: a file; 2 steps, estimated 60 s (")
    n = len(lines.messages)
    time.sleep(0.2)
    assert len(lines.messages) == n  # the heartbeat stopped with the stage


def test_an_error_stops_the_heartbeat_without_the_done_line(lines):
    with pytest.raises(RuntimeError), stage_progress("validate", steps=1) as p:
        with p.step("check"):
            raise RuntimeError("boom")
    n = len(lines.messages)
    time.sleep(0.2)
    assert len(lines.messages) == n
    assert not [m for m in lines.messages if " steps in " in m]


def test_time_left_is_the_estimate_scaled_by_the_measured_speed(monkeypatch):
    with fake_stage(monkeypatch, "shuffle") as (p, clock):
        p.part("metrics", 1, StageRate(fixed=20.0, per_second=10.0), "metrics")
        p.plan(4, 40.0, "work", size=100)  # 4 steps of 10 s, then metrics of 20 + 10 s
        assert p.planned == 5 and p.estimate == pytest.approx(70.0)
        assert p.seconds_left() == pytest.approx(70.0)  # the estimate before any step
        with p.step("a"):
            clock.now += 20.0  # twice the 10 s expected
        # speed (20 + 7) / (10 + 7), the prior a tenth of the estimate; 60 s expected left
        assert p.seconds_left() == pytest.approx(60.0 * 27 / 17)
        with p.step("b"), p.step("c"), p.step("d"):
            clock.now += 10.0
        with p.step("metrics", part="metrics"):
            clock.now += 10.0  # the running step counts down from its own 30 s
            speed = (30.0 + 7) / (40.0 + 7)
            assert p.seconds_left() == pytest.approx(30.0 * speed - 10.0)
            clock.now += 100.0  # past its estimate: nothing is left but never below 0
            assert p.seconds_left() == 0.0
        assert p.done == 5 and p.planned == 5


def test_a_stage_of_its_own_inside_a_step_counts_at_what_it_took(monkeypatch):
    with fake_stage(monkeypatch, "publish") as (p, clock):
        p.plan(2, 10.0, "file")
        with p.step("the gate, run here", own_estimate=True):
            clock.now += 300.0  # the gate: its own stage, not in publish's estimate
        assert p.estimate == pytest.approx(10.0 + 300.0 - 5.0)
        assert p.seconds_left() == pytest.approx(5.0)  # speed unchanged by the gate


def test_work_before_the_plan_counts_at_what_it_took(monkeypatch):
    with fake_stage(monkeypatch, "validate") as (p, clock):
        with p.step("reading the tables"):
            clock.now += 8.0
        assert p.seconds_left() is None  # no plan yet: the time left is unknown
        p.plan(3, 30.0, "rows")
        assert p.planned == 4 and p.seconds_left() == pytest.approx(30.0)
        assert "time left 30 s" in p.line()


def test_an_unforeseen_step_never_shows_more_than_100_percent():
    p = _progress.StageProgress("shuffle")
    p.plan(1, 1.0, "x")
    p.update(3)
    assert p.done == p.planned == 3 and "(100 %)" in p.line()


def test_a_stage_inside_another_pauses_the_outer_heartbeat(lines):
    with stage_progress("publish", steps=3, estimate_seconds=1.0) as outer:
        with outer.step("the gate, run here", own_estimate=True):
            with stage_progress("validate", steps=1, estimate_seconds=1.0) as inner:
                with inner.step("check"):
                    time.sleep(0.4)
        time.sleep(0.2)
    messages = lines.messages
    start = next(i for i, m in enumerate(messages) if m.startswith("astrid validate: "))
    end = next(i for i, m in enumerate(messages) if m.startswith("astrid validate: 1 steps"))
    during = messages[start:end]
    assert any(m.startswith("astrid progress: validate: check") for m in during), during
    assert not [m for m in during if m.startswith("astrid progress: publish")], during
    assert [m for m in messages[end:] if m.startswith("astrid progress: publish")], messages


def test_stage_rate():
    rate = StageRate(fixed=2.0, per_second=1e6)
    assert rate.seconds(3e6) == pytest.approx(5.0) and rate.seconds(-1) == 2.0


def test_a_part_with_its_own_size_is_estimated_at_it(monkeypatch):
    # work on a capped sample costs what its sample costs, not what the table would
    with fake_stage(monkeypatch, "validate") as (p, _):
        p.part("capped", 1, StageRate(fixed=1.0, per_second=1e6), "a sample's work",
               size=2e6)
        p.part("whole", 1, StageRate(fixed=0.0, per_second=1e6), "the table's work")
        p.plan(1, 0.5, "a table", size=9e6)
    assert p.estimate == pytest.approx(0.5 + (1.0 + 2.0) + 9.0)
