"""Exact disclosure measures of a released table: per group, and per pair of groups.

A GoldenEye release publishes every column's values unchanged next to the true class
and keeps each group's columns aligned row by row; groups are shuffled independently
within class. So a release is only as safe as each group's projection (its columns plus
the class), and the groups must really be independent of one another in the file.
This module measures both, exactly, on the values as published (continuous values are
compared as they are, which is honest about what a release reveals):

* :func:`group_disclosure`: for every group (singletons included), the k-anonymity of
  the projection (group columns + class), the share of rows in equivalence classes
  smaller than ``k``, and the share of rows whose group value occurs in one class only
  (distinct ℓ-diversity with ℓ = 2 on the class: "class disclosure");
* :func:`cross_group_linkage`: for every pair of groups, the share of release rows whose
  two group tuples still sit together as in an original row of the same class, beside
  its expected value under the artefact's independent within-class shuffles. A release
  coarser than the artefact (one column shuffled, the rest aligned) or a near-identity
  shows up as a linked share far above its expectation.

References: Hundepool et al., *Statistical Disclosure Control*, Wiley 2012 (k-anonymity,
ℓ-diversity, equivalence classes of quasi-identifiers); Giomi et al., "A Unified
Framework for Quantifying Privacy Risk in Synthetic Data", PETS 2023 (the attack-based
risks built on top of these measures live elsewhere).

Everything is vectorised on 64-bit row hashes (:func:`._hashing.row_hashes`, computed
column by column from Arrow): one sort per group, then O(n) gathers per pair.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow._validation import check_positive_int
from astrid_airflow.engine import run_threaded
from astrid_airflow.release import TableSource, resolve_grouping, row_hashes, splitmix, table_source

_U64 = np.uint64
#: A pair fails linkage when its excess over the expectation exceeds both the policy's
#: absolute margin and this many of its standard deviations. ``sd_linked_share`` ignores
#: covariances and is up to ~2x too small for strongly associated binary columns
#: (simulated: kr-vs-kp, soybean); 6 of them kept every one of ~140 000 simulated
#: genuine pair shuffles of seven UCI tables (30 shuffles at 60 rows, 200 rows and
#: full size) below the tolerance.
LINKAGE_Z = 6.0
# A pair's (a, b) keys are counted with bincount when there are at most this many
# possible keys (factor x rows + slack), else by sorting.
_DENSE_FACTOR, _DENSE_SLACK = 4, 1024
#: Above this many original rows, pairs are measured on a sample of keys holding about
#: this many rows (per-group measures stay exact); see :func:`_risk_large`.
PAIR_SAMPLE_ROWS = 200_000
# A group with at most this many keys in the release is coded exactly (joint codes).
_SMALL_KEYS = 4096


# ---------------------------------------------------------------------------- results

@dataclass(frozen=True)
class GroupDisclosure:
    """Disclosure measures of one group's projection (its columns plus the class).

    Attributes
    ----------
    columns : tuple of str
        The group's columns.
    k : int
        The k of ``share_below_k``.
    k_min : int
        Smallest equivalence-class size: rows sharing the group's values *and* class
        (the projection is ``k_min``-anonymous).
    share_below_k : float
        Share of rows in equivalence classes of fewer than ``k`` rows.
    class_disclosure_share : float
        Share of rows whose group value occurs in one class only: anyone who knows
        those values learns the class (the projection fails distinct ℓ-diversity with
        ℓ = 2 for them).
    n_rows : int
        Rows measured.
    """

    columns: tuple[str, ...]
    k: int
    k_min: int
    share_below_k: float
    class_disclosure_share: float
    n_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "k": self.k, "k_min": self.k_min,
                "share_below_k": self.share_below_k,
                "class_disclosure_share": self.class_disclosure_share,
                "n_rows": self.n_rows}


@dataclass(frozen=True)
class PairLinkage:
    """How much two groups of a release still sit together as in the original.

    Attributes
    ----------
    groups : pair of tuples of str
        The two groups' columns.
    linked_share : float
        Share of release rows whose (group-A tuple, group-B tuple, class) combination
        can be matched one to one (multiset matching, so duplicated rows count at most
        as often as in the original) to an original row.
    expected_linked_share : float
        Its expected value when the two groups are permuted independently within each
        class (what the artefact's shuffle does).
    sd_linked_share : float
        Its standard deviation under the same shuffles, summing the variances of the
        keys' matched counts (ignoring their covariances, which are mostly negative
        within a class: simulation shows the true sd is at most about this).
    n_rows : int
        Release rows.
    """

    groups: tuple[tuple[str, ...], tuple[str, ...]]
    linked_share: float
    expected_linked_share: float
    sd_linked_share: float = 0.0
    n_rows: int = 0
    sample_fraction: float = 1.0

    @property
    def excess(self) -> float:
        """``linked_share - expected_linked_share``."""
        return self.linked_share - self.expected_linked_share

    def tolerance(self, max_excess: float) -> float:
        """Largest excess a genuine shuffle is allowed: ``max(max_excess, LINKAGE_Z * sd)``."""
        return max(float(max_excess), LINKAGE_Z * self.sd_linked_share)

    def to_dict(self) -> dict[str, Any]:
        return {"groups": [list(g) for g in self.groups], "linked_share": self.linked_share,
                "expected_linked_share": self.expected_linked_share,
                "sd_linked_share": self.sd_linked_share, "excess": self.excess,
                "n_rows": self.n_rows, "sample_fraction": self.sample_fraction}


@dataclass(frozen=True)
class DisclosureRisk:
    """Per-group disclosure and per-pair linkage of one release (:func:`disclosure_risk`)."""

    groups: tuple[GroupDisclosure, ...]
    pairs: tuple[PairLinkage, ...]
    k: int

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "groups": [g.to_dict() for g in self.groups],
                "pairs": [p.to_dict() for p in self.pairs]}


def worst_group(disclosures: Sequence[GroupDisclosure],
                measure: str = "class_disclosure_share") -> GroupDisclosure | None:
    """The group with the highest ``measure`` (``share_below_k``,
    ``class_disclosure_share``) or the lowest ``k_min``; None for no groups.
    Ties go to the first group in the grouping's order."""
    if measure not in ("share_below_k", "class_disclosure_share", "k_min"):
        raise ParameterError(f"Invalid measure: {measure!r}. Must be 'share_below_k', "
                             "'class_disclosure_share' or 'k_min'.")
    if not disclosures:
        return None
    sign = -1 if measure == "k_min" else 1
    return max(disclosures, key=lambda d: sign * getattr(d, measure))


