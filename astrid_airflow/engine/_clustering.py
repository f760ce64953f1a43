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

__all__ = ["Partition", "best_cuts", "cut", "sort_attributes", "split_scores"]

Partition = tuple[tuple[int, ...], ...]
Reward = Callable[[list[Partition]], np.ndarray]


def sort_attributes(m: int, reward: Reward,
                    on_step: Callable[[int, list[int], np.ndarray], None] | None = None,
                    first: Sequence[int] = ()) -> list[int]:
    """Lines 1–6: detach singletons greedily, each time the argmax of the reward.

    Candidate ``j`` is scored on ``{C \\ {j}} ∪ {{l} : l ∈ B ∪ {j}}``. Ties go to the
    first candidate in the current order; the last attribute needs no evaluation.
    ``first`` (attributes a screen found independent of all others given the class) are
    detached before the others, in the given order, without evaluation.
    """
    detached: list[int] = list(first)
    remaining = [i for i in range(m) if i not in set(detached)]
    while len(remaining) > 1:
        candidates = [(tuple(c for c in remaining if c != j),
                       *((b,) for b in [*detached, j])) for j in remaining]
        scores = np.asarray(reward(candidates), dtype=float)
        best = int(np.argmax(scores))
        if on_step is not None:
            on_step(len(detached), list(remaining), scores)
        detached.append(remaining.pop(best))
    return detached + remaining


def split_scores(order: Sequence[int], reward: Reward) -> np.ndarray:
    """Line 7: t_i = reward({a_1..a_i}, {a_{i+1}..a_m}) for i = 1..m−1."""
    order = list(order)
    return np.asarray(reward([(tuple(order[:i]), tuple(order[i:]))
                              for i in range(1, len(order))]), dtype=float)


def best_cuts(scores: Sequence[float], k: int) -> list[int]:
    """Line 9: the k−1 cut positions (1-based) with the largest t_i (ties: earliest)."""
    ranked = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    return sorted(int(i) + 1 for i in ranked[: k - 1])


def cut(order: Sequence[int], cuts: Sequence[int]) -> Partition:
    """Lines 10–11: the segments of ``order`` between consecutive cuts."""
    bounds = [0, *sorted(cuts), len(order)]
    return tuple(tuple(order[a:b]) for a, b in itertools.pairwise(bounds) if b > a)
