"""Sequential Monte Carlo p-values that decide like the exact test with R permutations.

The exact test (Eq. 3) draws R null statistics T(D1..DR) and rejects at level alpha when
``p = (1 + S_R) / (1 + R) < alpha``, S_R = #{i <= R : T(Di) >= T(D0)}; i.e. it rejects iff
``S_R <= c`` with ``c + 1 = min{s : (1 + s) / (1 + R) >= alpha}``. The adaptive test
draws the SAME null statistics in the same order (same seeds), in batches, and stops:

1. **Curtailment (Besag & Clifford 1991).** As soon as ``S_n >= h`` with
   ``h = min{s : s >= alpha R and s >= c + 1}``, stop and report the Besag–Clifford
   p-value ``p = h' / n`` (``h'`` = hits observed, ``n`` = draws). The exact test could
   not reject any more (``S_R >= S_n >= c + 1``) and ``p >= h / R >= alpha``: the
   decision is the exact test's, with probability one. If the budget R is reached,
   ``p = (1 + S_R) / (1 + R)``, the exact p-value itself.

2. **Early rejection (a truncated sequential test with a computed risk).** At each look
   ``n`` (multiples of the batch size, before R) stop and reject when ``S_n <= r_n``.
   The boundary ``r_n`` is non-decreasing in ``n`` and steps up only at a few looks
   ``n_0 < n_1 < ...``; at a step look ``n_j`` the new level is the largest ``r`` with

       risk(n_j, r) = sup_p P_p(S_{n_j} <= r and S_R >= c + 1) <= share_j,

   where p is the unknown true p-value (the probability that one permuted statistic
   reaches T(D0)), S_n ~ Bin(n, p), S_R − S_n ~ Bin(R − n, p) independently. As S_n
   never decreases, stopping at a look between steps (same ``r``) is an event contained
   in the previous step's, so only the steps are charged: by the union bound the chance
   that the adaptive test rejects while the exact test with the same R draws would not
   is at most ``sum_j risk(n_j, r_j) <= epsilon``, for every p (the "resampling risk"
   of Gandy 2009 and Ding, Gandy & Hahn 2020, measured against the R-draw test instead
   of the infinite-draw one). The budget is spent front-loaded (each step may use 60 %
   of what is left), because clear rejections (no hit at all) are the common case and
   are decided at the first step (70 draws for R = 250, alpha = 0.05, epsilon = 0.01).
   The supremum is taken over a fine grid of p.

Consequences: the decision differs from the exact test's with probability at most
``risk_bound`` (reported, <= epsilon); under a true null the rejection rate is at most
``alpha + epsilon``; when no early rejection happens the reported p-value is the
Besag–Clifford p-value, which is valid.

References
----------
Besag, J. and Clifford, P. (1991). Sequential Monte Carlo p-values. Biometrika 78(2).
Gandy, A. (2009). Sequential implementation of Monte Carlo tests with uniformly bounded
resampling risk. JASA 104(488).
Ding, D., Gandy, A. and Hahn, G. (2020). A simple method for implementing Monte Carlo
tests. Computational Statistics 35, 1373–1392.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_SPEND = 0.6  # share of the remaining risk budget a boundary step may use
_TOL = 1e-12  # scores are ratios of counts; absorb float rounding (as empirical_p_value)


@dataclass(frozen=True)
class SequentialPlan:
    """Stopping boundaries for R draws at level alpha (see the module docstring)."""

    n_max: int
    alpha: float
    batch: int
    curtail_hits: int  # h: stop, not rejected, once S_n >= h
    exact_reject_max: int  # c: the exact test rejects iff S_R <= c (-1: never)
    reject_at: tuple[tuple[int, int], ...]  # (n, r_n): stop and reject if S_n <= r_n
    risk_bound: float  # sum of risk(n, r_n): P(decision != exact decision) <= this


@dataclass(frozen=True)
class SequentialOutcome:
    p_value: float
    rejected: bool
    n_draws: int
    hits: int
    stop: str  # "curtailed", "early-reject" or "budget"
    null_scores: np.ndarray


def _grid() -> np.ndarray:
    # dense where the risk peaks (near alpha), log-spaced in the tails
    return np.unique(np.concatenate([np.geomspace(1e-5, 1.0 - 1e-9, 3000),
                                     np.linspace(1e-3, 0.5, 5000)]))


def _risks(n: int, r_max: int, n_max: int, c: int, grid: np.ndarray) -> np.ndarray:
    """risk(n, r) for r = 0..r_max: sup over the grid of p of
    P(Bin(n, p) <= r and Bin(n, p) + Bin(n_max - n, p) >= c + 1)."""
    from scipy.stats import binom

    s = np.arange(r_max + 1)[:, None]
    joint = binom.pmf(s, n, grid) * binom.sf(c - s, n_max - n, grid)
    return np.cumsum(joint, axis=0).max(axis=1)


@lru_cache(maxsize=64)
def plan(n_max: int, alpha: float, batch: int, epsilon: float) -> SequentialPlan:
    """Boundaries for ``n_max`` draws in batches of ``batch`` with risk <= ``epsilon``."""
    # c: largest S with (1 + S)/(1 + R) < alpha; h: smallest s >= alpha R and >= c + 1.
    c = math.ceil(alpha * (n_max + 1) - 1 - 1e-9) - 1
    h = max(math.ceil(alpha * n_max - 1e-9), c + 1, 1)
    looks = list(range(batch, n_max, batch))
    reject_at, spent, level = [], 0.0, -1
    if c >= 0 and looks and epsilon > 0:
        grid = _grid()
        for n in looks:
            # thresholds whose own p-value (r + 1)/(n + 1) is below alpha
            r_max = min(c, math.ceil(alpha * (n + 1)) - 2)
            if r_max > level:
                share = _SPEND * (epsilon - spent)
                risks = _risks(n, r_max, n_max, c, grid)
                ok = np.flatnonzero(risks <= share)
                if ok.size and int(ok.max()) > level:
                    level = int(ok.max())  # risks grow with r
                    spent += float(risks[level])
            if level >= 0:
                reject_at.append((n, level))
    return SequentialPlan(n_max=n_max, alpha=alpha, batch=batch, curtail_hits=h,
                          exact_reject_max=c, reject_at=tuple(reject_at),
                          risk_bound=spent)


def run_sequential(observed: float, draw: Callable[[int, int], np.ndarray],
                   p: SequentialPlan) -> SequentialOutcome:
    """Draw null scores in batches (``draw(start, count)``) until a boundary is hit."""
    reject = dict(p.reject_at)
    scores: list[np.ndarray] = []
    n = hits = 0
    while n < p.n_max:
        count = min(p.batch, p.n_max - n)
        batch = np.asarray(draw(n, count), dtype=float)
        scores.append(batch)
        hits += int(np.count_nonzero(batch >= observed - _TOL))
        n += count
        if hits >= p.curtail_hits:
            # Besag-Clifford: p = h / L, L = the draw at which the h-th hit occurred
            # (the rest of the batch was computed anyway and is kept in null_scores).
            allv = np.concatenate(scores)
            at = int(np.flatnonzero(allv >= observed - _TOL)[p.curtail_hits - 1]) + 1
            return SequentialOutcome(p.curtail_hits / at, False, n, hits, "curtailed", allv)
        if n in reject and hits <= reject[n]:
            return SequentialOutcome((1.0 + hits) / (1.0 + n), True, n, hits,
                                     "early-reject", np.concatenate(scores))
    pval = (1.0 + hits) / (1.0 + n)
    return SequentialOutcome(pval, pval < p.alpha, n, hits, "budget", np.concatenate(scores))
