"""The GoldenEye permutation (Henelius et al. 2014; ASTRID paper, Sec. 3.2.2).

Rows are permuted within each class, with one independent uniform permutation per
group of attributes, so the columns of one group move together.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._errors import DataError
from ._grouping import Grouping
from ._validation import check_seed_sequence

__all__ = ["goldeneye_indices", "goldeneye_permute", "class_codes"]


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
        multiset of values, and the columns of one group stay aligned row-wise.
    """
    grouping = _as_grouping(grouping)
    if target not in table.columns:
        raise DataError(f"Target column {target!r} is not in the table.")
    attrs = [c for c in table.columns if c != target]
    grouping.check_partition_of(attrs)
    rng = np.random.default_rng(check_seed_sequence(random_state))
    perm = goldeneye_indices(class_codes(table[target]), grouping.k, rng)
    columns = {}
    for g, cols in enumerate(grouping.groups):
        rows = perm[g]
        for c in cols:
            columns[c] = table[c].to_numpy(copy=False)[rows] if _plain(table[c]) else \
                table[c].iloc[rows].to_numpy()
    out = table.copy()
    for c, values in columns.items():
        out[c] = pd.Series(values, index=table.index, dtype=table[c].dtype)
    return out


def _plain(series: pd.Series) -> bool:
    return isinstance(series.dtype, np.dtype)


def _as_grouping(grouping: Grouping | Sequence[Sequence[str]] | str) -> Grouping:
    if isinstance(grouping, Grouping):
        return grouping
    if isinstance(grouping, str):
        return Grouping.parse(grouping)
    return Grouping(grouping)


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
                             rng: np.random.Generator, out: np.ndarray) -> np.ndarray:
    """One group's GoldenEye permutation into ``out``: ``goldeneye_indices(codes, 1, rng)[0]``.

    Parameters
    ----------
    order, bounds : ndarray
        From :func:`class_blocks`; ``order`` in the dtype wanted for ``out`` (e.g. int32).
    rng : numpy.random.Generator
        Consumed exactly as :func:`goldeneye_indices` consumes it for one group.
    out : ndarray of shape (n_rows,)
        Written in place and returned.

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
    out[order] = buf
    return out
