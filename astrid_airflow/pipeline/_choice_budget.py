"""The release choice's cost, progress lines and share of the learn's budget.

After the search, :func:`~astrid_airflow.choose_release` measures candidate releases
(a recipe fit, the checks, a utility measure of ``2 x repeats`` classifier fits each) and
attacks the most accurate ones: tens of seconds on a paper-size table, which the logs
show and ``max_seconds`` counts. Here:

* :func:`release_choice_fits` is its expected cost in fits of the search's calibrated
  kind, what ``astrid(reserve_fits=)`` keeps of the budget before the search starts;
* :class:`ChoiceSteps` logs an estimate, then a line at least every ``INTERVAL`` seconds
  with the steps done and the time left (the engine's heartbeat, :mod:`..engine.
  _progress`), and checks the budget's :class:`~astrid_airflow.engine._budget.Deadline`
  before every step: a step that would end past it stops the choice with
  ``BudgetError`` (nothing is saved).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import numbers
import time
from collections.abc import Callable, Iterator
from typing import Any

from astrid_airflow._errors import ParameterError
from astrid_airflow.engine import Deadline, RunProgress, format_seconds

from ._choice_checks import CHOICE_MAX_ROWS, batch_plan

log = logging.getLogger("astrid_airflow")

#: Largest table on which the MDAV alternative is also tried (O(n^2 / k) per class).
MDAV_MAX_ROWS = 5_000
#: Rows of the search's training split (``_search``: half the table) and of the choice's
#: utility fits (``surrogate_utility``: 75 % of at most ``CHOICE_MAX_ROWS``).
_SEARCH_TRAIN, _UTILITY_TRAIN = 0.5, 0.75


def release_choice_fits(n_rows: int, n_attributes: int, policy: Any) -> float:
    """Expected cost of the release choice, in fits of the search's kind.

    About ``2 (m - 1)`` candidates (the per-k table's groupings and, up to
    ``MDAV_MAX_ROWS`` rows, their MDAV variant), each ``2 x repeats`` utility fits
    (original and surrogate), plus the chosen one's raw release; a utility fit trains on
    ``75 %`` of at most ``CHOICE_MAX_ROWS`` rows where a search fit trains on half the table
    (cost taken as linear in rows). Splits of unsafe groups and the attacks add to it;
    the budget's deadline, not this figure, bounds the run.
    """
    if isinstance(n_rows, bool) or not isinstance(n_rows, numbers.Integral) or n_rows < 1:
        raise ParameterError(f"Invalid n_rows: {n_rows!r}. Must be an integer >= 1.")
    candidates = (max(2, int(n_attributes)) - 1) * (2 if n_rows <= MDAV_MAX_ROWS else 1)
    return (candidates + 0.5) * candidate_fits(n_rows, policy)


def candidate_fits(n_rows: int, policy: Any, search_rows: int | None = None) -> float:
    """Cost of measuring one candidate release, in fits of the search's kind (the
    search trained on half of ``search_rows``: its sample, default the table)."""
    rows = min(n_rows, CHOICE_MAX_ROWS)
    repeats = policy.utility_repeats_for(rows)
    scale = _UTILITY_TRAIN * rows / (_SEARCH_TRAIN * (search_rows or n_rows))
    return 2.0 * repeats * scale


#: Seconds per reference row of one pass of a candidate over the whole table (its
#: release domain, a bootstrap batch's, a utility split's remedy or shuffle); the
#: measurements behind this and the next two constants: docs/performance.md.
ROW_SECONDS = 3e-6
#: A bootstrap batch counted from the reference's cells (its draw and one weighted count
#: per group) costs at most this share of a pass.
COUNTED_BATCH_PASS = 0.07
#: Passes one refit of the batch check costs: the fit and the recipe applied to the
#: reference.
REFIT_PASSES = 5


def candidate_seconds(n_rows: int, policy: Any, seconds_per_fit: float,
                      search_rows: int | None = None) -> float:
    """Expected seconds of measuring one candidate: its classifier fits plus its
    passes over every reference row (1 + the batch check's + 2 per utility split),
    which dominate above a few 100,000 rows; a counted batch is a fraction of one, and
    each of the batch check's refits a fit and a pass)."""
    repeats = policy.utility_repeats_for(min(n_rows, CHOICE_MAX_ROWS))
    refits, per = batch_plan(n_rows)
    passes = 1 + REFIT_PASSES * refits + COUNTED_BATCH_PASS * max(refits, 1) * per \
        + 2 * repeats
    return (candidate_fits(n_rows, policy, search_rows) * seconds_per_fit
            + passes * n_rows * ROW_SECONDS)


class ChoiceSteps:
    """Steps of one release choice: counted, logged, checked against the budget.

    Parameters
    ----------
    max_seconds : float or None
        What the choice may spend (None: no bound); 0 means the budget is already spent.
    progress : bool or None
        False: no progress lines (the budget still binds).
    clock : callable
        Monotonic seconds (a test passes a fake one).
    """

    def __init__(self, max_seconds: float | None = None, progress: bool | None = None, *,
                 clock: Callable[[], float] = time.perf_counter):
        if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(
                max_seconds, numbers.Real) or not 0 <= max_seconds < math.inf):
            raise ParameterError(f"Invalid max_seconds: {max_seconds!r}. Must be a number "
                                 ">= 0 or None.")
        self.deadline = None if max_seconds is None else Deadline(float(max_seconds),
                                                                  clock=clock)
        self.clock = clock
        self.tracker = RunProgress(0, kind="known so far", unit="steps",
                                   enabled=progress is not False)
        self.prior: float | None = None  # seconds per step before one is measured
        self._spent = 0.0

    def plan(self, steps: int, seconds_per_step: float | None) -> None:
        """Log the estimate and start the heartbeat."""
        self.tracker.planned, self.prior = int(steps), seconds_per_step
        self.tracker.seconds_per_fit = seconds_per_step
        total = "unknown" if seconds_per_step is None else format_seconds(
            steps * seconds_per_step)
        left = "" if self.deadline is None else \
            f"; {format_seconds(max(0.0, self.deadline.left()))} of the budget left"
        log.info("astrid release choice: about %d steps (candidate releases measured, "
                 "then attacked), estimated %s%s", steps, total, left)
        self.tracker.start()

    def expected(self) -> float:
        """Seconds the next step is expected to take (measured mean, else the prior)."""
        done = self.tracker.done
        if done:
            return self._spent / done
        return self.prior or 0.0

    @contextlib.contextmanager
    def step(self, phase: str, queued: int = 0) -> Iterator[None]:
        """One step (``queued``: steps known to follow it); refused past the budget."""
        if self.deadline is not None:
            self.deadline.check("the release choice", next_seconds=self.expected(),
                                detail=f"{self.tracker.done} steps were done")
        self.tracker.planned = max(self.tracker.planned, self.tracker.done + 1 + queued)
        self.tracker.phase = f"release choice: {phase}"
        t0 = self.clock()
        yield
        self._spent += self.clock() - t0
        self.tracker.update(1)

    def stop(self) -> None:
        self.tracker.stop()


def budget_left(result: Any) -> float | None:
    """Seconds of the learn's ``max_seconds`` the search left (None: no budget).

    From the result's record (``estimate.max_seconds``) and its ``seconds`` (the whole
    ``astrid`` call, from its start): the choice runs right after it.
    """
    d = result if isinstance(result, dict) else result.to_dict()
    budget = (d.get("estimate") or {}).get("max_seconds")
    if budget is None:
        return None
    return max(0.0, float(budget) - float(d.get("seconds") or 0.0))


def with_choice_steps(choose: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``choose`` its :class:`ChoiceSteps` (``_steps=``) from its ``max_seconds``
    and ``progress`` keywords, and stop the heartbeat on every exit."""

    @functools.wraps(choose)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        steps = ChoiceSteps(kwargs.get("max_seconds"), kwargs.get("progress"))
        try:
            return choose(*args, **kwargs, _steps=steps)
        finally:
            steps.stop()

    return wrapper