def worst_pair(linkages: Sequence[PairLinkage]) -> PairLinkage | None:
    """The pair whose linked share exceeds its expectation the most; None for no pairs."""
    return max(linkages, key=lambda p: p.excess) if linkages else None


# ------------------------------------------------------------------------ group codes

@dataclass
class _Coded:
    """One group's (value, class) equivalence classes over one or two tables."""

    codes: list[np.ndarray]   # per table: row -> code in [0, n_codes)
    counts: list[np.ndarray | None]  # per table: rows per code (dropped once unused)
    value_of: np.ndarray | None  # code -> id of the group value (class ignored)
    class_of: np.ndarray      # code -> class code


def _code_dtype(n: int) -> type:
    """The narrowest signed integer dtype holding -1 .. n (codes are kept per row)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n < np.iinfo(dtype).max:
            return dtype
    return np.int64


def _class_codes(sources: Sequence[TableSource], target: str) -> tuple[list[np.ndarray], int]:
    """Class codes shared by the tables (labels compared through their hashes)."""
    hashes = [row_hashes(s, [target]) for s in sources]
    codes, uniques = pd.factorize(np.concatenate(hashes))
    out, start = [], 0
    for h in hashes:
        out.append(codes[start:start + h.shape[0]].astype(np.int64))
        start += h.shape[0]
    return out, len(uniques)


def _code_group(sources: Sequence[TableSource], columns: Sequence[str],
                classes: Sequence[np.ndarray], bits: int) -> _Coded:
    """Number the (group value, class) combinations of ``sources`` (one hash table).

    The key is the group's 64-bit row hash with its low ``bits`` replaced by the class
    code, so the same numbering gives the equivalence classes (whole key) and the
    group values (key without the class bits). Two distinct values collide with
    probability 2^-(64 - bits) per pair.
    """
    mask = _U64((1 << bits) - 1)
    keys = [(row_hashes(s, columns) & ~mask) | c.astype(_U64) for s, c in zip(sources, classes)]
    sizes = [k.shape[0] for k in keys]
    allk = np.concatenate(keys) if len(keys) > 1 else keys[0]
    del keys
    code, uniques = pd.factorize(allk)  # hashing, not sorting: O(n)
    del allk
    n_codes = uniques.shape[0]
    code = code.astype(_code_dtype(n_codes), copy=False)
    value_of = pd.factorize(uniques >> _U64(bits))[0]
    class_of = (uniques & mask).astype(_code_dtype(1 << bits))
    codes, counts, lo = [], [], 0
    for size in sizes:
        c = code[lo:lo + size]
        codes.append(c)
        counts.append(np.bincount(c, minlength=n_codes).astype(_code_dtype(size + 1)))
        lo += size
    return _Coded(codes=codes, counts=counts, value_of=value_of, class_of=class_of)


def _measure_group(columns: Sequence[str], counts: np.ndarray, value_of: np.ndarray,
                   k: int) -> GroupDisclosure:
    n = int(counts.sum())
    present = counts > 0
    cnt = counts[present].astype(np.int64)
    classes_per_value = np.bincount(value_of[present], minlength=int(value_of.max()) + 1)
    disclosed = classes_per_value[value_of[present]] == 1
    return GroupDisclosure(
        columns=tuple(columns), k=k, k_min=int(cnt.min()),
        share_below_k=float(cnt[cnt < k].sum() / n),
        class_disclosure_share=float(cnt[disclosed].sum() / n), n_rows=n)


# --------------------------------------------------------------------------- linkage

def _multiset_common(x: np.ndarray, y: np.ndarray) -> int:
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


def _keyed_moments(n: np.ndarray, k_a: np.ndarray, k_b: np.ndarray, m: np.ndarray
                   ) -> tuple[float, float]:
    """Sums over keys of the mean and variance of ``min(H, m)``.

    Keys sharing (n_c, K_a, K_b, m) have the same moments, and there are few distinct
    such tuples (K and m are small or alike), so they are computed once per tuple.
    """
    cols, weight = _distinct_tuples(n, k_a, k_b, m, counts=True)
    mean, var = _min_hypergeometric_moments(*cols)
    return float(np.dot(mean, weight)), float(np.dot(var, weight))


def _moments_per_key(n: np.ndarray, k_a: np.ndarray, k_b: np.ndarray, m: np.ndarray
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


@dataclass
class _Linkable:
    """One group prepared for pairing (arrays per row, kept compact).

    Where every row qualifies (e.g. a continuous column: every code is unique), the
    row arrays are not stored (None): memory is what bounds a 10M-row run.
    """

    coded: _Coded | None        # None when ``slim``: ``partner`` says everything
    n_codes: int
    on: np.ndarray | None       # release row's code occurs exactly once in each table
    rows: np.ndarray | None     # those release rows (None: all) ...
    partner: np.ndarray         # ... and the one original row holding the same code
    unique_o: np.ndarray | None  # original row's code occurs exactly once in each table
    one_o: np.ndarray | None    # original row's code occurs once in the original (K = 1)
    q_o: np.ndarray | None      # original row: K / n_c (float32)
    all_on: bool                # every release row is in ``rows``
    all_one: bool               # every original row has K = 1
    sum_q: float                # sums of q_o and q_o^2 (the pair expectation when the
    sum_q2: float               # other group has K = 1 everywhere)

    @property
    def slim(self) -> bool:
        """Every code occurs once in each table (e.g. a continuous column): a release
        row's partner is its one original row, and nothing else is needed."""
        return self.all_on and self.all_one

    @classmethod
    def of(cls, coded: _Coded, inv_class_size: np.ndarray) -> _Linkable:
        (o, r), (co, cr) = coded.codes, coded.counts
        uniq = (co == 1) & (cr == 1)
        unique_o = uniq[o]
        rep = np.full(co.shape[0], -1, dtype=_code_dtype(o.shape[0]))
        held = np.flatnonzero(unique_o)
        rep[o[held]] = held
        del held
        on = uniq[r]
        all_on = bool(on.all())
        rows = None if all_on else np.flatnonzero(on).astype(_code_dtype(r.shape[0]))
        partner = rep[r] if all_on else rep[r[rows]]
        del rep, uniq
        k_o = co[o]
        q = k_o * inv_class_size
        one = k_o == 1
        all_one = bool(one.all())
        slim = all_on and all_one
        # only the original's counts of groups with K > 1 somewhere are read later
        coded.counts = [None if all_one else co, None]
        return cls(coded=None if slim else coded, n_codes=int(co.shape[0]),
                   on=None if all_on else on, rows=rows, partner=partner,
                   unique_o=None if bool(unique_o.all()) else unique_o,
                   one_o=None if all_one else one,
                   q_o=None if all_one else q.astype(np.float32), all_on=all_on,
                   all_one=all_one, sum_q=float(q.sum()), sum_q2=float(np.dot(q, q)))

    def release_codes(self, codes: np.ndarray) -> np.ndarray:
        """``codes`` of the release rows in ``rows``."""
        return codes if self.rows is None else codes[self.rows]


