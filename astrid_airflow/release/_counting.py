"""Sort-free counting of 64-bit keys and integer codes for the privacy metrics.

For every row, how many rows share its key (:func:`key_counts`, hash tables or one sort
of the repeated keys), the first row of each distinct key (:func:`first_rows`), the
share of keys found on the other side (:func:`share_found`), and a group's same-class
counts and unique share from its codes (:func:`coded_counts`, ``np.bincount``) or its
hashes (:func:`hashed_counts`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from ._hashing import BLOCK, U64, Scratch, code_cap, empty, splitmix

#: Rows sampled to guess a key's cardinality (only the speed depends on the guess).
_SAMPLE = 20_000


def _few_distinct(keys: np.ndarray) -> bool:
    # Few distinct keys: a hash table stays in cache and beats sorting; many: sort.
    step = max(1, keys.shape[0] // _SAMPLE)
    return len(pd.unique(keys[::step])) <= _SAMPLE // 20


def _repeats(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys occurring more than once, their counts)``, from one (SIMD) sort."""
    s = np.sort(keys)
    new = np.empty(s.shape[0], dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    runs = np.diff(starts, append=s.shape[0])
    rep = runs > 1
    return s[starts[rep]], runs[rep]


def key_counts(keys: np.ndarray, ones_as_none: bool = False) -> np.ndarray | None:
    """For every row, how many rows share its key (uint32), without sorting rows.

    With ``ones_as_none``, None when every key is distinct (a continuous group: the
    common case on big tables, and 4 bytes a row saved).
    """
    if _few_distinct(keys):
        codes, uniques = pd.factorize(keys)
        counts = np.bincount(codes, minlength=len(uniques)).astype(np.uint32)
        out = counts[codes]
        return None if ones_as_none and len(uniques) == keys.shape[0] else out
    dkeys, dcounts = _repeats(keys)
    if ones_as_none and dkeys.shape[0] == 0:
        return None
    out = np.ones(keys.shape[0], dtype=np.uint32)
    if dkeys.shape[0]:
        pos = pd.Index(dkeys).get_indexer(keys)  # hash table of the repeated keys only
        hit = pos >= 0
        out[hit] = dcounts[pos[hit]]
    return out


def first_rows(keys: np.ndarray) -> np.ndarray:
    """Ascending indices of the first row of every distinct key (hash tables, one sort)."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if _few_distinct(keys):
        return _first_of_codes(pd.factorize(keys)[0])
    dkeys, _ = _repeats(keys)
    if dkeys.shape[0] == 0:
        return np.arange(n)
    rows = np.flatnonzero(pd.Index(dkeys).get_indexer(keys) >= 0)  # rows of repeated keys
    keep = np.ones(n, dtype=bool)
    keep[rows] = False
    keep[rows[_first_of_codes(pd.factorize(keys[rows])[0])]] = True
    return np.flatnonzero(keep)


def _first_of_codes(codes: np.ndarray) -> np.ndarray:
    # Codes numbered in order of first appearance: a row is first iff it raises the max.
    seen = np.maximum.accumulate(codes)
    new = np.empty(codes.shape[0], dtype=bool)
    new[:1] = True
    np.greater(seen[1:], seen[:-1], out=new[1:])
    return np.flatnonzero(new)


def share_found(unique_keys: np.ndarray, keys: np.ndarray) -> float:
    """Share of ``unique_keys`` occurring in ``keys``.

    A bitmap of the keys' top bits first drops the keys that cannot occur on the other
    side (both ways; ~10% of random keys pass), then pandas' hash-table ``isin`` decides
    on the rest: exact, and far cheaper than hashing 10M keys when few rows match.
    """
    n = unique_keys.shape[0]
    bits = min(28, max(12, (max(n, keys.shape[0]) - 1).bit_length() + 3))
    shift = U64(64 - bits)
    seen = np.zeros(1 << bits, dtype=bool)

    def mark(values: np.ndarray) -> None:
        for lo in range(0, values.shape[0], BLOCK):  # block by block: no big temporaries
            seen[values[lo:lo + BLOCK] >> shift] = True

    def marked(values: np.ndarray) -> np.ndarray:
        hit = np.empty(values.shape[0], dtype=bool)
        for lo in range(0, values.shape[0], BLOCK):
            hit[lo:lo + BLOCK] = seen[values[lo:lo + BLOCK] >> shift]
        return values[hit]

    mark(keys)
    cand = marked(unique_keys)
    if cand.shape[0] < n // 2:
        seen[:] = False
        mark(cand)
        keys = marked(keys)
    found = pd.Series(cand, copy=False).isin(keys).to_numpy()
    return np.count_nonzero(found) / n


def _all_distinct(keys: np.ndarray, scratch: Scratch | None = None) -> bool:
    """Whether no two ``keys`` are equal: one sort of their top 32 bits (half the cost
    of sorting the keys), the few rows whose top bits repeat then compared in full."""
    n = keys.shape[0]
    step = max(1, n // _SAMPLE)
    sample = keys[::step]
    if len(pd.unique(sample)) < sample.shape[0]:  # a quick no
        return False
    s = np.right_shift(keys, U64(32), out=empty(scratch, "top", n, np.uint32))
    s.sort()
    repeated = s[1:][s[1:] == s[:-1]]
    if repeated.shape[0] == 0:
        return True
    if repeated.shape[0] > n // 64:  # ~n^2 / 2^33 expected: many rows share top bits
        return _repeats(keys)[0].shape[0] == 0
    mask = U64((1 << 20) - 1)
    hit = np.zeros(1 << 20, dtype=bool)  # keys equal in full are equal in these bits
    hit[repeated & mask] = True
    cand = keys[hit[(keys >> U64(32)) & mask]]
    return np.unique(cand).shape[0] == cand.shape[0]


def coded_counts(codes: np.ndarray, levels: int, classes: np.ndarray, n_classes: int,
                  share: bool, with_class: bool
                  ) -> tuple[np.ndarray | None, float | None] | None:
    """Counting on integer codes (``np.bincount``, no hash table, no sort).

    Returns ``(counts, unique share)``: ``counts`` (with ``with_class``) the rows of each
    row's class sharing its code, as uint32, None when all are 1; with ``share``, the
    share of rows whose code no other row has. None when the class-by-code table would
    be too big to count this way. ``codes`` is the caller's to give up (overwritten).
    """
    n = codes.shape[0]
    cap = code_cap(n)
    unique = per_value = None
    if share or levels * n_classes > cap:
        per_value = np.bincount(codes, minlength=levels)
        if share:
            unique = int(np.count_nonzero(per_value == 1)) / n
        if per_value.max(initial=0) <= 1:  # distinct values: distinct with their class
            return None, unique
    if not with_class:
        return None, unique
    rest = None
    if levels * n_classes > cap:
        # Only repeated values can repeat within a class: number them; the others share
        # a last code whose rows count 1.
        repeated = per_value > 1
        rest = int(np.count_nonzero(repeated))
        if (rest + 1) * n_classes > cap:
            return None
        remap = np.full(levels, rest, dtype=np.intp)
        remap[repeated] = np.arange(rest)
        codes, levels = remap[codes], rest + 1
    key = np.multiply(codes, n_classes, out=codes)
    key += classes
    per_key = np.bincount(key, minlength=levels * n_classes)
    if rest is not None:
        per_key[rest * n_classes:] = 1
    if per_key.max(initial=0) <= 1:
        return None, unique
    return per_key.astype(np.uint32)[key], unique


def hashed_counts(keys: np.ndarray, class_hash: Callable[[], np.ndarray], share: bool,
                   with_class: bool, scratch: Scratch | None = None
                   ) -> tuple[np.ndarray | None, float | None]:
    """:func:`coded_counts` for 64-bit group keys (``class_hash()``: the class salt)."""
    if _all_distinct(keys, scratch):
        return None, 1.0 if share else None
    unique = float(np.mean(key_counts(keys) == 1)) if share else None
    if not with_class:
        return None, unique
    k = keys ^ class_hash()
    return key_counts(splitmix(k, out=k), ones_as_none=True), unique

