"""The GoldenEye permutation (Henelius et al. 2014; ASTRID paper, Sec. 3.2.2).

Rows are permuted within each class, with one independent uniform permutation per
group of attributes, so the columns of one group move together.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError
from astrid_airflow._validation import check_seed_sequence

from ._grouping import Grouping, as_grouping


def class_codes(labels: Sequence | np.ndarray | pd.Series) -> np.ndarray:
    """Integer codes of class labels (missing labels are rejected)."""
    series = pd.Series(labels)
    if series.isna().any():
        raise DataError(f"The class column has {int(series.isna().sum())} missing value(s).")
    codes, _ = pd.factorize(series, sort=True)
    return codes.astype(np.int64, copy=False)


def goldeneye_indices(codes: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """Source-row indices of a GoldenEye permutation.

    Parameters
    ----------
    codes : ndarray of shape (n_rows,)
        Integer class code of every row.
    n_groups : int
        Number of groups, i.e. of independent permutations to draw.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    ndarray of shape (n_groups, n_rows)
        Row ``g`` is a permutation ``pi_g`` of ``0..n_rows-1`` with
        ``codes[pi_g[i]] == codes[i]``; the permuted table takes its group-``g``
        columns from rows ``pi_g``. Each ``pi_g`` is uniform over the within-class
        permutations and independent of the others (Lemma 1 of the paper).
    """
    codes = np.asarray(codes)
    n = codes.shape[0]
    out = np.empty((n_groups, n), dtype=np.intp)
    if n == 0:
        return out
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    for block in np.split(order, bounds):
        # One vectorised draw per class: each of the n_groups rows is shuffled on its own.
        out[:, block] = rng.permuted(np.broadcast_to(block, (n_groups, block.size)), axis=1)
    return out


def goldeneye_permute(
    table: pd.DataFrame,
    *,
    target: str,
    grouping: Grouping | Sequence[Sequence[str]] | str,
    random_state: object = None,
) -> pd.DataFrame:
    """Return a GoldenEye-permuted copy of ``table``.

    Parameters
    ----------
    table : DataFrame
        Attributes plus the class column; any dtypes.
    target : str
        Name of the class column; it is left in place.
    grouping : Grouping, list of lists of column names, or ``"a,b;c"`` text
        Partition of the non-class columns.
    random_state : None, int, SeedSequence or Generator
        Seed of the permutation.

    Returns
    -------
    DataFrame
        Same index, columns and dtypes; within every class each column keeps its
        multiset of values, and the columns of one group stay aligned row-wise; the
        class column is unchanged, row for row (the paper's permutation, for analysis).
        :func:`~astrid_airflow.make_surrogate` (what is published) draws the same group
        permutations for a seed and then publishes the rows in a random order
        (:func:`release_permutations`): its row ``j`` is this result's row
        ``row_order(n, k, seed)[j]`` (one implementation: :func:`seed_of_copies`,
        :func:`group_permutations`, :func:`shuffle_frame`). Do not publish this table
        when the input's row order can identify anyone (docs/privacy.md).
    """
    grouping = as_grouping(grouping)
    if target not in table.columns:
        raise DataError(f"Target column {target!r} is not in the table.")
    grouping.check_partition_of([c for c in table.columns if c != target])
    codes = pandas_class_codes(table[target], target)
    perms = group_permutations(codes, grouping.k, seed_of_copies(random_state, 1)[0])
    return shuffle_frame(table, grouping, perms, target)


def seed_of_copies(random_state: object, n_copies: int) -> list[np.random.SeedSequence]:
    """One ``SeedSequence`` per surrogate copy, spawned from the root of ``random_state``.

    Copy ``i`` spawns one child per group in :func:`group_permutations`, so copy 0 of
    ``n_copies=k`` equals the single copy of ``n_copies=1`` (docs/engine.md, "Seeds").
    """
    return check_seed_sequence(random_state).spawn(n_copies)


def small_codes(codes: np.ndarray, n_classes: int) -> np.ndarray:
    # A narrow dtype keeps goldeneye_indices' stable argsort cheap on big tables.
    for dtype in (np.int8, np.int16, np.int32):
        if n_classes <= np.iinfo(dtype).max:
            return codes.astype(dtype, copy=False)
    return codes.astype(np.int64, copy=False)


def pandas_class_codes(labels: pd.Series, target: str) -> np.ndarray:
    """Class codes numbered in order of first appearance (nulls rejected)."""
    n_missing = int(labels.isna().sum())
    if n_missing:
        raise DataError(f"Target column {target!r} has {n_missing} missing value(s); "
                        "every row needs a class to be shuffled within.")
    codes, uniques = pd.factorize(labels, sort=False)
    return small_codes(codes, len(uniques))


def group_permutations(codes: np.ndarray, k: int, seed: np.random.SeedSequence,
                       rows: np.ndarray | None = None) -> np.ndarray:
    """Source rows of one surrogate: ``(k, n)``, row ``g`` for group ``g``.

    One independent within-class permutation ``pi_g`` per group, each equal to
    :func:`~astrid_airflow.goldeneye_indices` with its own spawned stream (children
    ``0..k-1`` of ``seed``); int32 when the row count allows (halves the memory of a
    10M-row table's index arrays). The groups are permuted on :data:`THREADS` threads
    (each with its own generator, so the result does not depend on the thread count).

    Parameters
    ----------
    codes : ndarray of shape (n,)
        Class code of every row.
    k : int
        Number of groups.
    seed : numpy.random.SeedSequence
        The copy's seed (a fresh one: its first ``k`` children are spawned).
    rows : ndarray of shape (n,), optional
        A row order ``sigma`` (:func:`row_order`); row ``g`` of the result is then the
        composition ``pi_g[sigma]``, the group-``g`` source rows of a release whose row
        ``j`` is source row ``sigma[j]`` (the class gathered by ``sigma``). Composed for
        free: each group's shuffled class blocks are scattered to ``sigma^-1[order]``
        instead of ``order`` (one index array for all groups), no gather per group.
    """
    n = codes.shape[0]
    dtype = index_dtype(n)
    out = np.empty((k, n), dtype=dtype)
    if n == 0:
        return out
    order, bounds = class_blocks(codes)
    order = order.astype(dtype, copy=False)
    slots = None
    if rows is not None:
        # out[inv[r]] = pi_g[r] for every source row r, i.e. out[j] = pi_g[rows[j]].
        inv = np.empty(n, dtype=dtype)
        inv[rows] = np.arange(n, dtype=dtype)
        slots = inv[order]
        del inv

    def one(g_child: tuple[int, np.random.SeedSequence]) -> None:
        g, child = g_child
        within_class_permutation(order, bounds, np.random.default_rng(child), out[g],
                                 slots=slots)

    run_threaded(one, list(enumerate(seed.spawn(k))))
    return out


def index_dtype(n: int) -> type:
    """int32 row indices when ``n`` rows allow, else int64."""
    return np.int32 if n < np.iinfo(np.int32).max else np.int64


def row_order(n: int, k: int, seed: np.random.SeedSequence) -> np.ndarray:
    """The published row order ``sigma`` of a surrogate: uniform over all ``n!`` orders.

    A release's row ``j`` is source row ``sigma[j]`` (class and, composed with the group
    permutations, every group), so the output's order carries nothing of the input's
    (docs/privacy.md, first section). Drawn from child ``k`` of the copy's ``seed``,
    the one after the ``k`` groups' children: the group permutations of a seed are those
    drawn before row orders existed, and copy 0 of ``n_copies`` copies is still the
    single copy. The child is built from its spawn key, so it does not depend on how many
    children ``seed`` has spawned already.
    """
    child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, k),
                                   pool_size=seed.pool_size)
    sigma = np.arange(n, dtype=index_dtype(n))
    np.random.default_rng(child).shuffle(sigma)
    return sigma


def release_permutations(codes: np.ndarray, k: int, seed: np.random.SeedSequence
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``(sigma, perms)`` of one published surrogate: its row order and group sources.

    ``sigma`` is :func:`row_order`; ``perms[g] = pi_g[sigma]`` (:func:`group_permutations`
    composed with it). The one recipe of :func:`~astrid_airflow.make_surrogate` and
    :func:`~astrid_airflow.shuffle_file`: output row ``j`` has the class of source row
    ``sigma[j]`` and the group-``g`` columns of source row ``perms[g, j]``.
    """
    sigma = row_order(codes.shape[0], k, seed)
    return sigma, group_permutations(codes, k, seed, rows=sigma)


#: Threads for the permutations and the file shuffle's gathers and write (None: Arrow's
#: CPU count). Output never depends on it: each group has its own generator and every
#: chunk is written in order.
THREADS: int | None = None


def n_threads() -> int:
    if THREADS is not None:
        return max(1, int(THREADS))
    import pyarrow as pa

    return max(1, pa.cpu_count())


def run_threaded(fn: Callable[[Any], Any], items: Sequence[Any],
                 workers: int | None = None) -> list[Any]:
    """``[fn(x) for x in items]``, in order, on ``workers`` threads (default
    :func:`n_threads`; numpy and Arrow free the GIL)."""
    workers = min(n_threads() if workers is None else workers, len(items))
    if workers <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def class_blocks(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, bounds)``: rows sorted stably by class, and where each class starts.

    Class ``j`` (in ascending code order) is ``order[bounds[j]:bounds[j + 1]]``, the
    blocks :func:`goldeneye_indices` permutes; computed once, reusable for many groups.
    """
    codes = np.asarray(codes)
    order = np.argsort(codes, kind="stable")
    inner = np.flatnonzero(np.diff(codes[order])) + 1
    return order, np.concatenate([[0], inner, [codes.shape[0]]]).astype(np.intp)


def within_class_permutation(order: np.ndarray, bounds: np.ndarray,
                             rng: np.random.Generator, out: np.ndarray,
                             slots: np.ndarray | None = None) -> np.ndarray:
    """One group's GoldenEye permutation into ``out``: ``goldeneye_indices(codes, 1, rng)[0]``.

    Parameters
    ----------
    order, bounds : ndarray
        From :func:`class_blocks`; ``order`` in the dtype wanted for ``out`` (e.g. int32).
    rng : numpy.random.Generator
        Consumed exactly as :func:`goldeneye_indices` consumes it for one group.
    out : ndarray of shape (n_rows,)
        Written in place and returned.
    slots : ndarray of shape (n_rows,), optional
        Where the shuffled ``order`` is scattered (default ``order``): ``sigma^-1[order]``
        gives ``pi[sigma]`` for a row order ``sigma`` (:func:`group_permutations`).

    Notes
    -----
    ``Generator.shuffle`` of a contiguous 1-D block draws the same swaps as
    ``permuted`` of the same length (a test pins the equality) and releases the GIL,
    so groups can be permuted on several threads; shuffling the narrow ``order`` copy
    halves the memory traffic of the random swaps.
    """
    buf = order.copy()
    for lo, hi in itertools.pairwise(bounds):
        rng.shuffle(buf[lo:hi])
    out[order if slots is None else slots] = buf
    return out


def shuffle_frame(table: pd.DataFrame, grouping: Grouping, perms: np.ndarray,
                  target: str, rows: np.ndarray | None = None, *,
                  positions: np.ndarray | None = None) -> pd.DataFrame:
    """``table`` with group ``g``'s columns taken from rows ``perms[g]``.

    ``rows`` (a row order ``sigma``, :func:`release_permutations`) gathers the class
    column too; without it the class stays in place (:func:`goldeneye_permute`). The
    index is ``table``'s, position for position: an index label never travels with a
    row's class (it could be an identifier). ``positions``: only these output rows, the
    frame ``shuffle_frame(...).iloc[positions]`` built without the others (a sample of
    a large surrogate).
    """
    group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
    index = table.index
    if positions is not None:
        perms, index = perms[:, positions], index[positions]
        rows = positions if rows is None else rows[positions]
    columns = {}
    for c in table.columns:
        series = table[c]
        if c == target and rows is None:
            columns[c] = series
            continue
        idx = rows if c == target else perms[group_of[c]]
        values = series.array.take(idx) if not isinstance(series.dtype, np.dtype) else \
            series.to_numpy(copy=False)[idx]
        # the taken values are new arrays: the Series need not copy them again
        columns[c] = pd.Series(values, index=index, name=c, dtype=series.dtype, copy=False)
    # consolidated (one copy of the numeric columns): the classifiers' fits on a frame of
    # one block per column were 3 times slower (25,000 rows, the utility check)
    out = pd.DataFrame(columns, index=index)
    out.attrs = dict(table.attrs)
    return out