def _one_row_moments(a: _Linkable, b: _Linkable) -> tuple[float, float]:
    """Expectation and variance of the linked count when one group has K = 1 on every
    row: every key is one row, matched with probability p = the other group's K / n_c."""
    other = b if a.all_one else a
    return other.sum_q, other.sum_q - other.sum_q2


def _pair(a: _Linkable, b: _Linkable, class_size: np.ndarray, n: int
          ) -> tuple[int, float, float]:
    """(linked release rows, their expectation, their variance) for groups a and b."""
    # Release rows whose A-code occurs exactly once in each table: their (a, b) key
    # occurs at most once on each side, so the match is one comparison with the one
    # original row holding that A-code. Likewise for B; the rest is counted as a
    # multiset. The three key sets are disjoint, so the counts add up.
    width = b.n_codes
    dense = a.n_codes * width <= _DENSE_FACTOR * n + _DENSE_SLACK
    rest_r = np.zeros(0, dtype=np.intp)
    if a.all_on and b.all_on:  # linked iff both point at the same original row
        linked = int(np.count_nonzero(a.partner == b.partner))
    elif b.all_on:  # one gather and one comparison per row
        oa, ra = a.coded.codes
        linked = int(np.count_nonzero(oa[b.partner] == ra))
    else:
        ob, rb = b.coded.codes
        linked = int(np.count_nonzero(ob[a.partner] == a.release_codes(rb)))
        if not a.all_on:  # neither is: every array below is stored
            oa, ra = a.coded.codes
            keep = ~a.on[b.rows]
            linked += int(np.count_nonzero(oa[b.partner[keep]] == ra[b.rows[keep]]))
            rest_r = np.flatnonzero(~(a.on | b.on))
    if rest_r.size:
        if a.unique_o is None or b.unique_o is None:
            rest_o = np.zeros(0, dtype=np.intp)
        else:
            rest_o = np.flatnonzero(~(a.unique_o | b.unique_o))
        ko = oa[rest_o].astype(np.int64) * width + ob[rest_o]
        kr = ra[rest_r].astype(np.int64) * width + rb[rest_r]
        if dense:  # few distinct values: count by table, not by sorting
            size = a.n_codes * width
            linked += int(np.minimum(np.bincount(ko, minlength=size),
                                     np.bincount(kr, minlength=size)).sum())
        else:
            linked += _multiset_common(ko, kr)

    # Expectation from the original alone: for each distinct (a, b, class) key of the
    # original, E[min(H, m_ab)] with H ~ Hypergeometric(n_c, K_a, K_b). A key with
    # K_a = 1 or K_b = 1 is one row, matched with probability p = K_a K_b / n_c.
    if a.all_one or b.all_one:
        return (linked, *_one_row_moments(a, b))
    oa, ob = a.coded.codes[0], b.coded.codes[0]
    p = np.concatenate([b.q_o[a.one_o], a.q_o[~a.one_o & b.one_o]]).astype(np.float64)
    expected, variance = float(p.sum()), float(p.sum() - np.dot(p, p))
    multi = np.flatnonzero(~(a.one_o | b.one_o))
    if multi.size:
        key = oa[multi].astype(np.int64) * width + ob[multi]
        if dense:
            m = np.bincount(key, minlength=a.n_codes * width)
            key = np.flatnonzero(m)
            m = m[key]
        else:
            key, m = np.unique(key, return_counts=True)
        ca, cb = key // width, key % width
        e, v = _keyed_moments(class_size[a.coded.class_of[ca]], a.coded.counts[0][ca],
                              b.coded.counts[0][cb], m)
        expected += e
        variance += v
    # The keys' counts are treated as independent (see LINKAGE_Z).
    return linked, expected, variance


