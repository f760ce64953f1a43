"""Moments of a pair's linked count under the artefact's independent within-class
shuffles: ``E`` and ``Var`` of ``min(H, m)``, ``H`` hypergeometric
(:func:`expected_min_hypergeometric`), summed over keys (:func:`keyed_moments`) or per
key (:func:`moments_per_key`); and :func:`multiset_common`, the matched count of two
multisets of keys.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def multiset_common(x: np.ndarray, y: np.ndarray) -> int:
    """Size of the multiset intersection of two integer arrays.

    Sorting (numpy's SIMD sort) beats hashing here: the keys are mostly distinct.
    """
    if x.size == 0 or y.size == 0:
        return 0
    ux, cx = np.unique(x, return_counts=True)
    uy, cy = np.unique(y, return_counts=True)
    pos = np.minimum(np.searchsorted(uy, ux), uy.size - 1)
    hit = uy[pos] == ux
    return int(np.minimum(cx[hit], cy[pos[hit]]).sum())


def expected_min_hypergeometric(n: np.ndarray, k_a: np.ndarray, k_b: np.ndarray,
                                m: np.ndarray) -> np.ndarray:
    """``E[min(H, m)]`` for ``H ~ Hypergeometric(n, k_a, k_b)``, elementwise.

    ``H`` is the number of rows of a class of ``n`` rows that receive, after two
    independent uniform permutations, one of the ``k_a`` rows holding value a of group
    A *and* one of the ``k_b`` rows holding value b of group B: the two sets of
    receiving rows are independent uniform subsets of sizes ``k_a`` and ``k_b``, so
    their overlap is hypergeometric. ``m <= min(k_a, k_b)`` original rows hold (a, b),
    and a release row is matched only while originals last, hence the ``min``.
    """
    return _min_hypergeometric_moments(n, k_a, k_b, m)[0]


def _min_hypergeometric_moments(n: Any, k_a: Any, k_b: Any, m: Any
                                ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``min(H, m)``, ``H ~ Hypergeometric(n, k_a, k_b)``."""
    from scipy.special import gammaln

    n, k_a, k_b, m = (np.asarray(v, dtype=np.int64) for v in (n, k_a, k_b, m))
    # H <= min(k_a, k_b), so when m reaches it min(H, m) = H: hypergeometric moments.
    mean = k_a * k_b / n
    var = mean * (n - k_a) * (n - k_b) / (n * np.maximum(n - 1, 1))
    need = np.flatnonzero(m < np.minimum(k_a, k_b))
    if need.size:
        mm, nn, ka, kb = m[need], n[need], k_a[need], k_b[need]
        # Only t within 12 sd of E[H] carry probability (< 1e-30 outside, by the
        # hypergeometric's Chernoff-Hoeffding tail), so the sums over t < m start there,
        # and not below K_a + K_b - n_c (the two sets of rows must overlap that much).
        # t < m < min(K_a, K_b), so every other term is in the support.
        lo = np.clip(np.floor(mean[need] - 12.0 * np.sqrt(var[need]) - 1.0), 0, mm)
        lo = np.minimum(np.maximum(lo.astype(np.int64), ka + kb - nn), mm)
        span = mm - lo
        idx = np.repeat(np.arange(need.size), span)
        t = np.arange(idx.size) - np.repeat(np.cumsum(span) - span - lo, span)
        # log P(H = t) = base - lnG(t+1) - lnG(ka-t+1) - lnG(kb-t+1) - lnG(n-ka-kb+t+1)
        base = (gammaln(ka + 1.0) + gammaln(nn - ka + 1.0) + gammaln(kb + 1.0)
                + gammaln(nn - kb + 1.0) - gammaln(nn + 1.0))
        # ln(x!) from tables when the terms outnumber the table's entries (the same
        # floats: a table is gammaln itself): t, K_a - t, K_b - t are at most max K, and
        # n_c - K_a - K_b + t is n_c minus at most K_a + K_b
        top = int(max(ka.max(), kb.max()))
        small = (gammaln(np.arange(top + 1) + 1.0).__getitem__ if t.size > top + 1
                 else lambda x: gammaln(x + 1.0))
        cls_of, nn_u = _distinct(nn)
        width = 2 * top + 1
        if t.size > nn_u.size * width:
            table = gammaln(nn_u[:, None] - np.arange(width)[None, :] + 1.0)
            far = table[cls_of[idx], (ka + kb)[idx] - t]
            del table
        else:
            far = gammaln((nn - ka - kb)[idx] + t + 1.0)
        p = np.exp(base[idx] - small(t) - small(ka[idx] - t) - small(kb[idx] - t) - far)
        del far
        s_p = np.bincount(idx, weights=p, minlength=need.size)
        tail = np.clip(1.0 - s_p, 0.0, 1.0)  # P(H >= m)
        # E[min(H, m)^j] = sum_{t<m} t^j P(H=t) + m^j P(H >= m)
        e1 = np.bincount(idx, weights=t * p, minlength=need.size) + mm * tail
        e2 = np.bincount(idx, weights=t * t * p, minlength=need.size) + mm * mm * tail
        mean[need] = e1
        var[need] = np.maximum(e2 - e1 * e1, 0.0)
    return mean, var


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each value among the distinct values, the distinct values); few
    distinct values (class sizes) are found with a hash table, not a sort."""
    code, uniq = pd.factorize(x, sort=False)
    return code, np.asarray(uniq)


def _distinct_tuples(*columns: np.ndarray, counts: bool = False
                     ) -> tuple[list[np.ndarray], np.ndarray]:
    """The distinct rows of the non-negative integer ``columns`` (as columns) and each
    row's index among them (``counts``: how many rows each has instead), packed into
    one int64 when the bits fit (a 1-D sort)."""
    cols = [np.asarray(c, dtype=np.int64) for c in columns]
    bits = [max(1, int(c.max()).bit_length()) if c.size else 1 for c in cols]
    if sum(bits) > 63:
        uniq, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        inv = inv.ravel()
        return list(uniq.T), np.bincount(inv) if counts else inv
    packed = np.zeros(cols[0].shape[0], dtype=np.int64)
    for c, b in zip(cols, bits):
        packed = (packed << b) | c
    uniq, inv = np.unique(packed, return_counts=counts, return_inverse=not counts)
    parts = []
    for b in reversed(bits):
        parts.append(uniq & ((1 << b) - 1))
        uniq = uniq >> b
    return parts[::-1], inv.ravel()


def keyed_moments(n: np.ndarray, k_a: np.ndarray, k_b: np.ndarray, m: np.ndarray
                   ) -> tuple[float, float]:
    """Sums over keys of the mean and variance of ``min(H, m)``.

    Keys sharing (n_c, K_a, K_b, m) have the same moments, and there are few distinct
    such tuples (K and m are small or alike), so they are computed once per tuple.
    """
    cols, weight = _distinct_tuples(n, k_a, k_b, m, counts=True)
    mean, var = _min_hypergeometric_moments(*cols)
    return float(np.dot(mean, weight)), float(np.dot(var, weight))


def moments_per_key(n: np.ndarray, k_a: np.ndarray, k_b: np.ndarray, m: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_min_hypergeometric_moments` per key, the tail sums computed once per
    distinct (n_c, K_a, K_b, m) among the keys that need them (m < min(K_a, K_b))."""
    n, k_a, k_b, m = (np.asarray(v, dtype=np.int64) for v in (n, k_a, k_b, m))
    mean = k_a * k_b / n
    var = mean * (n - k_a) * (n - k_b) / (n * np.maximum(n - 1, 1))
    need = np.flatnonzero(m < np.minimum(k_a, k_b))
    if need.size:
        cols, inv = _distinct_tuples(n[need], k_a[need], k_b[need], m[need])
        mu, vu = _min_hypergeometric_moments(*cols)
        mean[need], var[need] = mu[inv], vu[inv]
    return mean, var
