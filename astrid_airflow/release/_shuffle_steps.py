"""The steps of a file shuffle: what :func:`~._surrogate.shuffle_file` does between its
read and its write, and the estimate and progress lines it logs.

A shuffle of a million rows takes tens of seconds to minutes: :func:`plan_shuffle` logs
the estimate (``astrid shuffle: 1,000,000 rows x 31 columns, 1 copy, recipe of 10 steps,
..., estimated 40 s (an estimate: ...)``) and the stage's heartbeat
(:func:`~astrid_airflow.engine.stage_progress`) a line at least every 30 s with the steps
done and the time left. The steps: reading the table (the first
copy's permutations drawn meanwhile), each step of the recipe, local suppression, then per
copy its permutations (after the first), its intact-row swaps (a remedied release) and its
write; the metrics that ``stage_surrogate`` measures before publishing follow
(:func:`metrics_rate`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from astrid_airflow.engine import StageRate

# The cost model of each part, ``seconds = fixed + rows x columns / per_second``, measured
# by benchmarks/bench_stage_rates.py at 100,000 and 300,000 rows x 31 columns of
# make_mixed_table with a 10-step recipe, on the 2-core development machine:
# benchmarks/results/stage_rates.json ("shuffle_file", "metrics_utility",
# "metrics_no_utility").
#: ``shuffle_file`` itself: read, recipe, suppression, permutations, swaps, write.
SHUFFLE_RATE = StageRate(fixed=0.0, per_second=1.0e6)
#: ``surrogate_metrics`` with the utility check (classifier fits on a capped subsample).
METRICS_UTILITY_RATE = StageRate(fixed=0.0, per_second=1.0e6)
#: ``surrogate_metrics`` without it (``--no-utility``): the intact-row hashes and shares.
METRICS_RATE = StageRate(fixed=0.0, per_second=1.0e6)


def step(progress: Any, phase: str) -> Any:
    """``progress.step(phase)``, or nothing without a progress (a library call)."""
    return contextlib.nullcontext() if progress is None else progress.step(phase)


def metrics_rate(utility: bool) -> StageRate:
    """The cost model of the metrics measured before a shuffle publishes."""
    return METRICS_UTILITY_RATE if utility else METRICS_RATE


def plan_shuffle(progress: Any, rows: int, columns: int, recipe: Any, n_copies: int) -> None:
    """Log the shuffle's estimate: its steps (see the module docstring) and seconds."""
    recipe_steps = 0 if recipe is None else len(recipe.steps) + 1  # + local suppression
    steps = 1 + recipe_steps + n_copies * (2 if recipe is not None else 1) + n_copies - 1
    what = (f"{rows:,} rows x {columns} columns, {n_copies} "
            f"{'copy' if n_copies == 1 else 'copies'}, "
            + ("raw release (no recipe)" if recipe is None else
               f"recipe of {len(recipe.steps)} steps and local suppression"))
    cells = rows * columns
    progress.plan(steps, SHUFFLE_RATE.seconds(cells * n_copies), what, size=cells)