# ------------------------------------------------------- large tables: sampled pairs

@dataclass
class _Big:
    """One group of a large table, prepared for sampled pairing (see :func:`_risk_large`).

    ``codes`` (joint, both tables) for a group with few keys. Otherwise 32-bit key
    hashes, except the original's of a group whose keys repeat there: its raw keys
    (``key_o``), with the sorted distinct keys (``uniq``) and their row counts
    (``count``), so K is looked up for the sampled rows only instead of being stored
    per row. ``rows``: the rows of each table whose key is in the group's key sample.
    """

    n_keys: int
    codes: list[np.ndarray] | None
    counts_o: np.ndarray | None      # rows per code in the original (with ``codes``)
    h32: list[np.ndarray | None] | None
    key_o: np.ndarray | None = None
    uniq: np.ndarray | None = None
    count: np.ndarray | None = None
    rows: list[np.ndarray] | None = None
    class_of: np.ndarray | None = None  # class code of each code (with ``codes``)

    def ids(self, table: int, at: np.ndarray) -> np.ndarray:
        if self.codes is not None:
            return self.codes[table][at].astype(_U64)
        if table == 0 and self.key_o is not None:
            return splitmix(self.key_o[at]) >> _U64(32)
        return self.h32[table][at].astype(_U64)

    def k_of(self, at: np.ndarray) -> np.ndarray:
        if self.codes is not None:
            return self.counts_o[self.codes[0][at]]
        if self.key_o is None:
            return np.ones(at.shape[0], np.int64)
        return self.count[np.searchsorted(self.uniq, self.key_o[at])]


def _runs(s: np.ndarray) -> np.ndarray:
    """Start of every run of equal values of the sorted ``s``."""
    return np.flatnonzero(np.r_[True, s[1:] != s[:-1]])


