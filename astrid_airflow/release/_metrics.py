"""Privacy and utility metrics of GoldenEye surrogates (ASTRID paper, Sec. 6.2).

Sec. 6.2, "Anonymisation and Surrogate Data", measures anonymity by P_anon, the
proportion of the original table's rows that are still intact after shuffling, and
utility by the accuracy of a classifier trained on the surrogate. This module computes

* :func:`intact_row_proportion`: the measured P_anon;
* :func:`expected_intact_row_proportion`: its expectation from the class and group
  value counts, before any shuffling;
* :func:`largest_group_unique_share`: the linkage risk P_anon misses (rows identifiable
  by the values of the largest group, which always travel together with their class);

and :mod:`._utility` the utility (train on the surrogate, test on real rows), and
:mod:`._surrogate_metrics` all of them for one surrogate.

The row hashes live in :mod:`._hashing`, the sort-free counting in :mod:`._counting`,
the match probabilities in :mod:`._match_probability` and column-wise table access in
:mod:`._table_source`.

Rows are compared through 64-bit row hashes computed column by column in Arrow (see
:func:`~._hashing.row_hashes`), so the privacy metrics scale to tables of 10M rows
without pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow.engine import Grouping, as_grouping
from astrid_airflow.io import read_arrow

from ._counting import coded_counts, first_rows, hashed_counts, key_counts, share_found
from ._hashing import U64, Scratch, accumulate, read_column, read_group, row_hashes, splitmix
from ._match_probability import expected, match_probabilities
from ._surrogate import resolve_grouping
from ._table_source import TableSource, table_source

# -------------------------------------------------------------------------- P_anon

def intact_row_proportion(original: Any, surrogate: Any, *,
                          columns: Sequence[str] | None = None,
                          counted: np.ndarray | None = None) -> float:
    """The paper's P_anon: share of the original's unique rows found intact in the surrogate.

    Parameters
    ----------
    original, surrogate : DataFrame, pyarrow.Table or Parquet/CSV path
        The table before and after shuffling.
    columns : sequence of str, optional
        Columns that make up a row; default every column of ``original`` (attributes
        and class).
    counted : bool array, optional
        The original rows whose intact copies count (``disclosing_rows``, under a
        declared attacker model); the denominator stays every distinct row.

    Returns
    -------
    float
        ``|{distinct original rows r : r occurs in the surrogate}| / |{distinct original
        rows}|`` (Sec. 6.2). 0 means no original row survives; 1 means all do.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 2, 3], "y": [0, 0, 0]})
    >>> intact_row_proportion(t, t.iloc[::-1])
    1.0
    """
    every, share = intact_row_shares(original, surrogate, columns=columns, counted=counted)
    return every if counted is None else share


def intact_row_shares(original: Any, surrogate: Any, *, columns: Sequence[str] | None = None,
                      counted: np.ndarray | None = None) -> tuple[float, float]:
    """``(P_anon, counted share)`` of :func:`intact_row_proportion`, the tables hashed
    once: the share of every distinct original row found intact, and of those among the
    ``counted`` rows (over every distinct row; P_anon again when ``counted`` is None)."""
    orig = table_source(original, "original")
    surr = table_source(surrogate, "surrogate")
    cols = list(orig.columns) if columns is None else [str(c) for c in columns]
    if not cols:
        raise ParameterError("Invalid columns: []. Must name at least one column.")
    orig.require(cols, "original table")
    surr.require(cols, "surrogate")
    if orig.num_rows == 0:
        raise DataError("The original table is empty (0 rows).")
    h, found = row_hashes(orig, cols), row_hashes(surr, cols)
    distinct = h[first_rows(h)]
    every = float(share_found(distinct, found))
    if counted is None:
        return every, every
    watched = h[np.asarray(counted, dtype=bool)]
    if not watched.size:
        return every, 0.0
    watched = watched[first_rows(watched)]
    return every, float(share_found(watched, found)) * watched.size / distinct.size



def _group_counts(src: TableSource, grouping: Grouping, class_hash: np.ndarray,
                  rows: np.ndarray) -> np.ndarray:
    """``(len(rows), G)``: for each of ``rows``, the same-class rows sharing its group values.

    Kept only for the representative rows and as uint32, to bound memory on big tables.
    """
    out = np.empty((rows.shape[0], grouping.k), dtype=np.uint32)
    for g, cols in enumerate(grouping.groups):
        key = row_hashes(src, cols)
        key ^= class_hash
        out[:, g] = key_counts(splitmix(key, out=key))[rows]
    return out


def _class_hash_and_sizes(src: TableSource, target: str) -> tuple[np.ndarray, np.ndarray]:
    h = row_hashes(src, [target])
    return _class_hash_and_sizes_of(h)


def _class_hash_and_sizes_of(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # h: row hashes of the class column; returns a salted class key and class sizes.
    return splitmix(h + U64(1)), key_counts(h)


def _without_identifiers(src: TableSource, artefact: Any) -> TableSource:
    """``src`` without the artefact's declared identifiers: read without them into
    memory when it carries any (a batch staged with its IDs), else itself."""
    ids = [c for c in artefact.identifiers if c in src.columns]
    if not ids:
        return src
    if src.table is None:
        table = read_arrow(src.path, [c for c in src.columns if c not in ids])
    else:
        table, _ = artefact.without_identifiers(src.table)
    return TableSource(table, "table")


def prepared_source(table: Any, grouping_or_artefact: Any, target: str | None
             ) -> tuple[TableSource, Grouping, str, Any]:
    grouping, target, artefact = resolve_grouping(grouping_or_artefact, target)
    src = table_source(table, "table")
    if artefact is not None:
        src = _without_identifiers(src, artefact)
        if src.table is not None:
            artefact.check_table(src.table)
    src.require([target], "table")
    grouping.check_partition_of([c for c in src.columns if c != target])
    if src.num_rows == 0:
        raise DataError("The table is empty (0 rows).")
    return src, grouping, target, artefact


def expected_intact_row_proportion(table: Any, grouping: Any, target: str | None = None
                                   ) -> float:
    """Expected P_anon of a GoldenEye surrogate of ``table``, before shuffling.

    Parameters
    ----------
    table : DataFrame, pyarrow.Table or Parquet/CSV path
        The table to be shuffled.
    grouping : GroupingArtefact, Grouping, str or list of lists
        The grouping (an artefact supplies ``target``).
    target : str, optional
        The class column.

    Returns
    -------
    float
        The mean, over the distinct rows r of ``table``, of P(r occurs in the surrogate),
        which is the expectation of :func:`intact_row_proportion`.

    Notes
    -----
    With G groups and a row whose group values are each unique in its class of n_c rows,
    the probability is exactly n_c^-(G-1). Duplicated group values raise it; the exact
    probability is P(J_1 ∩ ... ∩ J_G ≠ ∅) for independent uniform random subsets of the
    class with the sizes m_g of the duplicate sets (see :func:`match_probabilities`).
    A one-group grouping gives 1: the surrogate protects nothing.
    """
    src, grouping, target, _ = prepared_source(table, grouping, target)
    if grouping.k == 1:
        return 1.0
    class_hash, sizes = _class_hash_and_sizes(src, target)
    first = first_rows(row_hashes(src, [*grouping.columns, target]))
    counts = _group_counts(src, grouping, class_hash, first)
    return float(match_probabilities(counts, sizes[first]).mean())


def largest_group_unique_share(table: Any, grouping: Any, target: str | None = None
                               ) -> float:
    """Share of rows whose values on the largest group's columns are unique in the table.

    GoldenEye keeps each group's columns together and with their class, so a row whose
    largest-group values are unique can be linked back by anyone who knows those values,
    revealing its class, however small P_anon is. The largest group is the one with the
    most columns (the first such in the grouping's order).

    Parameters
    ----------
    table : DataFrame, pyarrow.Table or Parquet/CSV path
    grouping : GroupingArtefact, Grouping, str or list of lists
    target : str, optional
        Only used to validate the grouping against the table's attributes.

    Returns
    -------
    float
        ``|{i : no other row has row i's values on the largest group}| / n_rows``.
    """
    if target is None and not hasattr(grouping, "target"):
        resolved = as_grouping(grouping)
        src = table_source(table, "table")
        src.require(list(resolved.columns), "table")
        if src.num_rows == 0:
            raise DataError("The table is empty (0 rows).")
    else:
        src, resolved, _, _ = prepared_source(table, grouping, target)
    largest = max(resolved.groups, key=len)
    return float(np.mean(key_counts(row_hashes(src, largest)) == 1))


def privacy_metrics(src: TableSource, surrogate: Any, grouping: Grouping, target: str
                     ) -> tuple[float, float, float]:
    """``(intact, expected, unique share)`` as the three public functions give them.

    One pass over the columns instead of one per metric: each column of either table is
    read once (Parquet strings dictionary-encoded, never one string per row) and hashed
    block by block (:class:`_Column`); its codes are counted where that is exact and
    cheap (:func:`coded_counts`: ``np.bincount``, no hash table, no sort), other groups
    count their hashes. Groups are handled on :func:`~astrid_airflow.engine.n_threads`
    threads (Arrow reads, numpy, ``bincount`` and sorts free the GIL), at most that many
    at a time, and their counts are taken in order. The row keys are sums over the groups
    (:func:`accumulate`, both sides alike), so each thread adds the groups it handles to
    its own sums and the total does not depend on the thread count; they group rows as
    the chained column hashes of :func:`row_hashes` do, which changes no count.
    """
    import threading

    surr = table_source(surrogate, "surrogate")
    surr.require([*grouping.columns, target], "surrogate")
    n, k = src.num_rows, grouping.k
    largest = grouping.groups.index(max(grouping.groups, key=len))
    cls = read_column(src, target, codes=True)
    classes, n_classes = cls.codes, cls.levels
    if classes is None:
        classes, uniques = pd.factorize(cls.hashes())
        n_classes = len(uniques)
    class_sizes = np.bincount(classes, minlength=n_classes)
    lock = threading.Lock()
    salt: list[np.ndarray] = []
    sums: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    scratch = Scratch()

    def salted() -> np.ndarray:  # the class salt of hashed group keys, made once
        with lock:
            if not salt:
                salt.append(splitmix(cls.hashes() + U64(1)))
            return salt[0]

    def group(g: int) -> tuple[np.ndarray | None, float | None]:
        with lock:  # this thread's row-key sums
            me = threading.get_ident()
            if me not in sums:
                sums[me] = np.zeros(n, dtype=U64), np.zeros(surr.num_rows, dtype=U64)
            key, key_s = sums[me]
        col = read_group(src, grouping.groups[g], codes=True, scratch=scratch)
        share, with_class = g == largest, k > 1
        counted = None if col.codes is None else \
            coded_counts(col.codes, col.levels, classes, n_classes, share, with_class)
        col.codes = None
        if counted is None:
            counted = hashed_counts(col.hashes(scratch.get("hashes", n, U64)), salted,
                                     share, with_class, scratch)
        accumulate(key, col.blocks(), g)
        del col
        accumulate(key_s, read_group(surr, grouping.groups[g], codes=False).blocks(), g)
        return counted

    counts: list[np.ndarray | None] = [None] * k
    share = 0.0
    for g, (c, g_share) in enumerate(_in_order(group, range(k))):
        counts[g] = c
        share = g_share if g_share is not None else share
    (key, key_s), *others = sums.values()
    for other, other_s in others:
        key += other
        key_s += other_s
    del others, salt[:]
    sums.clear()
    scratch.release()
    accumulate(key, cls.blocks(), k)
    accumulate(key_s, read_column(surr, target, codes=False).blocks(), k)
    # Rows distinct on some group (with their class) are distinct: no duplicate rows.
    distinct = share == 1.0 or (k > 1 and any(c is None for c in counts))
    first = None if distinct else first_rows(key)
    intact = float(share_found(key if first is None else key[first], key_s))
    del key, key_s
    if k == 1:
        return intact, 1.0, share
    return intact, expected(counts, k, first, classes, class_sizes), share


def _in_order(fn: Callable[[Any], Any], items: Sequence[Any]) -> Any:
    """Yield ``fn(x)`` for ``x`` in ``items`` in order, computed on
    :func:`~astrid_airflow.engine.n_threads` threads at most that many ahead (so at
    most that many results are alive besides the one being consumed)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from astrid_airflow.engine import n_threads

    workers = min(n_threads(), len(items))
    if workers <= 1:
        for x in items:
            yield fn(x)
        return
    pool = ThreadPoolExecutor(workers)
    pending: deque = deque()
    try:
        for x in items:
            pending.append(pool.submit(fn, x))
            if len(pending) == workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

