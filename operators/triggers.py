"""``DaskRunTrigger``: wait in the triggerer for an ASTRID run on a Dask cluster.

A learn task whose fits run on a Dask cluster only waits; deferring to this trigger
frees its worker slot meanwhile. The run was started with
``astrid_airflow.scale._dask.submit_astrid`` (its future published on the scheduler under a
key); the trigger polls the key's status over asyncio and fires once the run has ended,
whatever the outcome, so the task resumes and collects the result or the error.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

__all__ = ["DaskRunTrigger"]

# statuses after which the run will not change any more
_ENDED = frozenset({"finished", "error", "cancelled", "lost"})


class DaskRunTrigger(BaseTrigger):
    """Fire when the detached ASTRID run ``key`` on ``scheduler`` has ended.

    Parameters
    ----------
    scheduler : str
        Dask scheduler address (``tcp://host:8786``).
    key : str
        The run's key from ``submit_astrid``.
    poll_interval : float, default 10
        Seconds between status checks.
    """

    def __init__(self, scheduler: str, key: str, poll_interval: float = 10.0) -> None:
        super().__init__()
        self.scheduler, self.key, self.poll_interval = scheduler, key, float(poll_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"scheduler": self.scheduler, "key": self.key,
                 "poll_interval": self.poll_interval})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from astrid_airflow import detached_status

        while True:
            try:
                status = await detached_status(self.scheduler, self.key)
            except (OSError, TimeoutError) as exc:  # scheduler briefly unreachable: retry
                self.log.warning("Dask scheduler %s: %s; polling again.", self.scheduler, exc)
                status = "pending"
            if status in _ENDED:
                yield TriggerEvent({"key": self.key, "status": status,
                                    "scheduler": self.scheduler})
                return
            await asyncio.sleep(self.poll_interval)
