"""The gate's steps and cost model, for its estimate and progress lines.

At a million rows the gate runs for minutes: a task log shows its estimate and progress.
:func:`~._gate.validate_surrogate` runs as the ``validate`` stage
(:func:`~astrid_airflow.engine.stage_progress`): once the tables are read,
:func:`plan_gate` logs the estimate (``astrid validate: 1,000,000 rows x 31 columns, 15
checks, then the utility check, then shadow-release attacks, 14 steps, estimated ...``)
and the heartbeat a line at least every 30 s with the steps done and the time left. The
steps: reading the tables, the release's domain, every metric the suite computes (a
metric several checks share is computed once: the three attack checks share one shadow
release), writing the results.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from astrid_airflow.engine import StageRate

UTILITY_METRIC, ATTACKS_METRIC = "astrid.surrogate_utility", "astrid.attack_risks"

# The cost model of each part, ``seconds = fixed + size / per_second``, fitted on the 2-core
# development machine through the gate's own step times: benchmarks/results/
# gate_estimate.json (paper-size tables to 5,000 rows) and stage_rates.json (100,000 to
# 1,000,000 rows x 31 columns). Sizes: the utility check's cells over its splits (each
# split trains on at most UTILITY_MAX_ROWS rows); the attacks' rows (a shadow release
# of at most 2 x SHADOW_MAX_ROWS rows: about 1.25 ms a row, nearly whatever the columns);
# the rest's cells of the whole table.
#: The utility check's classifier fits (``astrid.surrogate_utility``), per split cell.
UTILITY_RATE = StageRate(fixed=0.2, per_second=150_000.0)
#: The shadow releases and their attacks (``astrid.attack_risks``), per row.
ATTACKS_RATE = StageRate(fixed=0.1, per_second=800.0)
#: Everything else after the read: the release's domain, the other metrics, the results.
CHECKS_RATE = StageRate(fixed=0.2, per_second=1.34e6)
#: The first gate in a process also imports Great Expectations and the attacks' models.
FIRST_GATE_SECONDS = 3.5


def metric_steps(suite: Mapping[str, Any]) -> list[str]:
    """The metric computed for each step of the suite, once per metric and arguments
    (as GX computes them; the checks without the original bound compute nothing
    costly and are not steps)."""
    from ._registry import EXPECTATIONS  # the GX classes' modules: only when gating

    seen: dict[tuple[str, str], str] = {}
    for e in suite.get("expectations", []):
        kwargs = dict(e.get("kwargs") or {})
        if e.get("type") not in EXPECTATIONS or "reference" not in kwargs:
            continue
        metric = EXPECTATIONS[e["type"]][1]
        kwargs.pop("threshold", None)
        seen.setdefault((metric, json.dumps(kwargs, sort_keys=True, default=str)), metric)
    return list(seen.values())


def plan_gate(tracker: Any, suite: Mapping[str, Any], shape: tuple[int, int], *,
              computed_utility: bool, writes: bool, utility_splits: int = 1) -> None:
    """Log the gate's estimate on ``tracker`` (its ``StageProgress``): ``shape`` is the
    original's (rows, columns); ``computed_utility``: the utility check fits (no
    precomputed figures) on ``utility_splits`` splits; ``writes``: the result JSON and
    Data Docs are written. The utility check and the attacks are sized by the rows they
    work on (capped samples), the rest by the whole table."""
    from astrid_airflow.privacy import SHADOW_MAX_ROWS

    from ._policy import UTILITY_MAX_ROWS

    rows, columns = int(shape[0]), int(shape[1])
    metrics = metric_steps(suite)
    if computed_utility and UTILITY_METRIC in metrics:
        tracker.part(UTILITY_METRIC, 1, UTILITY_RATE, "the utility check",
                     size=utility_splits * min(rows, UTILITY_MAX_ROWS) * columns)
    if ATTACKS_METRIC in metrics:
        tracker.part(ATTACKS_METRIC, 1, ATTACKS_RATE, "shadow-release attacks",
                     size=min(rows, 2 * SHADOW_MAX_ROWS))
    # the release's domain, GX's set-up, the other metrics and (maybe) the results
    other = 2 + sum(m not in tracker.parts for m in metrics) + int(writes)
    cells = rows * columns
    first = FIRST_GATE_SECONDS if "great_expectations" not in sys.modules else 0.0
    tracker.plan(other, CHECKS_RATE.seconds(cells) + first,
                 f"{rows:,} rows x {columns} columns, {len(suite.get('expectations', []))} "
                 "checks", size=cells)
