"""The gate's estimate sizes each part by the rows it works on (issue 50).

The utility check trains on at most ``UTILITY_MAX_ROWS`` rows per split, over the
policy's splits for the table; the attacks run on a shadow release of at most
``2 * SHADOW_MAX_ROWS`` rows. Sized by the whole table, a million-row gate's estimate
was the table's cells at a placeholder rate (and a small table's about zero); the
measured rates and the estimate's error per table: ``benchmarks/results/gate_estimate.md``.
"""

from __future__ import annotations

import sys

import pytest

from astrid_airflow.gate import GatePolicy
from astrid_airflow.gate._policy import UTILITY_MAX_ROWS
from astrid_airflow.gate._stage_cost import (
    ATTACKS_METRIC,
    ATTACKS_RATE,
    CHECKS_RATE,
    FIRST_GATE_SECONDS,
    UTILITY_METRIC,
    UTILITY_RATE,
    plan_gate,
)
from astrid_airflow.privacy import SHADOW_MAX_ROWS


class _Tracker:
    def __init__(self) -> None:
        self.parts: dict = {}
        self.planned = None

    def part(self, name, steps, rate, what, size=None):
        self.parts[name] = (steps, rate, what, size)

    def plan(self, steps, seconds, what, *, size=None):
        self.planned = (steps, seconds, size)


SUITE = {"expectations": [
    {"type": "expect_surrogate_accuracy_close_to_original", "kwargs": {"reference": "x"}},
    {"type": "expect_attack_risks_below", "kwargs": {"reference": "x"}}]}


@pytest.mark.parametrize("rows", [300, 20_000, 1_000_000])
def test_the_capped_parts_are_sized_by_their_samples(rows, monkeypatch):
    from astrid_airflow.gate import _stage_cost

    monkeypatch.setattr(_stage_cost, "metric_steps",
                        lambda suite: [UTILITY_METRIC, ATTACKS_METRIC])
    splits = GatePolicy().utility_repeats_for(min(rows, UTILITY_MAX_ROWS))
    t = _Tracker()
    plan_gate(t, SUITE, (rows, 30), computed_utility=True, writes=True,
              utility_splits=splits)
    assert t.parts[UTILITY_METRIC][1] is UTILITY_RATE
    assert t.parts[UTILITY_METRIC][3] == splits * min(rows, UTILITY_MAX_ROWS) * 30
    assert t.parts[ATTACKS_METRIC][1] is ATTACKS_RATE
    assert t.parts[ATTACKS_METRIC][3] == min(rows, 2 * SHADOW_MAX_ROWS)  # rows
    _, seconds, size = t.planned
    first = FIRST_GATE_SECONDS if "great_expectations" not in sys.modules else 0.0
    assert size == rows * 30 and seconds == pytest.approx(CHECKS_RATE.seconds(rows * 30)
                                                          + first)


def test_every_part_has_a_measured_cost():
    # no part is free: a rate of a million cells a second and no fixed cost was a
    # placeholder that put a 30-second gate at 2 s
    for rate in (UTILITY_RATE, ATTACKS_RATE, CHECKS_RATE):
        assert rate.fixed > 0