def _sorted_measures(columns: Sequence[str], s: np.ndarray, starts: np.ndarray, bits: int,
                     k: int) -> GroupDisclosure:
    """Per-group measures of the release from its sorted (value hash | class) keys ``s``
    and their run starts (one sort instead of a hash table: faster at 10^7)."""
    n = s.shape[0]
    cnt = np.diff(np.r_[starts, n])
    val = s[starts] >> _U64(bits)
    vid = np.cumsum(np.r_[True, val[1:] != val[:-1]]) - 1
    disclosed = np.bincount(vid)[vid] == 1
    return GroupDisclosure(
        columns=tuple(columns), k=k, k_min=int(cnt.min()),
        share_below_k=float(cnt[cnt < k].sum() / n),
        class_disclosure_share=float(cnt[disclosed].sum() / n), n_rows=n)


def _few_keys(key: np.ndarray) -> bool:
    """Guess from ~20 000 evenly spaced rows whether ``key`` has at most
    :data:`_SMALL_KEYS` distinct values (then one hash table beats a sort). Only the
    speed depends on the guess: the paths give the same result."""
    step = max(1, key.shape[0] // 20_000)
    return len(pd.unique(key[::step])) <= _SMALL_KEYS


def _fingerprint(mixed: np.ndarray) -> tuple[int, int]:
    """Order-free fingerprint of a multiset of SplitMix-mixed keys: the sums of the
    keys and of their squares, mod 2^64. Two different multisets agree with
    probability about 2^-64, as two different rows share a row hash."""
    total, squares = _U64(0), _U64(0)
    step = 1 << 20  # bounded temporaries
    with np.errstate(over="ignore"):
        for i in range(0, mixed.shape[0], step):
            m = mixed[i:i + step]
            total += np.add.reduce(m, dtype=_U64)
            squares += np.add.reduce(m * m, dtype=_U64)
    return int(total), int(squares)


def _prepare_group(columns: Sequence[str], keys: list[np.ndarray], released: int,
                   bits: int, k: int | None, pairs: bool, threshold: int
                   ) -> tuple[GroupDisclosure | None, _Big | None]:
    """Per-group measures of the release and, with ``pairs``, the group's :class:`_Big`.

    A group with few keys is numbered with one hash table over both tables; any other
    is sorted once (the release). The original's keys are sorted too only when their
    multiset differs from the release's (a genuine GoldenEye shuffle keeps it: then the
    release's sort gives the original's key counts as well).
    """
    mask = _U64((1 << bits) - 1)
    key_r = keys[released]
    n_o = keys[0].shape[0]

    def numbered() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        both = np.concatenate(keys) if pairs else key_r
        code, uniq = pd.factorize(both)  # hashing, not sorting: O(n)
        lo = released * n_o if pairs else 0
        return code, uniq, np.bincount(code[lo:lo + key_r.shape[0]], minlength=len(uniq))

    def small(code: np.ndarray, uniq: np.ndarray, counts_r: np.ndarray) -> _Big | None:
        n_u = uniq.shape[0]
        if np.count_nonzero(counts_r) > _SMALL_KEYS or n_u > 4 * _SMALL_KEYS:
            return None
        dt = _code_dtype(n_u)
        codes = [code[:n_o].astype(dt), code[n_o:].astype(dt)]
        return _Big(n_keys=int(n_u), codes=codes,
                    counts_o=np.bincount(codes[0], minlength=n_u), h32=None,
                    class_of=(uniq & mask).astype(np.int64))

    measured = None
    tried = _few_keys(key_r)
    if tried:
        code, uniq, counts_r = numbered()
        if k is not None:
            measured = _measure_group(columns, counts_r,
                                      pd.factorize(uniq >> _U64(bits))[0], k)
        if not pairs:
            return measured, None
        big = small(code, uniq, counts_r)
        if big is not None:
            return measured, big
        del code, uniq, counts_r
    s_r = np.sort(key_r)
    starts = _runs(s_r)
    if measured is None and k is not None:
        measured = _sorted_measures(columns, s_r, starts, bits, k)
    n_keys_r = int(starts.shape[0])
    if not pairs:
        return measured, None
    if n_keys_r <= _SMALL_KEYS and not tried:  # guessed wrong: few keys after all
        big = small(*numbered())
        if big is not None:
            return measured, big
    key_o = keys[0]
    mixed = [splitmix(key) for key in keys]
    if key_o.shape[0] == key_r.shape[0] and \
            _fingerprint(mixed[0]) == _fingerprint(mixed[released]):
        s_o, starts_o = s_r, starts  # the same multiset of keys
    else:
        s_o = np.sort(key_o)
        starts_o = _runs(s_o)
    del s_r, starts
    n_keys_o = int(starts_o.shape[0])
    uniq = count = None
    if n_keys_o < key_o.shape[0]:  # keys repeat in the original: K per key
        uniq = s_o[starts_o]
        count = np.diff(np.r_[starts_o, key_o.shape[0]])
    else:
        key_o = None
    del s_o, starts_o
    # A key is sampled when its hash falls below the threshold: a function of the key,
    # so every row holding a sampled key is in, in both tables.
    rows = [np.flatnonzero(m < _U64(threshold)) for m in mixed]
    h32 = [None if (i == 0 and key_o is not None) else (m >> _U64(32)).astype(np.uint32)
           for i, m in enumerate(mixed)]
    return measured, _Big(n_keys=max(n_keys_o, n_keys_r), codes=None, counts_o=None,
                          h32=h32, key_o=key_o, uniq=uniq, count=count, rows=rows)


def _pair_small(a: _Big, b: _Big, cls: np.ndarray, class_size: np.ndarray, n: int
                ) -> tuple[int, float, float]:
    """Exact linked count, expectation and variance of two few-key groups (counted by
    table)."""
    width = b.n_keys
    size = a.n_keys * width
    ko = a.codes[0].astype(np.int64) * width + b.codes[0]
    kr = a.codes[1].astype(np.int64) * width + b.codes[1]
    if size <= _DENSE_FACTOR * n + _DENSE_SLACK:
        m = np.bincount(ko, minlength=size)
        linked = int(np.minimum(m, np.bincount(kr, minlength=size)).sum())
        key = np.flatnonzero(m)
        m = m[key]
    else:
        linked = _multiset_common(ko, kr)
        key, m = np.unique(ko, return_counts=True)
    del kr
    ca, cb = key // width, key % width
    e, v = _keyed_moments(class_size[a.class_of[ca]], a.counts_o[ca], b.counts_o[cb], m)
    return linked, e, v


def _pair_sampled(a: _Big, b: _Big, cls: np.ndarray, class_size: np.ndarray,
                  fraction: float) -> tuple[float, float, float, int]:
    """Linked share, its expectation and sd on the keys sampled by group ``a``.

    Observed and expected are sums over the same sampled keys, so under the artefact's
    shuffle their difference has mean 0 and the keyed variance, whatever keys were
    sampled; the sampling variance of the share (clusters = ``a``'s keys) is added.
    """
    ro, rr = a.rows
    n_s = ro.shape[0]
    if n_s == 0:
        return 0.0, 0.0, 0.0, 0
    ko = (a.ids(0, ro) << _U64(32)) | b.ids(0, ro)
    kr = (a.ids(1, rr) << _U64(32)) | b.ids(1, rr)
    order = np.argsort(ko)  # SIMD argsort; any row of a key gives its K_a, K_b, class
    ko = ko[order]
    starts = np.flatnonzero(np.r_[True, ko[1:] != ko[:-1]])
    uo, m = ko[starts], np.diff(np.r_[starts, n_s])
    at = ro[order[starts]]
    del order, ko
    kr.sort()
    cr = np.searchsorted(kr, uo, side="right") - np.searchsorted(kr, uo, side="left")
    linked = np.minimum(m, cr)
    mean, var = _moments_per_key(class_size[cls[at]], a.k_of(at), b.k_of(at), m)
    linked_s, exp_s = float(linked.sum()), float(mean.sum())
    excess = (linked_s - exp_s) / n_s
    # clusters: a's keys (the high 32 bits, sorted with uo)
    hi = uo >> _U64(32)
    starts = np.flatnonzero(np.r_[True, hi[1:] != hi[:-1]])
    d = np.add.reduceat(linked - mean - excess * m, starts)
    var_sample = (1.0 - fraction) * float(np.dot(d, d)) / n_s ** 2
    sd = math.sqrt(max(float(var.sum()), 0.0) / n_s ** 2 + var_sample)
    return linked_s / n_s, min(1.0, exp_s / n_s), sd, n_s


def thread_count(n_jobs: int | None) -> int:
    """Threads for ``n_jobs``: None or <= 0 means every core."""
    if n_jobs is None or n_jobs <= 0:
        return max(1, os.cpu_count() or 1)
    return int(n_jobs)


def _risk_large(sources: list[TableSource], grouping: Any, target: str, k: int | None,
                pairs: bool, n_jobs: int | None = None
                ) -> tuple[list[GroupDisclosure], list[PairLinkage]]:
    """:func:`_risk` for tables of more than :data:`PAIR_SAMPLE_ROWS` rows.

    Per-group measures stay exact (one sort of the release's keys per group). A pair's
    linkage is exact when both groups have few keys (counted by table); otherwise it is
    measured on a sample of the keys of the group with more keys: every key whose hash
    falls below ``PAIR_SAMPLE_ROWS / n``, with all rows holding it in both tables.
    """
    classes, n_classes = _class_codes(sources, target)
    bits = max(1, int(n_classes - 1).bit_length())
    if bits > 24:
        raise DataError(f"The class column {target!r} has {n_classes} distinct values; "
                        "disclosure measures need at most 2^24 classes.")
    mask = _U64((1 << bits) - 1)
    released = len(sources) - 1
    with_pairs = pairs and len(grouping.groups) > 1
    n_o = sources[0].num_rows
    fraction = min(1.0, PAIR_SAMPLE_ROWS / n_o)
    threshold = min(int(fraction * 2.0 ** 64), 2 ** 64 - 1)
    cls_u64 = [c.astype(_U64) for c in classes]

    def prepare(g: Sequence[str]) -> tuple[GroupDisclosure | None, _Big | None]:
        keys = [(row_hashes(s, g) & ~mask) | c for s, c in zip(sources, cls_u64)]
        return _prepare_group(g, keys, released, bits, k, with_pairs, threshold)

    # Groups, then pairs, on threads (numpy's sorts and gathers release the GIL); the
    # order is kept and nothing is random, so the result is the same for any n_jobs.
    prepared = run_threaded(prepare, grouping.groups, thread_count(n_jobs))
    groups = [m for m, _ in prepared if m is not None]
    big = [b for _, b in prepared]
    del prepared
    out_pairs: list[PairLinkage] = []
    if not with_pairs:
        return groups, out_pairs
    cls = classes[0].astype(_code_dtype(n_classes))
    class_size = np.bincount(classes[0], minlength=n_classes).astype(np.int64)
    del classes
    n_r = sources[1].num_rows

    def one(ij: tuple[int, int]) -> PairLinkage:
        a, b = big[ij[0]], big[ij[1]]
        names = (tuple(grouping.groups[ij[0]]), tuple(grouping.groups[ij[1]]))
        if a.codes is not None and b.codes is not None:
            linked, e, v = _pair_small(a, b, cls, class_size, n_o)
            return PairLinkage(groups=names, linked_share=linked / n_r,
                               expected_linked_share=min(1.0, e / n_o),
                               sd_linked_share=math.sqrt(max(v, 0.0)) / n_o, n_rows=n_r)
        # sample by the group with more keys: smaller clusters, smaller variance
        if a.codes is not None or (b.codes is None and b.n_keys > a.n_keys):
            a, b = b, a
        share, expected, sd, _ = _pair_sampled(a, b, cls, class_size, fraction)
        return PairLinkage(groups=names, linked_share=share, expected_linked_share=expected,
                           sd_linked_share=sd, n_rows=n_r, sample_fraction=fraction)

    todo = [(i, j) for i in range(len(big)) for j in range(i + 1, len(big))]
    out_pairs.extend(run_threaded(one, todo, thread_count(n_jobs)))
    return groups, out_pairs


# -------------------------------------------------------------------------- public API

def _prepare(tables: Sequence[tuple[Any, str]], target: Any, grouping: Any, k: int | None
             ) -> tuple[list[TableSource], Any, str]:
    if k is not None:
        check_positive_int(k, "k")
    resolved, target, _ = resolve_grouping(grouping, target)
    sources = []
    for table, what in tables:
        src = table_source(table, what)
        src.require([*resolved.columns, target], what)
        if src.num_rows == 0:
            raise DataError(f"The {what} is empty (0 rows).")
        sources.append(src)
    return sources, resolved, target


def _risk(sources: list[TableSource], grouping: Any, target: str, k: int | None,
          pairs: bool, n_jobs: int | None = None
          ) -> tuple[list[GroupDisclosure], list[PairLinkage]]:
    if sources[0].num_rows > PAIR_SAMPLE_ROWS:
        return _risk_large(sources, grouping, target, k, pairs, n_jobs)
    classes, n_classes = _class_codes(sources, target)
    bits = max(1, int(n_classes - 1).bit_length())
    if bits > 24:  # the class occupies the hash's low bits
        raise DataError(f"The class column {target!r} has {n_classes} distinct values; "
                        "disclosure measures need at most 2^24 classes.")
    coded = [_code_group(sources, g, classes, bits) for g in grouping.groups]
    released = len(sources) - 1
    groups = [] if k is None else [
        _measure_group(g, c.counts[released], c.value_of, k)
        for g, c in zip(grouping.groups, coded)]
    out_pairs: list[PairLinkage] = []
    if pairs and len(coded) > 1:
        n_o, n_r = sources[0].num_rows, sources[1].num_rows
        class_size = np.bincount(classes[0], minlength=n_classes).astype(np.int64)
        inv = (1.0 / np.maximum(class_size, 1))[classes[0]]
        for c in coded:
            c.value_of = None  # only the per-group measures needed it
        linkable = []
        while coded:  # release each group's temporaries as soon as it is prepared
            linkable.append(_Linkable.of(coded.pop(0), inv))
        del inv
        for i in range(len(linkable)):
            for j in range(i + 1, len(linkable)):
                linked, expected, variance = _pair(linkable[i], linkable[j], class_size, n_o)
                out_pairs.append(PairLinkage(
                    groups=(tuple(grouping.groups[i]), tuple(grouping.groups[j])),
                    linked_share=linked / n_r, expected_linked_share=min(1.0, expected / n_o),
                    sd_linked_share=math.sqrt(max(variance, 0.0)) / n_o, n_rows=n_r))
    return groups, out_pairs


def group_disclosure(released: Any, *, target: str | None = None, grouping: Any,
                     k: int = 5) -> list[GroupDisclosure]:
    """Disclosure measures of every group of a released table, singletons included.

    Parameters
    ----------
    released : DataFrame, pyarrow.Table or Parquet/CSV path
        The table as published (exact values).
    target : str, optional
        The class column (an artefact passed as ``grouping`` supplies it).
    grouping : GroupingArtefact, Grouping, str or list of lists
        The groups to measure.
    k : int, default 5
        Equivalence classes smaller than this count in ``share_below_k``.

    Returns
    -------
    list of GroupDisclosure
        One per group, in the grouping's order.

    Notes
    -----
    The projection of a group is its columns plus the class; its equivalence classes
    are the rows sharing all those values (Hundepool et al. 2012, Sec. 3.3, with the
    group as the quasi-identifier). A GoldenEye shuffle keeps every group's per-class
    multiset of tuples, so these measures are the same for the original and for any
    surrogate of it with that grouping: they describe what the grouping reveals, and
    only coarsening the values (or a finer grouping) changes them.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 1, 2, 2], "b": [5, 5, 5, 5], "y": [0, 0, 0, 1]})
    >>> [(d.columns, d.k_min, d.class_disclosure_share)
    ...  for d in group_disclosure(t, target="y", grouping="a;b", k=2)]
    [(('a',), 1, 0.5), (('b',), 1, 0.0)]
    """
    sources, resolved, target = _prepare([(released, "released table")], target, grouping, k)
    return _risk(sources, resolved, target, k, pairs=False)[0]


def cross_group_linkage(original: Any, released: Any, *, target: str | None = None,
                        grouping: Any, n_jobs: int | None = None) -> list[PairLinkage]:
    """Linked share of every pair of groups of a release, beside its expectation.

    Parameters
    ----------
    original : DataFrame, pyarrow.Table or Parquet/CSV path
        The table the release was made from.
    released : DataFrame, pyarrow.Table or Parquet/CSV path
        The release.
    target : str, optional
        The class column (an artefact passed as ``grouping`` supplies it).
    grouping : GroupingArtefact, Grouping, str or list of lists
        The artefact's grouping.
    n_jobs : int, optional
        Threads for the pairs of a large table (default: every core); the result does
        not depend on it.

    Returns
    -------
    list of PairLinkage
        One per pair of groups (i < j in the grouping's order); empty for one group.

    Notes
    -----
    For groups A and B, a release row is *linked* when its (A-tuple, B-tuple, class)
    combination is that of an original row; rows are matched one to one, so
    ``linked_share = sum over keys of min(count_original, count_release) / n``.
    Under the artefact's shuffle A and B are permuted independently within each class
    c of n_c rows. For an original key (a, b) held by m rows, with K_a rows holding a
    and K_b rows holding b in class c, the release rows holding (a, b) number
    H ~ Hypergeometric(n_c, K_a, K_b) (two independent uniform subsets of sizes K_a
    and K_b; their overlap), so

        E[linked rows] = sum_c sum_{(a, b) in class c} E[min(H, m_ab)],

    which is ``sum K_a K_b / n_c`` over keys when every value is unique in its class
    (then E ≈ n_classes / n). A release coarser than the artefact (one column shuffled,
    the others still aligned) or a near-identity has a linked share near 1 for the
    aligned pairs, far above it.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "y": [0, 0, 0, 0]})
    >>> [p.linked_share for p in cross_group_linkage(t, t, target="y", grouping="a;b")]
    [1.0]
    """
    sources, resolved, target = _prepare([(original, "original table"),
                                          (released, "released table")],
                                         target, grouping, None)
    return _risk(sources, resolved, target, None, pairs=True, n_jobs=n_jobs)[1]


def disclosure_risk(original: Any, released: Any, *, target: str | None = None,
                    grouping: Any, k: int = 5, n_jobs: int | None = None) -> DisclosureRisk:
    """:func:`group_disclosure` of the release and :func:`cross_group_linkage`, in one
    pass (each group's columns are hashed and sorted once for both).

    Parameters are those of :func:`group_disclosure` and :func:`cross_group_linkage`.

    Returns
    -------
    DisclosureRisk
        ``groups`` (measured on ``released``) and ``pairs``; ``to_dict()`` gives
        ``{"k", "groups", "pairs"}`` with the keys of ``GroupDisclosure.to_dict`` and
        ``PairLinkage.to_dict``.
    """
    sources, resolved, target = _prepare([(original, "original table"),
                                          (released, "released table")],
                                         target, grouping, k)
    groups, pairs = _risk(sources, resolved, target, k, pairs=True, n_jobs=n_jobs)
    return DisclosureRisk(groups=tuple(groups), pairs=tuple(pairs), k=int(k))
