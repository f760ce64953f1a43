"""ASTRID's classifier fits on a Dask distributed cluster.

The engine (``_fits.run_tasks``) dispatches its fits through joblib and honours an
enclosing ``joblib.parallel_config``; this module supplies that configuration for a Dask
cluster selected by its scheduler address:

* :func:`dask_parallel` connects a ``distributed.Client``, checks that the workers can
  import ``astrid_airflow`` (same version as here), and activates a joblib backend whose
  scattered data outlives one ``Parallel`` call. joblib's own Dask backend scatters a
  large argument once per ``Parallel`` call; ASTRID makes one call per sorting step, so the
  training and evaluation arrays (one ``FitData``) would otherwise be shipped m + 2 times.
  Here they are scattered once per run and replicated to every worker at once (worker to
  worker), and the future is released when the engine drops its ``FitData``.
* :func:`astrid_on_dask` and :func:`test_grouping_on_dask` run the engine inside it.

Results do not depend on where the fits run: every task carries a ``SeedSequence``
spawned in the parent before dispatch, and scores are returned in task order, so a run on
the cluster equals ``n_jobs=1`` with the same seed, value for value (tested).

Every worker needs ``astrid_airflow`` installed (the fit function is pickled by
reference); a worker that lacks it is reported before any work is sent.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from astrid_airflow._errors import ParameterError


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:  # pragma: no cover - depends on the extra being installed
        raise ParameterError("Running on a Dask cluster needs the 'dask' extra: pip install "
                             "'astrid-airflow[dask]' (dask[distributed]).") from None
    return distributed


class _Scattered:
    """Futures of scattered objects, keyed by the object's identity while it lives.

    The same contract as joblib's per-call cache (values are awaitable tasks, entries
    vanish when the key object is garbage-collected), but it is kept across ``Parallel``
    calls. ``scatters`` counts the objects ever shipped.
    """

    def __init__(self) -> None:
        self._data: dict[int, tuple[weakref.ref, Any]] = {}
        self.scatters = 0

    def __getitem__(self, obj: Any) -> Any:
        ref, value = self._data[id(obj)]
        if ref() is not obj:
            raise KeyError(obj)
        return value

    def __setitem__(self, obj: Any, value: Any) -> None:
        key = id(obj)

        def forget(_ref: Any, key: int = key) -> None:
            self._data.pop(key, None)

        self._data[key] = (weakref.ref(obj, forget), value)
        self.scatters += 1

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()


class _ReplicatingClient:
    """A ``Client`` whose asynchronous ``scatter`` (joblib's) also replicates the data.

    joblib scatters to one worker; the scheduler then keeps every batch that needs the
    data on that worker while its queue is short, so the other workers idle. Replicating
    right away (worker to worker, a tree of branching factor 2) ships the data once to
    each worker and lets the batches spread by load alone.
    """

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def scatter(self, data: Any, *args: Any, asynchronous: bool = False, **kwargs: Any
                ) -> Any:
        if not asynchronous:
            return self._client.scatter(data, *args, **kwargs)
        return self._scatter_everywhere(data, *args, **kwargs)

    async def _scatter_everywhere(self, data: Any, *args: Any, **kwargs: Any) -> Any:
        future = await self._client.scatter(data, *args, asynchronous=True, **kwargs)
        await self._client.replicate([future], asynchronous=True)
        return future


def _backend_class() -> type:
    from joblib._dask import DaskDistributedBackend

    class ScatterOnceBackend(DaskDistributedBackend):
        """joblib's Dask backend, with scattered arguments kept for the whole run."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.kept = _Scattered()

        def start_call(self) -> None:
            super().start_call()
            self.call_data_futures = self.kept

        def stop_call(self) -> None:
            # The base class clears the per-call cache; give it a throwaway one.
            self.call_data_futures = _Scattered()
            super().stop_call()

        def effective_n_jobs(self, n_jobs: int) -> int:
            # joblib runs n_jobs == 1 in the calling process: a one-thread cluster must
            # still receive the work it was chosen for.
            return max(2, super().effective_n_jobs(n_jobs))

    return ScatterOnceBackend


def _register_sizeof() -> None:
    """Tell Dask the real size of a ``FitData`` (it would otherwise count the object
    header only and pickle the arrays into every batch instead of scattering them)."""
    from dask.sizeof import sizeof

    from astrid_airflow.engine import FitData

    if FitData in getattr(sizeof, "_lookup", {}):
        return

    @sizeof.register(FitData)
    def _sizeof_fit_data(data: FitData) -> int:
        parts = [data.X_train, data.y_train, data.model]
        for X, y in data.eval_sets.values():
            parts += [X, y]
        return int(sum(sizeof(p) for p in parts)) + 1024


def _worker_version() -> str:
    from astrid_airflow._version import __version__  # read at call time (tests patch it)

    return str(__version__)


@dataclass
class DaskRun:
    """What :func:`dask_parallel` yields.

    Attributes
    ----------
    client : distributed.Client
    n_jobs : int
        Pass this as ``n_jobs`` to the engine: the cluster's worker threads (at least 2).
        It sets how many batches a call is cut into, so that every thread gets work.
    backend : joblib backend
        The active backend; ``backend.kept.scatters`` counts the objects shipped.
    """

    client: Any
    n_jobs: int
    backend: Any

    @property
    def scatters(self) -> int:
        """Objects shipped to the cluster so far (one per engine run)."""
        return self.backend.kept.scatters


@contextlib.contextmanager
def dask_parallel(scheduler: Any, *, timeout: float = 30.0,
                  check_workers: bool = True) -> Iterator[DaskRun]:
    """Route the engine's fits to a Dask cluster while the context is active.

    Parameters
    ----------
    scheduler : str or distributed.Client
        Scheduler address (``"tcp://host:8786"``), or a connected client (not closed
        on exit).
    timeout : float, default 30
        Seconds to wait for the connection and for at least one worker.
    check_workers : bool, default True
        Check that every worker imports ``astrid_airflow`` of the same version.

    Yields
    ------
    DaskRun
        Call ``astrid(..., n_jobs=run.n_jobs)`` / ``test_grouping(...)`` inside.

    Raises
    ------
    ParameterError
        The scheduler is unreachable, has no worker within ``timeout``, or a worker
        lacks ``astrid_airflow`` or has another version.
    """
    distributed = _import_distributed()
    from joblib import parallel_config

    from astrid_airflow._version import __version__

    own = not isinstance(scheduler, distributed.Client)
    if own:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ParameterError(f"Invalid scheduler: {scheduler!r}. Expected a Dask "
                                 "scheduler address like 'tcp://host:8786' or a Client.")
        try:
            client = distributed.Client(scheduler.strip(), timeout=timeout,
                                        set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ParameterError(f"Cannot connect to the Dask scheduler at {scheduler!r}: "
                                 f"{type(exc).__name__}: {exc}") from None
    else:
        client = scheduler
    try:
        _wait_for_workers(client, scheduler, timeout)
        if check_workers:
            _check_workers(client, __version__)
        _register_sizeof()
        backend = _backend_class()(client=_ReplicatingClient(client),
                                   wait_for_workers_timeout=timeout)
        n_jobs = max(2, sum(client.ncores().values()))
        with parallel_config(backend=backend):
            yield DaskRun(client=client, n_jobs=n_jobs, backend=backend)
    finally:
        if own:
            client.close()


def _wait_for_workers(client: Any, scheduler: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not client.ncores():
        if time.monotonic() > deadline:
            raise ParameterError(f"The Dask scheduler at {_address(client, scheduler)} has "
                                 f"no worker after {timeout:g} s.")
        time.sleep(0.1)


def _check_workers(client: Any, version: str) -> None:
    try:
        found = client.run(_worker_version, on_error="return")
    except Exception as exc:  # a failed remote call surfaces as many types
        raise ParameterError(f"Cannot run on the Dask workers: {type(exc).__name__}: "
                             f"{exc}") from None
    bad = {w: v for w, v in found.items() if v != version}
    if bad:
        shown = "; ".join(f"{w}: {v!r}" for w, v in sorted(bad.items(), key=str)[:5])
        raise ParameterError(f"Dask workers need astrid_airflow {version} installed; "
                             f"found {shown}.")


def _address(client: Any, scheduler: Any) -> str:
    return repr(scheduler) if isinstance(scheduler, str) else repr(client.scheduler.address)


def astrid_on_dask(data: object, *, scheduler: Any, timeout: float = 30.0,
                   **kwargs: Any) -> Any:
    """:func:`~astrid_airflow.astrid` with its fits on a Dask cluster.

    Parameters
    ----------
    data : DataFrame or path
        The reference table, read here (in the client) and shipped once.
    scheduler : str or distributed.Client
        Scheduler address or client (see :func:`dask_parallel`).
    timeout : float, default 30
    **kwargs
        ``astrid`` arguments; ``n_jobs`` and ``backend`` are set here.

    Returns
    -------
    AstridResult
        Equal to ``astrid(data, n_jobs=1, **kwargs)`` with the same ``random_state``,
        apart from ``seconds``.
    """
    from astrid_airflow.engine import astrid

    _reject_engine_keys(kwargs)
    with dask_parallel(scheduler, timeout=timeout) as run:
        return astrid(data, n_jobs=run.n_jobs, **kwargs)


def test_grouping_on_dask(data: object, *, scheduler: Any, timeout: float = 30.0,
                          **kwargs: Any) -> Any:
    """:func:`~astrid_airflow.test_grouping` with its fits on a Dask cluster.

    Returns the same ``GroupingTestResult`` as ``n_jobs=1`` with the same seed (apart
    from ``seconds``).
    """
    from astrid_airflow.engine import test_grouping

    _reject_engine_keys(kwargs)
    with dask_parallel(scheduler, timeout=timeout) as run:
        return test_grouping(data, n_jobs=run.n_jobs, **kwargs)


test_grouping_on_dask.__test__ = False  # not a pytest test


def _reject_engine_keys(kwargs: dict) -> None:
    taken = sorted(k for k in ("n_jobs", "backend") if k in kwargs)
    if taken:
        raise ParameterError(f"Invalid argument(s) {taken}: on a Dask cluster the number "
                             "of jobs and the backend are set by the cluster.")


# ------------------------------------------------------------- detached runs (deferral)

def _run_detached(data: Any, kwargs: dict) -> Any:
    """On a worker: the whole run, its fits fanned out to the cluster from there."""
    import distributed

    # the worker's own client; joblib's Dask backend secedes this thread from the
    # worker's pool while it waits for the fits (worker_client would secede it twice)
    return astrid_on_dask(data, scheduler=distributed.get_client(), **kwargs)


def submit_astrid(data: object, *, scheduler: str, timeout: float = 30.0,
                  **kwargs: Any) -> str:
    """Start a whole ASTRID run on the cluster and return its key; nothing waits here.

    The run's future is published on the scheduler under the key, so it outlives this
    client: a caller (an Airflow task that defers) can disconnect, poll
    :func:`detached_status` from elsewhere and take the result with
    :func:`collect_astrid`. The result equals :func:`astrid_on_dask`'s.
    """
    import uuid

    distributed = _import_distributed()
    _reject_engine_keys(kwargs)
    key = f"astrid-run-{uuid.uuid4().hex}"
    try:
        client = distributed.Client(str(scheduler).strip(), timeout=timeout,
                                    set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ParameterError(f"Cannot connect to the Dask scheduler at {scheduler!r}: "
                             f"{type(exc).__name__}: {exc}") from None
    with client:
        _wait_for_workers(client, scheduler, timeout)
        future = client.submit(_run_detached, data, kwargs, key=key, pure=False)
        client.publish_dataset(future, name=key)
    return key


async def detached_status(scheduler: str, key: str, *, timeout: float = 30.0) -> str:
    """``pending``, ``finished``, ``error``, ``cancelled`` or ``lost`` (asyncio: a trigger)."""
    import asyncio

    distributed = _import_distributed()
    async with distributed.Client(str(scheduler).strip(), asynchronous=True,
                                  timeout=timeout, set_as_default=False) as client:
        try:
            future = await client.get_dataset(key)
        except KeyError:
            return "lost"  # the scheduler restarted or the key was collected
        # a new client learns the future's state from the scheduler's messages: give
        # them a moment before reading it
        for _ in range(10):
            if future.status != "pending":
                break
            await asyncio.sleep(0.1)
        return str(future.status)


def collect_astrid(scheduler: str, key: str, *, timeout: float = 30.0) -> Any:
    """The result of a detached run (its error raised here), then release it."""
    distributed = _import_distributed()
    with distributed.Client(str(scheduler).strip(), timeout=timeout,
                            set_as_default=False) as client:
        try:
            future = client.get_dataset(key)
        except KeyError:
            raise ParameterError(f"No ASTRID run {key!r} on the Dask scheduler at "
                                 f"{scheduler!r} (restarted, or collected already).") from None
        try:
            return future.result()
        finally:
            client.unpublish_dataset(key)
