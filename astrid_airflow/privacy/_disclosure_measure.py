"""One measuring pass over the original and the release (:func:`risk`): exact on tables
up to :data:`PAIR_SAMPLE_ROWS` rows (codes and pairs of ``_exact_linkage``); above it,
per-group measures from one sort of the release's keys and pairs measured exactly on
few-key groups, else on a sample of keys (:func:`_risk_large`). :func:`thread_count`
turns ``n_jobs`` into threads.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError
from astrid_airflow.engine import run_threaded
from astrid_airflow.release import TableSource, row_hashes, splitmix

from ._disclosure_results import GroupDisclosure, PairLinkage
from ._exact_linkage import (
    DENSE_FACTOR,
    DENSE_SLACK,
    Linkable,
    class_codes,
    code_dtype,
    code_group,
    measure_group,
    pair,
)
from ._linkage_moments import keyed_moments, moments_per_key, multiset_common

_U64 = np.uint64
#: Above this many original rows, pairs are measured on a sample of keys holding about
#: this many rows (per-group measures stay exact); see :func:`_risk_large`.
PAIR_SAMPLE_ROWS = 200_000
# A group with at most this many keys in the release is coded exactly (joint codes).
_SMALL_KEYS = 4096


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
        dt = code_dtype(n_u)
        codes = [code[:n_o].astype(dt), code[n_o:].astype(dt)]
        return _Big(n_keys=int(n_u), codes=codes,
                    counts_o=np.bincount(codes[0], minlength=n_u), h32=None,
                    class_of=(uniq & mask).astype(np.int64))

    measured = None
    tried = _few_keys(key_r)
    if tried:
        code, uniq, counts_r = numbered()
        if k is not None:
            measured = measure_group(columns, counts_r,
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
    if size <= DENSE_FACTOR * n + DENSE_SLACK:
        m = np.bincount(ko, minlength=size)
        linked = int(np.minimum(m, np.bincount(kr, minlength=size)).sum())
        key = np.flatnonzero(m)
        m = m[key]
    else:
        linked = multiset_common(ko, kr)
        key, m = np.unique(ko, return_counts=True)
    del kr
    ca, cb = key // width, key % width
    e, v = keyed_moments(class_size[a.class_of[ca]], a.counts_o[ca], b.counts_o[cb], m)
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
    mean, var = moments_per_key(class_size[cls[at]], a.k_of(at), b.k_of(at), m)
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
    """:func:`risk` for tables of more than :data:`PAIR_SAMPLE_ROWS` rows.

    Per-group measures stay exact (one sort of the release's keys per group). A pair's
    linkage is exact when both groups have few keys (counted by table); otherwise it is
    measured on a sample of the keys of the group with more keys: every key whose hash
    falls below ``PAIR_SAMPLE_ROWS / n``, with all rows holding it in both tables.
    """
    classes, n_classes = class_codes(sources, target)
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
    cls = classes[0].astype(code_dtype(n_classes))
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


# ------------------------------------------------------------------ the measuring pass

def risk(sources: list[TableSource], grouping: Any, target: str, k: int | None,
          pairs: bool, n_jobs: int | None = None
          ) -> tuple[list[GroupDisclosure], list[PairLinkage]]:
    if sources[0].num_rows > PAIR_SAMPLE_ROWS:
        return _risk_large(sources, grouping, target, k, pairs, n_jobs)
    classes, n_classes = class_codes(sources, target)
    bits = max(1, int(n_classes - 1).bit_length())
    if bits > 24:  # the class occupies the hash's low bits
        raise DataError(f"The class column {target!r} has {n_classes} distinct values; "
                        "disclosure measures need at most 2^24 classes.")
    coded = [code_group(sources, g, classes, bits) for g in grouping.groups]
    released = len(sources) - 1
    groups = [] if k is None else [
        measure_group(g, c.counts[released], c.value_of, k)
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
            linkable.append(Linkable.of(coded.pop(0), inv))
        del inv
        for i in range(len(linkable)):
            for j in range(i + 1, len(linkable)):
                linked, expected, variance = pair(linkable[i], linkable[j], class_size, n_o)
                out_pairs.append(PairLinkage(
                    groups=(tuple(grouping.groups[i]), tuple(grouping.groups[j])),
                    linked_share=linked / n_r, expected_linked_share=min(1.0, expected / n_o),
                    sd_linked_share=math.sqrt(max(variance, 0.0)) / n_o, n_rows=n_r))
    return groups, out_pairs
