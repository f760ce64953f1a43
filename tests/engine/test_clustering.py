"""Theorem 1: Alg. 1 recovers a planted partition under any monotone reward."""

import numpy as np
import pytest

from astrid_airflow.engine._clustering import best_cuts, cut, sort_attributes, split_scores


def _random_partition(rng, m):
    labels = rng.integers(0, rng.integers(1, m + 1), m)
    attrs = rng.permutation(m)  # planted groups are not contiguous in column order
    groups = {}
    for a, lab in zip(attrs, labels):
        groups.setdefault(lab, []).append(int(a))
    return [frozenset(g) for g in groups.values()]


def _monotone_reward(planted, weights, transform):
    """T̂(S) = f(sum of the weights of planted groups left unbroken by S), f increasing:
    F(S) ⊂ F(S') implies T̂(S) < T̂(S') (the paper's Definition 2)."""

    def reward(partitions):
        out = []
        for part in partitions:
            blocks = [frozenset(b) for b in part]
            kept = sum(w for g, w in zip(planted, weights)
                       if any(g <= b for b in blocks))
            out.append(transform(kept))
        return np.asarray(out)

    return reward


TRANSFORMS = {
    "identity": lambda x: x,
    "exp": np.exp,
    "log1p": np.log1p,
    "step-free affine": lambda x: 3.0 - 0.5 / (1.0 + x),
}


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("equal_weights", [False, True])
def test_alg1_recovers_planted_partition(transform, equal_weights):
    rng = np.random.default_rng(hash((transform, equal_weights)) % 2**32)
    for _ in range(150):
        m = int(rng.integers(2, 13))
        planted = _random_partition(rng, m)
        weights = np.ones(len(planted)) if equal_weights else rng.uniform(0.1, 1.0,
                                                                          len(planted))
        reward = _monotone_reward(planted, weights, TRANSFORMS[transform])
        order = sort_attributes(m, reward)
        assert sorted(order) == list(range(m))
        # every planted group is a contiguous segment of the order
        for g in planted:
            pos = sorted(order.index(a) for a in g)
            assert pos[-1] - pos[0] == len(g) - 1
        t = split_scores(order, reward)
        found = cut(order, best_cuts(t, len(planted)))
        assert {frozenset(b) for b in found} == set(planted)


def test_best_cuts_ties_go_to_the_earliest_cut():
    assert best_cuts([0.5, 0.9, 0.9, 0.1], 3) == [2, 3]
    assert best_cuts([0.7, 0.7, 0.7], 2) == [1]
    assert best_cuts([0.2, 0.3], 1) == []


def test_cut_segments():
    assert cut([3, 1, 2, 0], [1, 3]) == ((3,), (1, 2), (0,))
    assert cut([3, 1, 2, 0], []) == ((3, 1, 2, 0),)
