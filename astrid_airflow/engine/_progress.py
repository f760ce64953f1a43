"""Whole-run progress for logs: phase, fits done / planned, estimated time left.

On a terminal the fit runner draws a progress bar per phase (``_fits._Progress``). In a
scheduler's task log (stderr not a terminal) a bar is useless and, worse, a long phase
prints nothing at all; so a heartbeat thread logs one line at least every ``INTERVAL``
seconds on the ``astrid_airflow`` logger (the learn operator's log shows the same
lines, since Airflow captures library logging). The thread only reads counters the
main thread updates; it never touches the fits.

The release's other stages (shuffle, validate, publish) use the same heartbeat through
:func:`stage_progress`: one estimate line when the stage knows its size, then the
heartbeat's lines with the stage's steps (:class:`StageProgress`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("astrid_airflow")

# Seconds between log lines: a long stage logs at least one line this often.
INTERVAL = 30.0


def format_seconds(seconds: float) -> str:
    """``4.2 s``, ``42 s``, ``7.5 min``, ``3.2 h``, ``2.1 days``: a duration a reader takes in."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


class RunProgress:
    """Counters of a whole ASTRID run and the heartbeat that logs them.

    Parameters
    ----------
    planned : int
        Fits the run plans (exact mode) or may use at most (adaptive mode).
    kind : str
        ``"planned"`` or ``"worst case"``: what ``planned`` is, shown in every line.
    seconds_per_fit : float or None
        Calibrated cost of one fit (one core), for the time left before fits finish.
    workers : int
        Fits running at once.
    enabled : bool
        Start the heartbeat thread (off on a terminal, where bars are drawn).
    unit : str, default "fits"
        What is counted (the release choice counts ``"steps"``).
    after : tuple (str, float), optional
        Work that follows this one and the seconds it is expected to take (the release
        choice after the search): added to the time left, and named.
    deadline : Deadline, optional
        The learn's budget (:mod:`._budget`): checked after every update; past it the
        update raises ``BudgetError``, which stops the run.
    """

    def __init__(self, planned: int, *, kind: str = "planned",
                 seconds_per_fit: float | None = None, workers: int = 1,
                 enabled: bool = True, interval: float | None = None, unit: str = "fits",
                 after: tuple[str, float] | None = None, deadline: Any = None):
        self.planned, self.kind, self.unit = int(planned), kind, unit
        self.after, self.deadline = after, deadline
        self.seconds_per_fit, self.workers = seconds_per_fit, max(1, int(workers))
        self.done, self.phase = 0, "starting"
        self.interval = INTERVAL if interval is None else float(interval)
        self.enabled = enabled
        self._start = time.perf_counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def for_run(cls, planned: int, *, progress: bool | None, **kw) -> RunProgress:
        """Heartbeat on unless ``progress`` is False or stderr is a terminal."""
        return cls(planned, enabled=progress is not False and not sys.stderr.isatty(), **kw)

    def start(self) -> RunProgress:
        self._start = time.perf_counter()
        if self.enabled and self._thread is None:
            self._thread = threading.Thread(target=self._beat, name="astrid-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def update(self, n: int, phase: str | None = None) -> None:
        self.done += n
        if phase is not None:
            self.phase = phase
        if self.deadline is not None and n:
            self.deadline.check(f"the search ({self.phase})",
                                detail=f"{self.done:,} of {self.planned:,} {self.unit} "
                                f"{self.kind} were done")

    def seconds_left(self) -> float | None:
        """Observed seconds per fit once fits have run, the calibration before."""
        left = max(0, self.planned - self.done)
        if self.done:
            return left * (time.perf_counter() - self._start) / self.done
        if self.seconds_per_fit is not None:
            return left * self.seconds_per_fit / self.workers
        return None

    def line(self) -> str:
        elapsed = time.perf_counter() - self._start
        left = self.seconds_left()
        pct = 100.0 * self.done / self.planned if self.planned else 100.0
        revised = ""
        if not self.done and left is not None and elapsed > left:
            # nothing done and the prior's whole time spent: the prior was wrong, and
            # repeating it at every heartbeat would be a false figure. The
            # running step has taken `elapsed` so far: each step left as long again.
            revised = f" (revised: past the estimate of {format_seconds(left)})"
            left = max(1, self.planned - 1) * elapsed
        if self.after is not None and left is not None:
            left += self.after[1]
        eta = "unknown" if left is None else format_seconds(left)
        if self.kind == "worst case":
            eta = f"at most {eta}"
        if self.after is not None and left is not None:
            eta += f" (of which about {format_seconds(self.after[1])} for {self.after[0]})"
        eta += revised
        return (f"astrid progress: {self.phase}, {self.unit} {self.done:,}/{self.planned:,} "
                f"{self.kind} ({pct:.0f} %), elapsed {format_seconds(elapsed)}, "
                f"time left {eta}")

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            log.info("%s", self.line())

    def __enter__(self) -> RunProgress:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ----------------------------------------------------------------------------- stages

@dataclass(frozen=True)
class StageRate:
    """A stage's cost model: ``seconds = fixed + size / per_second``.

    ``size`` is what the stage's dominant work grows with (rows x columns of the table,
    or bytes of a file); the two constants are measured on one machine
    (``benchmarks/bench_stage_rates.py``), so an estimate from them is only that.
    """

    fixed: float
    per_second: float

    def seconds(self, size: float) -> float:
        return self.fixed + max(0.0, float(size)) / self.per_second


class StageProgress(RunProgress):
    """The steps of one stage of a release: an estimate line, then the heartbeat's.

    :meth:`plan` logs ``astrid <stage>: <what>; <parts>; <n> steps, estimated <t> (an
    estimate: ...)`` once the stage knows its size; the heartbeat (:class:`RunProgress`, every
    ``INTERVAL`` seconds) logs ``astrid progress: <stage>: <phase>, steps d/n planned
    (..%), elapsed .., time left ..``. Steps are uneven (a write, a utility check), so
    each has its expected seconds: the plan's share, or its :meth:`part`'s. The time left
    is the estimate of the steps not done, scaled by the measured speed of those done
    (seconds taken per second expected, pulled towards 1 until a tenth of the estimate
    is behind), less what the running step has already taken. A stage run inside
    another (publish gating here) pauses the outer one's heartbeat while it runs.
    """

    NOTE = "an estimate: rates measured on a 2-core machine"

    def __init__(self, stage: str, *, interval: float | None = None):
        super().__init__(0, kind="planned", unit="steps", interval=interval)
        self.stage = stage
        self.paused = False
        self.phase = f"{stage}: starting"
        self.estimate: float | None = None
        self.planned_yet = False
        self.parts: dict[str, tuple[int, StageRate, str, float | None]] = {}
        self._each: dict[str, float] = {}  # expected seconds of one step of each part
        self._spent = 0.0  # expected seconds of the steps done
        self._current: float | None = None  # expected seconds of the running step
        self._done_at: float | None = None

    def part(self, name: str, steps: int, rate: StageRate, what: str,
             size: float | None = None) -> None:
        """Work of the stage with a cost model of its own, sized by ``size`` (default:
        :meth:`plan`'s; work on a capped sample has its own); its steps are run as
        ``step(phase, part=name)``."""
        self.parts[name] = (int(steps), rate, what, size)

    def plan(self, steps: int, seconds: float | None, what: str, *,
             size: float | None = None) -> None:
        """Log the estimate: ``steps`` steps taking ``seconds`` (None: unknown), plus the
        :meth:`part` s, sized by ``size``."""
        parts, total = [what], seconds
        self._each = {"": seconds / steps if seconds is not None and steps else 0.0}
        for name, (n, rate, label, own) in self.parts.items():
            sized = own if own is not None else size
            part = rate.seconds(sized) if sized is not None else None
            total = None if total is None or part is None else total + part
            self._each[name] = (part or 0.0) / max(1, n)
            steps += n
            parts.append(label)
        # work done before the plan counts at what it took: it neither speeds nor slows
        now = time.perf_counter()
        self._spent, self._done_at = now - self._start, now
        self.planned_yet = True
        self.planned = self.done + int(steps)  # the steps done before the plan, then its
        self.estimate = None if total is None else total + self._spent
        log.info("astrid %s: %s; %d steps, estimated %s (%s)", self.stage,
                 "; ".join(parts), self.planned,
                 "unknown" if total is None else format_seconds(total), self.NOTE)

    def update(self, n: int = 1, phase: str | None = None) -> None:
        """``n`` more steps done (each of the plan's share); ``phase``: what runs now."""
        if n:
            self._spent += self._current if self._current is not None else \
                n * self._each.get("", 0.0)
            self._current, self._done_at = None, time.perf_counter()
        super().update(n, None if phase is None else f"{self.stage}: {phase}")
        self.planned = max(self.planned, self.done)  # an unforeseen step: never > 100 %

    @contextlib.contextmanager
    def step(self, phase: str, part: str = "", *, own_estimate: bool = False
             ) -> Iterator[None]:
        """One step: ``phase`` while it runs, counted done when it returns (and its
        seconds logged at DEBUG: ``benchmarks/bench_stage_rates.py`` reads them).
        ``own_estimate``: a stage of its own runs in it (the gate in publish), outside
        this plan: it counts at what it took, neither speeding nor slowing the rest."""
        self.update(0, phase)
        self._current = self._each.get(part, self._each.get("", 0.0))
        t0 = time.perf_counter()
        yield
        took = time.perf_counter() - t0
        log.debug("astrid %s: step %r took %.3f s", self.stage, phase, took)
        if own_estimate:  # what it took replaces its share of the plan
            if self.estimate is not None:
                self.estimate += took - (self._current or 0.0)
            self._current = took
        self.update(1)

    def line(self) -> str:
        if not self.planned_yet:  # still sizing the work (reading a column, a table)
            elapsed = format_seconds(time.perf_counter() - self._start)
            return (f"astrid progress: {self.phase}, elapsed {elapsed}, time left unknown "
                    "(the estimate follows once the size is known)")
        return super().line()

    def done_line(self) -> str:
        """The actual against the estimate, logged when the stage ends normally."""
        elapsed = time.perf_counter() - self._start
        est = "" if self.estimate is None else f" (estimated {format_seconds(self.estimate)})"
        return f"astrid {self.stage}: {self.done} steps in {format_seconds(elapsed)}{est}"

    def seconds_left(self) -> float | None:
        if not self.planned_yet:
            return None
        if self.estimate is None:
            return super().seconds_left()
        now = time.perf_counter()
        since = self._done_at if self._done_at is not None else self._start
        prior = max(0.1 * self.estimate, 1e-9)
        speed = (since - self._start + prior) / (self._spent + prior)
        rest = max(0.0, self.estimate - self._spent)  # the running step included
        return max(rest * speed - (now - since), (rest - (self._current or 0.0)) * speed, 0.0)

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            if not self.paused:
                log.info("%s", self.line())


_running = threading.local()  # the stages entered on this thread, innermost last


@contextlib.contextmanager
def stage_progress(stage: str, steps: int | None = None,
                   estimate_seconds: float | None = None, *, what: str = "",
                   interval: float | None = None) -> Iterator[StageProgress]:
    """The progress of one stage: ``with stage_progress("shuffle") as p: ...``.

    With ``steps`` the estimate line is logged at once (``estimate_seconds``, ``what``);
    otherwise the stage calls ``p.plan(...)`` when it knows its size. The heartbeat runs
    from entry to exit; ``p.update(1, phase="write")`` or ``with p.step("write"):``
    counts a step done.
    """
    progress = StageProgress(stage, interval=interval)
    stack = _running.__dict__.setdefault("stages", [])
    if stack:
        stack[-1].paused = True
    stack.append(progress)
    try:
        if steps is not None:
            progress.plan(steps, estimate_seconds, what or stage)
        with progress:
            yield progress
        # after the heartbeat has stopped: no progress line may follow the actual
        log.info("%s", progress.done_line())
    finally:
        stack.remove(progress)
        if stack:
            stack[-1].paused = False
