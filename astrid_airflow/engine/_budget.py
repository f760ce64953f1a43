"""A user's time budget (``max_seconds``) as a bound on the whole learn.

The estimate before the search (``_cost``) decides whether a run may start; it cannot
make the run stop. A :class:`Deadline` does: it is the budget's end on the monotonic
clock, checked by the search after every batch of fits (past the end: stop) and by the
release choice before every candidate (the next one would not end in time: stop). Either
raises :class:`~astrid_airflow._errors.BudgetError` with the figures, and nothing is
saved, as when the estimate refuses a run.

The overrun is at most one batch of fits (the search) or the error of one candidate's
cost estimate (the choice).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from astrid_airflow._errors import BudgetError

from ._progress import format_seconds


@dataclass
class Deadline:
    """``max_seconds`` counted from ``start`` (``clock()`` when not given).

    Parameters
    ----------
    max_seconds : float
        The budget.
    start : float, optional
        When the budget started, on ``clock``'s scale.
    clock : callable, default time.perf_counter
        Monotonic seconds (a test passes a fake clock).
    """

    max_seconds: float
    start: float | None = None
    clock: Callable[[], float] = field(default=time.perf_counter, repr=False)

    def __post_init__(self) -> None:
        if self.start is None:
            self.start = self.clock()

    @classmethod
    def after(cls, max_seconds: float | None, spent: float = 0.0,
              clock: Callable[[], float] = time.perf_counter) -> Deadline | None:
        """The deadline of a budget of which ``spent`` seconds are already used (None:
        no budget)."""
        if max_seconds is None:
            return None
        return cls(float(max_seconds), clock() - float(spent), clock)

    def elapsed(self) -> float:
        return self.clock() - self.start  # type: ignore[operator]

    def left(self) -> float:
        return self.max_seconds - self.elapsed()

    def check(self, what: str, *, next_seconds: float = 0.0, detail: str = "") -> None:
        """Raise ``BudgetError`` when ``what`` would end past the budget.

        ``next_seconds``: the expected cost of the step about to start (0: only check
        that the budget is not already spent).
        """
        left = self.left()
        if left >= next_seconds and left > 0:
            return
        if left <= 0:
            state = f"the budget is spent after {format_seconds(self.elapsed())}"
        else:
            state = (f"its next step needs about {format_seconds(next_seconds)} and only "
                     f"{format_seconds(left)} are left")
        raise BudgetError(f"Stopped {what}: max_seconds = {self.max_seconds:g} "
                          f"({format_seconds(self.max_seconds)}) bounds the whole learn, "
                          f"and {state}{'; ' + detail if detail else ''}. Nothing was "
                          "saved; raise max_seconds (--max-seconds), or learn less "
                          "(--sample, --classifier hgb, --adaptive).")
