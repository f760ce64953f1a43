"""Exact disclosure measures of tables up to ``PAIR_SAMPLE_ROWS`` rows: each group's
(value, class) equivalence classes numbered over both tables (:func:`code_group`,
:func:`measure_group`, shared by the large-table path with :func:`class_codes` and
:func:`code_dtype`), and the exact linked count of a pair of groups with its moments
(:class:`Linkable`, :func:`pair`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from astrid_airflow.release import TableSource, row_hashes

from ._disclosure_results import GroupDisclosure
from ._linkage_moments import keyed_moments, multiset_common

_U64 = np.uint64
# A pair's (a, b) keys are counted with bincount when there are at most this many
# possible keys (factor x rows + slack), else by sorting.
DENSE_FACTOR, DENSE_SLACK = 4, 1024


# ------------------------------------------------------------------------ group codes

@dataclass
class _Coded:
    """One group's (value, class) equivalence classes over one or two tables."""

    codes: list[np.ndarray]   # per table: row -> code in [0, n_codes)
    counts: list[np.ndarray | None]  # per table: rows per code (dropped once unused)
    value_of: np.ndarray | None  # code -> id of the group value (class ignored)
    class_of: np.ndarray      # code -> class code


def code_dtype(n: int) -> type:
    """The narrowest signed integer dtype holding -1 .. n (codes are kept per row)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n < np.iinfo(dtype).max:
            return dtype
    return np.int64


def class_codes(sources: Sequence[TableSource], target: str) -> tuple[list[np.ndarray], int]:
    """Class codes shared by the tables (labels compared through their hashes)."""
    hashes = [row_hashes(s, [target]) for s in sources]
    codes, uniques = pd.factorize(np.concatenate(hashes))
    out, start = [], 0
    for h in hashes:
        out.append(codes[start:start + h.shape[0]].astype(np.int64))
        start += h.shape[0]
    return out, len(uniques)


def code_group(sources: Sequence[TableSource], columns: Sequence[str],
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
    code = code.astype(code_dtype(n_codes), copy=False)
    value_of = pd.factorize(uniques >> _U64(bits))[0]
    class_of = (uniques & mask).astype(code_dtype(1 << bits))
    codes, counts, lo = [], [], 0
    for size in sizes:
        c = code[lo:lo + size]
        codes.append(c)
        counts.append(np.bincount(c, minlength=n_codes).astype(code_dtype(size + 1)))
        lo += size
    return _Coded(codes=codes, counts=counts, value_of=value_of, class_of=class_of)


def measure_group(columns: Sequence[str], counts: np.ndarray, value_of: np.ndarray,
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

@dataclass
class Linkable:
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
    def of(cls, coded: _Coded, inv_class_size: np.ndarray) -> Linkable:
        (o, r), (co, cr) = coded.codes, coded.counts
        uniq = (co == 1) & (cr == 1)
        unique_o = uniq[o]
        rep = np.full(co.shape[0], -1, dtype=code_dtype(o.shape[0]))
        held = np.flatnonzero(unique_o)
        rep[o[held]] = held
        del held
        on = uniq[r]
        all_on = bool(on.all())
        rows = None if all_on else np.flatnonzero(on).astype(code_dtype(r.shape[0]))
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


def _one_row_moments(a: Linkable, b: Linkable) -> tuple[float, float]:
    """Expectation and variance of the linked count when one group has K = 1 on every
    row: every key is one row, matched with probability p = the other group's K / n_c."""
    other = b if a.all_one else a
    return other.sum_q, other.sum_q - other.sum_q2


def pair(a: Linkable, b: Linkable, class_size: np.ndarray, n: int
          ) -> tuple[int, float, float]:
    """(linked release rows, their expectation, their variance) for groups a and b."""
    # Release rows whose A-code occurs exactly once in each table: their (a, b) key
    # occurs at most once on each side, so the match is one comparison with the one
    # original row holding that A-code. Likewise for B; the rest is counted as a
    # multiset. The three key sets are disjoint, so the counts add up.
    width = b.n_codes
    dense = a.n_codes * width <= DENSE_FACTOR * n + DENSE_SLACK
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
            linked += multiset_common(ko, kr)

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
        e, v = keyed_moments(class_size[a.coded.class_of[ca]], a.coded.counts[0][ca],
                              b.coded.counts[0][cb], m)
        expected += e
        variance += v
    # The keys' counts are treated as independent (see LINKAGE_Z).
    return linked, expected, variance
