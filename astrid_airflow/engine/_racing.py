"""Racing for the search phase: spend permutations only where they change a decision.

The search reward T̂ (Eq. 5) is a mean over R' permuted fits. ASTRID only uses T̂ to
compare partitions: the argmax over candidates at each sorting step, and the ranking of
the 2-split scores t_i. Racing (Maron & Moore 1997, Hoeffding races; Birattari et al.
2002, F-race) evaluates all candidates in rounds and stops early:

* **Common random numbers.** In round r every candidate uses the same permutation seed
  (same per-group row permutations, same classifier seed), so the noise of T̂ is largely
  shared and the *paired* differences between candidates are far less noisy than the
  scores themselves.
* **Elimination.** After each round, the leader is the candidate with the highest mean
  (ties: earliest, as the exact argmax). A candidate j is dropped when the upper
  confidence bound of its mean paired difference to the leader is below 0:
  ``mean(d_j) + t_{1-g, n-1} sd(d_j) / sqrt(n) < 0``, with ``g = risk / (2 (J-1))``
  (Bonferroni over the J − 1 comparisons of a look; a Student-t bound, i.e. a normal
  approximation to the mean of n paired differences). As in F-race, the bounds are not
  corrected for the repeated looks: an error of the race can only change which grouping
  is then *tested*, never the validity of its p-value, which is computed on other rows
  from independent draws.
* **Stopping.** When one candidate remains; or when every remaining candidate is
  within the indifference zone of the leader (its upper bound is at most the zone: the
  leader is zone-optimal, Bechhofer's indifference-zone formulation); or when the
  budget R' is spent.
* **Indifference zone, scaled to the noise.** The zone of a pair is
  ``min(delta, delta_sd * s)``, with ``s`` the root mean of the two candidates'
  per-round score variances (the Monte Carlo spread of a single permuted fit). A fixed
  ``delta`` alone is blind to scale: where every accuracy is near 1 (mushroom: single-fit
  sd ≈ 0.001), all candidates fall inside ``delta = 0.01`` after one look and the order
  becomes arbitrary. With ``delta_sd = 1`` (the default of ``astrid``) the zone is
  never coarser than the spread of one permuted fit, a scale the p-value's null
  distribution shares; where that spread exceeds ``delta`` nothing changes.

Ranking (the 2-split scores) uses the same bounds without elimination: stop when every
pair of neighbours in the current ranking is separated or within its zone; an item
whose neighbour pairs are both resolved pauses until the ranking gives it a new,
unresolved neighbour.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# evaluate(candidate_indices, start_round, n_rounds) -> (len(candidates), n_rounds) scores
Evaluate = Callable[[list[int], int, int], np.ndarray]


@dataclass(frozen=True)
class RaceOutcome:
    means: np.ndarray  # mean over the rounds each candidate ran
    rounds: np.ndarray  # rounds (permutations) run per candidate
    winner: int | None  # race_argmax only
    stop: str  # "single", "indifferent", "separated" or "budget"

    @property
    def n_fits(self) -> int:
        return int(self.rounds.sum())


def _half_width(d: np.ndarray, level: float) -> tuple[float, float]:
    """Mean of paired differences and its one-sided t bound half-width."""
    from scipy.stats import t as student_t

    n = d.shape[-1]
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else math.inf
    if sd == 0.0:
        return mean, 0.0
    return mean, float(student_t.ppf(1.0 - level, n - 1)) * sd / math.sqrt(n)


def _zone(a: np.ndarray, b: np.ndarray, delta: float, delta_sd: float | None) -> float:
    """Indifference zone of a pair of score rows over the same rounds."""
    if delta_sd is None or a.size < 2:
        return delta
    spread = math.sqrt((float(a.var(ddof=1)) + float(b.var(ddof=1))) / 2.0)
    return min(delta, delta_sd * spread)


def race_argmax(evaluate: Evaluate, n_candidates: int, *, budget: int, batch: int,
                delta: float, risk: float, delta_sd: float | None = None) -> RaceOutcome:
    """The candidate with the highest mean score, by racing (see module docstring)."""
    scores = np.zeros((n_candidates, budget))
    rounds = np.zeros(n_candidates, dtype=int)
    alive = list(range(n_candidates))
    level = risk / (2.0 * max(1, n_candidates - 1))
    n, stop = 0, "budget"
    while n < budget:
        count = min(batch, budget - n)
        scores[alive, n:n + count] = evaluate(list(alive), n, count)
        rounds[alive] += count
        n += count
        if len(alive) == 1:
            stop = "single"
            break
        means = scores[alive, :n].mean(axis=1)
        leader = alive[int(np.argmax(means))]
        keep, within = [leader], True
        for j in alive:
            if j == leader:
                continue
            mean, hw = _half_width(scores[j, :n] - scores[leader, :n], level)
            if mean + hw < 0.0:
                continue  # eliminated: surely worse than the leader
            keep.append(j)
            within &= mean + hw <= _zone(scores[j, :n], scores[leader, :n], delta, delta_sd)
        alive = sorted(keep)
        if len(alive) == 1:
            stop = "single"
            break
        if within:
            stop = "indifferent"
            break
    means = np.array([scores[j, :rounds[j]].mean() for j in range(n_candidates)])
    final = np.array([means[j] if j in alive else -np.inf for j in range(n_candidates)])
    return RaceOutcome(means=means, rounds=rounds, winner=int(np.argmax(final)), stop=stop)


def race_ranking(evaluate: Evaluate, n_items: int, *, budget: int, batch: int,
                 delta: float, risk: float, delta_sd: float | None = None) -> RaceOutcome:
    """Means of all items, drawn until neighbours in the ranking are resolved.

    A pair of neighbours is resolved when its paired difference (over the rounds both
    ran, common random numbers) is surely positive or surely within its zone. An item
    whose two neighbour pairs are resolved stops drawing; it draws again, from where it
    stopped, if the ranking moves and gives it an unresolved neighbour.
    """
    scores = np.zeros((n_items, budget))
    rounds = np.zeros(n_items, dtype=int)
    level = risk / (2.0 * max(1, n_items - 1))
    active, stop = set(range(n_items)), "budget"

    def resolved(a: int, b: int) -> bool:
        n = min(rounds[a], rounds[b])
        mean, hw = _half_width(scores[a, :n] - scores[b, :n], level)
        zone = _zone(scores[a, :n], scores[b, :n], delta, delta_sd)
        return mean - hw > 0.0 or (mean + hw <= zone and mean - hw >= -zone)

    while active:
        by_start: dict[int, list[int]] = {}
        for i in sorted(active):
            by_start.setdefault(int(rounds[i]), []).append(i)
        for first, idx in sorted(by_start.items()):
            count = min(batch, budget - first)
            scores[idx, first:first + count] = evaluate(idx, first, count)
            rounds[idx] += count
        means = np.array([scores[i, :rounds[i]].mean() for i in range(n_items)])
        if n_items == 1:
            stop = "single"
            break
        order = np.argsort(-means, kind="stable")
        unresolved = {int(x) for a, b in itertools.pairwise(order) if not resolved(a, b)
                      for x in (a, b)}
        if not unresolved:
            stop = "separated"
            break
        active = {i for i in unresolved if rounds[i] < budget}
    return RaceOutcome(means=means, rounds=rounds, winner=None, stop=stop)
