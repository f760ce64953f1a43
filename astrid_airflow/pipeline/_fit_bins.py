"""Class-aware bins of one numeric column: the cuts, each bin's published value and the
one-bin fallback (the recipe's ``bins`` step, fitted by :mod:`._fit_recipe`).

Edges and representatives are published (file, recipe, validation JSON): a
representative is never a value that fewer than k rows of the reference have, so a bin
never publishes one person's value; a bin count with a bin that has no other value is not
offered, and a column with none at all is published missing.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd


class ColumnBins:
    """A numeric column sorted once, with its class-aware cuts in the order the top-down
    binning makes them (:func:`_cut_order`): the cuts of at most ``b`` bins are the first
    ``b - 1``, for any ``b`` up to ``max_bins``, so a ladder of bin counts sorts and
    searches the column once. ``k``: the rows each bin needs of a class it holds (the
    fit's); ``value_k`` (default ``k``): the rows a published value needs to have it."""

    def __init__(self, values: np.ndarray, labels: Any, k: int, max_bins: int,
                 value_k: int | None = None) -> None:
        finite = np.isfinite(values)
        order = np.argsort(values[finite], kind="stable")
        self.v, self.k = values[finite][order], k
        self.cuts: list[int] = []
        if self.v.size:
            y = pd.factorize(pd.Series(np.asarray(labels)[finite][order]))[0]
            self.pos, self.cuts = _cut_order(self.v, y, max_bins, k)
            uniq, counts = np.unique(self.v, return_counts=True)
            self.rare = frozenset(uniq[counts < k].tolist())
            self.unsafe = frozenset(uniq[counts < (k if value_k is None else value_k)]
                                    .tolist())
            self.resolution = value_resolution(self.v)

    def step(self, n_bins: int, column: str, ptype: str) -> dict[str, Any] | None:
        """The bins step of at most ``n_bins`` bins (``None``: a single bin): the most
        bins up to ``n_bins`` whose every representative is a value that no row or at
        least ``value_k`` rows have (:func:`representative`)."""
        for b in range(min(n_bins, len(self.cuts) + 1), 1, -1):
            step = self._step(b, column, ptype)
            if step is not _UNSAFE:
                return step
        return None

    def _step(self, n_bins: int, column: str, ptype: str) -> Any:
        v, k = self.v, self.k
        edges = [float(v[self.pos[j]]) for j in sorted(self.cuts[:n_bins - 1])]
        if not edges:
            return None
        bounds = [0, *[int(np.searchsorted(v, e, side="left")) for e in edges], v.size]
        # Edges and representatives are published (file, recipe, validation JSON): never
        # one person's value. An edge is the roundest number between the values it
        # separates (the same cut); a representative the roundest number among the
        # middle half of its bin's values, or the median when k rows share it.
        edges = [_roundest(float(v[a - 1]), float(v[a]), True, self.rare)
                 for a in bounds[1:-1]]
        reps = [representative(v[a:b], k, ptype == "integer", self.rare, self.resolution,
                                self.unsafe) for a, b in itertools.pairwise(bounds)]
        if any(r is None for r in reps):  # a bin with no value safe to publish
            return _UNSAFE
        if any(b <= a for a, b in itertools.pairwise(reps)):  # ties at rounding: medians
            reps = [float(v[a + (b - a - 1) // 2]) for a, b in itertools.pairwise(bounds)]
            if any(r in self.unsafe for r in reps):
                return _UNSAFE
        fmt = (lambda x: f"{x:g}") if ptype == "float" else (lambda x: f"{int(x)}")
        names = [f"[{fmt(a)}, {fmt(b)})" if np.isfinite(a) and np.isfinite(b) else
                 (f"< {fmt(b)}" if np.isfinite(b) else f">= {fmt(a)}")
                 for a, b in zip([-math.inf, *edges], [*edges, math.inf])]
        return {"method": "bins", "column": column, "edges": edges, "values": reps,
                "labels": names, "published_type": ptype}


def value_resolution(values: np.ndarray) -> float:
    """The coarsest power of ten, at most 1, that every value is a multiple of (0.1 for
    a column of one-decimal values); 0.0 when none down to 1e-12 is."""
    for d in range(13):
        scaled = values * 10.0 ** d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return 10.0 ** -d
    return 0.0


def _roundest(lo: float, hi: float, low_open: bool = False,
              avoid: frozenset = frozenset(), resolution: float = 0.0,
              spread: int = 1) -> float:
    """The number with the fewest significant digits in ``[lo, hi]`` (``(lo, hi]`` with
    ``low_open``), nearest the middle among those, not in ``avoid`` (the values fewer
    than k rows have) and a multiple of ``resolution``; ``hi`` when the interval is a
    point or holds no such number. ``spread``: the multiples of each roundness tried,
    nearest the middle first (1: only the nearest).

    >>> _roundest(1234.0, 1317.0), _roundest(3.0, 97.0), _roundest(0.5, 0.5)
    (1300.0, 50.0, 0.5)
    >>> _roundest(26.62, 26.68), _roundest(26.62, 26.68, resolution=0.1)
    (26.65, 26.68)
    """
    if not hi > lo:
        return float(hi)
    mid = (lo + hi) / 2
    step = 10.0 ** math.ceil(math.log10(hi - lo))
    for _ in range(40):
        for mult in (1.0, 0.5, 0.2):
            s = step * mult
            if s < resolution * (1 - 1e-9):  # finer than the column's values: never
                return float(hi)
            base = round(mid / s)
            for j in sorted(range(-spread + 1, spread), key=abs):
                m = float(round((base + j) * s, 12))
                inside = (lo < m if low_open else lo <= m) and m <= hi
                if inside and m not in avoid:
                    return m
        step /= 10
    return float(hi)


#: A bin count whose bins cannot all be published as a value (:meth:`ColumnBins.step`).
_UNSAFE = object()
#: Integers a representative is looked for among one by one (wider: the roundest).
_INTEGER_POOL = 100_000
#: Multiples of each roundness a representative is looked for among (``_roundest``).
_SPREAD = 64


def representative(values: np.ndarray, k: int, integer: bool = False,
                    rare: frozenset = frozenset(), resolution: float = 0.0,
                    unsafe: frozenset | None = None) -> float | None:
    """A bin's published value: its lower median when ``k`` rows share it, else the
    roundest number among the middle half of the bin's (sorted) values that is not
    ``rare`` (an integer for an integer column), never finer than the column's values
    (``resolution``): a published value fits the column's type (a ``numeric(4,1)``
    table keeps it exact). Failing that, the median (the roundest bound of the middle
    half for floats), or the roundest number of the whole bin, if it is not ``unsafe``
    (the values fewer rows have than a published value needs; default ``rare``): a
    representative never publishes one person's value. None when the bin has no such
    value (contiguous unique integers, such as an ID)."""
    unsafe = rare if unsafe is None else unsafe
    med = float(values[(values.size - 1) // 2])
    if np.count_nonzero(values == med) >= k:
        return med
    q1 = float(values[values.size // 4])
    q3 = float(values[max(values.size // 4, (3 * values.size) // 4 - 1)])
    found = _roundest_in(q1, q3, integer, rare, resolution, spread=1, pool=_INTEGER_POOL)
    if found is not None:
        return found
    fallback = med if integer else _roundest(q1, q3, avoid=rare, resolution=resolution)
    if fallback not in unsafe:
        return fallback
    for lo, hi in ((q1, q3), (float(values[0]), float(values[-1]))):  # wider, then all
        found = _roundest_in(lo, hi, integer, unsafe, resolution, spread=_SPREAD,
                             pool=_INTEGER_POOL)
        if found is not None:
            return found
    return None


def _roundest_in(lo: float, hi: float, integer: bool, avoid: frozenset,
                 resolution: float, spread: int, pool: float) -> float | None:
    """The roundest number of ``[lo, hi]`` not in ``avoid`` (an integer when
    ``integer``: each of at most ``pool`` integers looked at, else the roundest), or
    None."""
    if integer and hi - lo <= pool:
        found = [x for x in range(math.ceil(lo), math.floor(hi) + 1) if float(x) not in avoid]
        if not found:
            return None
        mid = (lo + hi) / 2
        return float(min(found, key=lambda x: (_digits(x), abs(x - mid))))
    found = _roundest(lo, hi, avoid=avoid, resolution=max(resolution, float(integer)),
                      spread=spread)
    return found if found not in avoid and lo <= found <= hi else None


def _digits(x: int) -> int:
    """Significant digits of an integer (0 has none): roundness of a representative."""
    x = abs(x)
    if x == 0:
        return 0
    while x % 10 == 0:
        x //= 10
    return len(str(x))


#: Cut points a class-aware binning chooses from (quantiles of the column).
CANDIDATE_CUTS = 1024


def _cut_order(v: np.ndarray, y: np.ndarray, n_bins: int, k: int
               ) -> tuple[np.ndarray, list[int]]:
    """``(pos, cuts)``: the candidate positions in sorted ``v`` (class codes ``y``) and
    the cuts into at most ``n_bins`` class-aware bins, indices into ``pos`` in the order
    they are made (each bin count's cuts are a prefix of a larger one's).

    Top-down, as a decision tree on one column (Fayyad and Irani, IJCAI 1993): the bin whose
    best cut among the quantiles (``CANDIDATE_CUTS``) gains the most class information is
    cut next. A cut keeps on each side two classes and ``k`` rows of every class held, so
    every bin is k-anonymous and distinct 2-diverse by construction. A cut must pass the
    minimum-description-length test (a noise-explained cut would let the boundaries tell
    members from non-members); then uninformative bins are cut at their median, largest
    first.
    """
    import heapq

    n, n_classes = v.size, int(y.max()) + 1
    q = np.quantile(v, np.linspace(0, 1, CANDIDATE_CUTS + 1)[1:-1], method="lower")
    pos = np.unique(np.searchsorted(v, np.unique(q[q > v[0]]), side="left"))
    pos = np.concatenate([[0], pos[(pos > 0) & (pos < n)], [n]])
    # class counts before each candidate position
    cum = np.zeros((pos.size, n_classes), dtype=np.int64)
    for c in range(n_classes):
        cum[:, c] = np.concatenate([[0], np.cumsum(y == c)])[pos]

    def entropy(counts: np.ndarray) -> np.ndarray:
        tot = counts.sum(axis=-1, keepdims=True)
        p = np.divide(counts, tot, out=np.zeros(counts.shape), where=tot > 0)
        return -(p * np.log(p, out=np.zeros(p.shape), where=p > 0)).sum(axis=-1)

    rare = cum[-1] < k  # classes below k in the whole column

    def ok(counts: np.ndarray) -> np.ndarray:
        return (((counts == 0) | (counts >= k) | rare).all(axis=-1)
                & ((counts > 0).sum(axis=-1) >= 2))

    def best(a: int, b: int) -> tuple[tuple[int, float], int] | None:
        if b - a < 2:
            return None
        whole = cum[b] - cum[a]
        left = cum[a + 1:b] - cum[a]
        right = whole - left
        allowed = ok(left) & ok(right)
        if not allowed.any():
            return None
        nl, nr = left.sum(axis=1), right.sum(axis=1)
        n_ab = whole.sum()
        gain = entropy(whole) - (nl * entropy(left) + nr * entropy(right)) / n_ab
        gain = np.where(allowed, gain, -np.inf)
        j = int(np.argmax(gain))
        if not mdl_accepts(whole, left[j], right[j], gain[j]):
            # no cut tells the classes apart better than the sample's own noise: the
            # median, which fits nothing to the labels (a cut fitted to noise would
            # tell who is in the release)
            mid = (pos[a] + pos[b]) / 2
            j = int(np.argmin(np.where(allowed, np.abs(pos[a + 1:b] - mid), np.inf)))
            return (0, float(n_ab)), a + 1 + j  # after every informative cut, largest first
        return (1, float(gain[j]) * n_ab), a + 1 + j

    def mdl_accepts(whole: np.ndarray, left: np.ndarray, right: np.ndarray,
                    gain: float) -> bool:
        """Fayyad and Irani's minimum-description-length test of a cut (in nats)."""
        n_ab = whole.sum()
        c, c1, c2 = ((x > 0).sum() for x in (whole, left, right))
        delta = np.log(3.0 ** c - 2) - (c * entropy(whole) - c1 * entropy(left)
                                         - c2 * entropy(right))
        return gain > (np.log(n_ab - 1) + delta) / n_ab

    if not ok(cum[-1] - cum[0])[()]:
        return pos, []
    heap: list = []
    cuts: list[int] = []
    first = best(0, pos.size - 1)
    if first is not None:
        heapq.heappush(heap, (-first[0][0], -first[0][1], 0, pos.size - 1, first[1]))
    while heap and len(cuts) + 1 < n_bins:
        *_, a, b, j = heapq.heappop(heap)
        cuts.append(j)
        for lo, hi in ((a, j), (j, b)):
            nxt = best(lo, hi)
            if nxt is not None:
                heapq.heappush(heap, (-nxt[0][0], -nxt[0][1], lo, hi, nxt[1]))
    return pos, cuts


def single_bin(values: np.ndarray, column: str, ptype: str, k: int,
                value_k: int | None = None) -> dict[str, Any]:
    """No split keeps k rows per bin: one bin, every value published as one
    representative (full suppression of the column's information, stated as such in the
    recipe), or as missing when every candidate is a value that fewer than ``value_k``
    rows have (:func:`representative`)."""
    v = np.sort(values[np.isfinite(values)])
    uniq, counts = np.unique(v, return_counts=True)
    unsafe = frozenset(uniq[counts < (k if value_k is None else value_k)].tolist())
    rep = float(v[(v.size - 1) // 2]) if v.size else 0.0  # the lower median, if safe
    if rep in unsafe:
        rep = representative(v, k, ptype == "integer",
                              frozenset(uniq[counts < k].tolist()), value_resolution(v), unsafe)
    if rep is None:
        return {"method": "suppress", "column": column, "keep": [], "published_type": ptype}
    return {"method": "bins", "column": column, "edges": [], "values": [rep],
            "labels": ["all values"], "published_type": ptype}
