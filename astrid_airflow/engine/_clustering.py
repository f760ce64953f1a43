"""The clustering algorithm of ASTRID (Alg. 1), for any reward function.

Kept free of data and classifiers so its guarantee can be tested on its own:
Theorem 1 of the paper says it recovers the best partition of every size exactly when
the reward is monotonic (breaking a group of the optimal partition lowers the reward).

A reward is called on a batch of partitions (tuples of tuples of attribute indices) and
returns one number each, so a stochastic reward can evaluate a batch in parallel.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

Partition = tuple[tuple[int, ...], ...]
Reward = Callable[[list[Partition]], np.ndarray]


def sort_attributes(m: int, reward: Reward,
                    on_step: Callable[[int, list[int], np.ndarray], None] | None = None,
                    first: Sequence[int] = (),
                    blocks: Sequence[Sequence[int]] | None = None) -> list[int]:
    """Lines 1–6: detach singletons greedily, each time the argmax of the reward.

    Candidate ``j`` is scored on ``{C \\ {j}} ∪ {{l} : l ∈ B ∪ {j}}``. Ties go to the
    first candidate in the current order; the last attribute needs no evaluation.
    ``first`` (attributes a screen found independent of all others given the class) are
    detached before the others, in the given order, without evaluation. ``blocks`` (the
    screen's connected components of dependent pairs, covering every other attribute)
    are sorted one after another: the candidates of a step are the current block's
    remaining attributes (C still holds every attribute not yet detached), and a block's
    last attribute is detached without evaluation, like the last attribute overall —
    it depends on no attribute left outside its block. Cost: the sum of
    b(b+1)/2 − 1 over blocks instead of m'(m'+1)/2 − 1.
    """
    detached: list[int] = list(first)
    remaining = [i for i in range(m) if i not in set(detached)]
    for block in ([remaining] if blocks is None else [list(b) for b in blocks]):
        todo = [i for i in remaining if i in set(block)]
        while len(todo) > 1:
            candidates = [(tuple(c for c in remaining if c != j),
                           *((b,) for b in [*detached, j])) for j in todo]
            scores = np.asarray(reward(candidates), dtype=float)
            best = int(np.argmax(scores))
            if on_step is not None:
                on_step(len(detached), list(todo), scores)
            detached.append(todo.pop(best))
            remaining.remove(detached[-1])
        detached += todo
        remaining = [i for i in remaining if i not in set(todo)]
    return detached + remaining


def sorting_evaluations(m_sorted: int, blocks: Sequence[int] | None = None) -> int:
    """Candidates ``sort_attributes`` evaluates: m'(m'+1)/2 − 1 for one block of m'
    attributes, the sum over blocks of sizes ``blocks`` otherwise."""
    sizes = [m_sorted] if blocks is None else list(blocks)
    return sum(max(0, b * (b + 1) // 2 - 1) for b in sizes)


def split_scores(order: Sequence[int], reward: Reward, free: int = 0) -> np.ndarray:
    """Line 7: t_i = reward({a_1..a_i}, {a_{i+1}..a_m}) for i = 1..m−1.

    The first ``free_cuts(free, m)`` cuts (inside and at the end of a screen's free
    prefix: they separate only attributes the screen found independent of every other
    given the class, so they break no dependence it sees) are not evaluated: NaN, which
    ``best_cuts`` ranks first, as it would rank a cut that breaks nothing.
    """
    order = list(order)
    t = np.full(len(order) - 1, np.nan)
    n_free = free_cuts(free, len(order))
    if n_free < t.size:
        t[n_free:] = np.asarray(reward([(tuple(order[:i]), tuple(order[i:]))
                                        for i in range(n_free + 1, len(order))]), dtype=float)
    return t


def free_cuts(free: int, m: int) -> int:
    """How many leading cuts of an order of ``m`` starting with ``free`` screened-out
    attributes are not evaluated (cuts 1..free, at most m − 1)."""
    return min(max(0, int(free)), m - 1)


def best_cuts(scores: Sequence[float], k: int) -> list[int]:
    """Line 9: the k−1 cut positions (1-based) with the largest t_i (ties: earliest).

    Cuts not evaluated (NaN, a screen's free prefix: ``split_scores``) rank first.
    """
    s = np.asarray(scores, dtype=float)
    ranked = np.argsort(-np.where(np.isnan(s), np.inf, s), kind="stable")
    return sorted(int(i) + 1 for i in ranked[: k - 1])


def cut(order: Sequence[int], cuts: Sequence[int]) -> Partition:
    """Lines 10–11: the segments of ``order`` between consecutive cuts."""
    bounds = [0, *sorted(cuts), len(order)]
    return tuple(tuple(order[a:b]) for a, b in itertools.pairwise(bounds) if b > a)
