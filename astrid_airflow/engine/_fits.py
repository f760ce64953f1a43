"""The fit runner: many (GoldenEye permutation → fit → score) tasks, in parallel.

Every task carries its own ``SeedSequence``, spawned in the parent before anything is
dispatched, so a run gives identical scores for any ``n_jobs`` and joblib backend.

For the presets the table is encoded once (see ``_encoding``) and the permutation is
applied to encoded rows; a user-supplied pipeline is refitted on the permuted raw table.

Threads: every fit runs with one BLAS/OpenMP thread (``threadpoolctl``), in the parent
for ``n_jobs=1`` and in each joblib worker otherwise, so ``n_jobs`` is the number of
cores used and workers never oversubscribe them. The forest preset gets float32 data
(what its trees use), so no per-fit conversion is needed.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from ._classifiers import make_classifier, set_categorical, set_random_state
from ._forest import RandomForest
from ._permutation import goldeneye_indices
from ._progress import RunProgress
from ._scoring import score

log = logging.getLogger("astrid_airflow")

Groups = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Task:
    """One fit: permute the training rows by ``groups`` (None: no permutation), fit,
    and score on the evaluation set ``eval_set``."""

    eval_set: str
    groups: Groups | None
    seed: np.random.SeedSequence


@dataclass
class FitData:
    """Everything a worker needs; shipped once per batch of tasks."""

    X_train: np.ndarray | pd.DataFrame
    y_train: np.ndarray
    eval_sets: dict[str, tuple[np.ndarray | pd.DataFrame, np.ndarray]]
    model: object
    scoring: str
    n_classes: int
    # encoded path: output columns of every attribute; None on the raw-DataFrame path
    columns_of_attribute: list[np.ndarray] | None = None
    attribute_names: list[str] = field(default_factory=list)


def prepare_fit_data(classifier: object, X_train: pd.DataFrame, y_train: np.ndarray,
                     eval_sets: dict[str, tuple[pd.DataFrame, np.ndarray]], *,
                     scoring: str, n_classes: int, params: dict | None = None) -> FitData:
    """Encode once for presets; keep raw DataFrames for user pipelines."""
    names = [str(c) for c in X_train.columns]
    if isinstance(classifier, str):
        pipeline = make_classifier(classifier, n_attributes=len(names), params=params)
        encoder = pipeline.steps[0][1].fit(X_train)
        model = pipeline.steps[-1][1]
        set_categorical(model, encoder)
        owner = encoder.attribute_of_column_
        # Trees split (and histograms bin) float32 values; converting once saves a copy
        # per fit and half the memory.
        dtype = np.float32 if isinstance(model, (RandomForest, HistGradientBoostingClassifier)) \
            else np.float64
        return FitData(
            X_train=np.ascontiguousarray(encoder.transform(X_train), dtype=dtype),
            y_train=y_train,
            eval_sets={k: (np.ascontiguousarray(encoder.transform(X), dtype=dtype), y)
                       for k, (X, y) in eval_sets.items()},
            model=model, scoring=scoring, n_classes=n_classes,
            columns_of_attribute=[np.flatnonzero(owner == i) for i in range(len(names))],
            attribute_names=names)
    return FitData(X_train=X_train.reset_index(drop=True), y_train=y_train,
                   eval_sets={k: (X.reset_index(drop=True), y) for k, (X, y) in
                              eval_sets.items()},
                   model=make_classifier(classifier, params=params), scoring=scoring,
                   n_classes=n_classes,
                   attribute_names=names)


def _permuted(data: FitData, groups: Groups, rng: np.random.Generator):
    perm = goldeneye_indices(data.y_train, len(groups), rng)
    if data.columns_of_attribute is None:
        X = data.X_train
        parts = {}
        for g, attrs in enumerate(groups):
            cols = [data.attribute_names[a] for a in attrs]
            block = X[cols].iloc[perm[g]]
            for c in cols:
                parts[c] = block[c].to_numpy()
        return pd.DataFrame({c: pd.Series(parts[c], dtype=X[c].dtype)
                             for c in data.attribute_names})
    out = np.empty(data.X_train.shape, dtype=data.X_train.dtype)  # not a memmap subclass
    for g, attrs in enumerate(groups):
        cols = np.concatenate([data.columns_of_attribute[a] for a in attrs])
        if cols.size:
            out[:, cols] = data.X_train[np.ix_(perm[g], cols)]
    return out


def run_one(data: FitData, task: Task) -> float:
    rng = np.random.default_rng(task.seed)
    X = data.X_train if task.groups is None else _permuted(data, task.groups, rng)
    model = set_random_state(clone(data.model), int(rng.integers(0, 2**31 - 1)))
    model.fit(X, data.y_train)
    X_eval, y_eval = data.eval_sets[task.eval_set]
    y_pred = np.asarray(model.predict(X_eval))
    return score(data.scoring, y_eval, y_pred, data.n_classes)


def _run_chunk(data: FitData, tasks: Sequence[Task]) -> tuple[list[float], float]:
    from joblib import parallel_config

    start = time.process_time()
    # a batch is one worker's: a classifier's own joblib calls (a ColumnTransformer's)
    # run here, not sent back to a Dask cluster as tasks of their own
    # (docs/scale-out.md)
    with threadpool_limits(limits=1), parallel_config(backend="sequential"):
        scores = [run_one(data, t) for t in tasks]
    return scores, time.process_time() - start


def backend_kind(backend: str | None) -> str | None:
    """``"processes"`` or ``"threads"`` for a local joblib backend, None otherwise (a
    cluster such as Dask). ``backend=None`` looks at the active ``parallel_config``."""
    if backend is None:
        from joblib.parallel import get_active_backend

        backend = type(get_active_backend()[0]).__name__.lower().replace("backend", "")
    if backend in ("loky", "multiprocessing"):
        return "processes"
    if backend in ("threading", "sequential"):
        return "threads"
    return None


@contextmanager
def shared_fit_data(data: FitData, n_jobs: int, backend: str | None):
    """``data`` with its large arrays memory-mapped from a folder this run owns.

    joblib would memory-map large arrays itself, but anew for every ``Parallel`` call,
    registering every file with loky's resource tracker; a worker killed mid-fit (a
    task timeout's SIGTERM) never releases its references, which the tracker reports
    as leaked at exit. Arrays already backed by a file are passed to workers by file
    name (no copy, no registration), and the folder is removed here on any exit. Only
    for local process workers: threads share memory, a cluster cannot see the files.
    The folder is made in ``JOBLIB_TEMP_FOLDER`` (or the usual temporary directory).
    """
    if (n_jobs == 1 and backend is None) or backend_kind(backend) != "processes":
        yield data
        return
    folder = tempfile.mkdtemp(prefix="astrid-fits-", dir=os.environ.get("JOBLIB_TEMP_FOLDER"))
    counter = iter(range(1 << 30))

    def mapped(a):
        if not isinstance(a, np.ndarray) or a.nbytes < _MEMMAP_BYTES:
            return a
        path = os.path.join(folder, f"{next(counter)}.npy")
        np.save(path, a)
        return np.load(path, mmap_mode="r")

    try:
        yield dataclasses.replace(
            data, X_train=mapped(data.X_train), y_train=mapped(data.y_train),
            eval_sets={k: (mapped(X), mapped(y)) for k, (X, y) in data.eval_sets.items()})
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# joblib's own threshold for memory-mapping an argument (max_nbytes="1M")
_MEMMAP_BYTES = 1_000_000


class _Progress:
    """A progress bar on a terminal, a log line every ~10 % otherwise."""

    def __init__(self, total: int, desc: str, enabled: bool | None,
                 tracker: RunProgress | None = None):
        self.total, self.desc, self.done = total, desc, 0
        self.tracker = tracker
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self._bar = None
        self._next_log = 0.1
        self._start = time.perf_counter()
        if self.enabled and sys.stderr.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="fit", leave=False, file=sys.stderr)

    def update(self, n: int) -> None:
        self.done += n
        if self.tracker is not None:
            self.tracker.update(n)
        if self._bar is not None:
            self._bar.update(n)
        elif (self.enabled and self.tracker is None and self.total
              and self.done / self.total >= self._next_log):
            log.info("%s: %d/%d fits (%.0f s)", self.desc, self.done, self.total,
                     time.perf_counter() - self._start)
            self._next_log += 0.1

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def run_tasks(data: FitData, tasks: Sequence[Task], *, n_jobs: int = 1,
              backend: str | None = None, progress: bool | None = None,
              desc: str = "fits", stats: dict | None = None,
              tracker: RunProgress | None = None) -> np.ndarray:
    """Run ``tasks`` and return their scores in task order.

    ``stats["cpu_seconds"]`` (when a dict is given) accumulates the CPU time of the fits,
    measured in the process that ran them. ``tracker`` (a whole run's ``RunProgress``)
    counts the fits done; with it, lines for logs come from its heartbeat and this call
    only draws the terminal bar.
    """
    tasks = list(tasks)
    stats = {} if stats is None else stats
    stats.setdefault("cpu_seconds", 0.0)
    if tracker is not None:
        tracker.update(0, desc)
        progress = False if progress is False else None  # bar on a terminal only
    bar = _Progress(len(tasks), desc, progress, tracker)
    try:
        if n_jobs == 1 and backend is None:
            scores = []
            start = time.process_time()
            with threadpool_limits(limits=1):
                for t in tasks:
                    scores.append(run_one(data, t))
                    bar.update(1)
            stats["cpu_seconds"] += time.process_time() - start
            return np.asarray(scores, dtype=float)
        n_workers = n_jobs if n_jobs > 0 else 64
        n_batches = min(len(tasks), max(1, 4 * n_workers))
        batches = [b.tolist() for b in np.array_split(np.arange(len(tasks)), n_batches)
                   if len(b)]
        parallel = Parallel(n_jobs=n_jobs, backend=backend, return_as="generator")
        scores = []
        for idx, (result, cpu) in zip(batches,
                                      parallel(delayed(_run_chunk)(data, [tasks[i] for i in b])
                                               for b in batches)):
            scores.extend(result)
            stats["cpu_seconds"] += cpu
            bar.update(len(idx))
        return np.asarray(scores, dtype=float)
    finally:
        bar.close()
