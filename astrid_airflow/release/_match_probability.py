"""The expected intact-row proportion's probabilities (ASTRID paper, Sec. 6.2).

:func:`match_probabilities`: the probability that a row survives shuffling, from its
group counts and class size (exact hypergeometric chain up to :data:`EXACT_CAP`, the
Poisson approximation beyond), in blocks of rows; :func:`expected`: its mean over the
distinct rows from the per-group counts of :func:`~._metrics.privacy_metrics`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Rows whose smallest group count exceeds this use the Poisson approximation.
EXACT_CAP = 64
#: Rows whose expected number of matches mu is at most this take mu itself, which is
#: within mu^2 / 2 above the exact probability (a relative 5e-7), instead of the chain.
MU_EXACT = 1e-6


def _log_comb(a: np.ndarray, b: np.ndarray, log_factorial: np.ndarray) -> np.ndarray:
    """log C(a, b) elementwise for integer arrays (-inf where b < 0 or b > a), from a
    table of ``gammaln(i + 1)``: the values ``gammaln`` gives on the same integers, at a
    lookup's cost (the chain's batches hold millions of entries)."""
    a, b = np.broadcast_arrays(a, b)
    ok = (b >= 0) & (b <= a)
    out = np.full(a.shape, -np.inf)
    aa, bb = a[ok], b[ok]
    out[ok] = log_factorial[aa] - log_factorial[bb] - log_factorial[aa - bb]
    return out


def _all_ones(sizes: np.ndarray, n_groups: int) -> np.ndarray:
    """The probability of an all-ones row per class size, computed exactly as the
    general path computes it for such a row (same operations, same order)."""
    m = np.ones((sizes.shape[0], n_groups), dtype=np.int64)
    return np.prod((m / sizes[:, None])[:, 1:], axis=1)


def _p_match_chain(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Exact P(J_1 ∩ ... ∩ J_G ≠ ∅) for rows with m[:, 0] <= EXACT_CAP (m sorted)."""
    from scipy.special import gammaln

    r, g_count = m.shape
    out = np.empty(r)
    n = np.asarray(n, dtype=np.int64)
    log_factorial = gammaln(np.arange(int(n.max(initial=0)) + 1, dtype=float) + 1)
    batch = max(1, 2_000_000 // (EXACT_CAP + 1) ** 2)
    for lo in range(0, r, batch):
        mb, nb = m[lo:lo + batch], n[lo:lo + batch, None, None]
        size = int(mb[:, 0].max()) + 1
        s = np.arange(size)[None, :, None]
        t = np.arange(size)[None, None, :]
        p = np.zeros((mb.shape[0], size))
        p[np.arange(mb.shape[0]), mb[:, 0]] = 1.0  # |J_1| = m_1 for sure
        choose_t = _log_comb(s, t, log_factorial)  # the same for every group
        for g in range(1, g_count):
            # Hypergeometric: |I ∩ J_g| = t given |I| = s, J_g a random m_g-subset. The
            # matrix depends on (n_c, m_g) alone: once per distinct pair, then gathered
            pairs, which = np.unique(np.stack([nb[:, 0, 0], mb[:, g]], axis=1), axis=0,
                                     return_inverse=True)
            pn, pm = pairs[:, 0, None, None], pairs[:, 1, None, None]
            logt = (choose_t + _log_comb(pn - s, pm - t, log_factorial)
                    - _log_comb(pn, pm, log_factorial))
            p = np.einsum("rs,rst->rt", p, np.exp(logt)[which.ravel()])
        out[lo:lo + batch] = 1.0 - p[:, 0]
    return np.clip(out, 0.0, 1.0)


def match_probabilities(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """P(some surrogate row equals an original row) from its group counts.

    Parameters
    ----------
    m : ndarray of shape (n_rows, G)
        ``m[i, g]``: rows of row i's class whose group-g values equal row i's.
    n : ndarray of shape (n_rows,)
        Size n_c of row i's class.

    Notes
    -----
    Surrogate row j equals row i iff, for every group g, pi_g(j) lands in the m_g rows
    that share row i's group-g values, i.e. j ∈ J_g = pi_g^{-1}(that set). The J_g are
    independent uniform random m_g-subsets of the class, so the probability is
    P(J_1 ∩ ... ∩ J_G ≠ ∅), computed exactly by the hypergeometric chain over |J_1 ∩ ...
    ∩ J_g| when the smallest m_g is at most ``EXACT_CAP`` (with smallest m_g = 1 it
    reduces to the product of m_g / n_c over the other groups; with all m_g = 1 to
    n_c^-(G-1)). Beyond the cap the Poisson approximation 1 - exp(-mu) with
    mu = n_c * prod_g(m_g / n_c) is used.
    """
    m = np.asarray(m)
    return _match_probabilities(lambda lo, hi: m[lo:hi], m.shape, n)


#: Rows per block in :func:`_match_probabilities` (bounds its int64/float temporaries).
_PROB_ROWS = 1 << 18


def _match_probabilities(rows_of: Callable[[int, int], np.ndarray], shape: tuple[int, int],
                         n: np.ndarray, presorted: bool = False) -> np.ndarray:
    """:func:`match_probabilities` of the ``shape`` matrix whose rows ``lo:hi`` are
    ``rows_of(lo, hi)``, in blocks of :data:`_PROB_ROWS` rows (``presorted``: each row
    comes sorted ascending as int64, so the sort is skipped).

    Every value is computed as by one call on the whole matrix (row-wise products; the
    exact chain gets all its rows in one call, in order), so blocking changes no bit.
    """
    n_rows, n_groups = shape
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(n_rows)
    if n_groups == 1:
        out[:] = 1.0
        return out
    chain_rows, chain_m = [], []
    for lo in range(0, n_rows, _PROB_ROWS):
        hi = min(n_rows, lo + _PROB_ROWS)
        raw = rows_of(lo, hi)
        nb, ob = n[lo:hi], out[lo:hi]
        ones = raw.max(axis=1) == 1
        if ones.any():  # every group value unique in its class: n_c^-(G-1), once per n_c
            sizes, where = np.unique(nb[ones], return_inverse=True)
            ob[ones] = _all_ones(sizes, n_groups)[where]
            if ones.all():
                continue
        m = raw if presorted else np.sort(np.asarray(raw, dtype=np.int64), axis=1)
        if ones.any():
            m, nb, sub = m[~ones], nb[~ones], np.flatnonzero(~ones)
        else:
            sub = None
        ob = np.empty(m.shape[0]) if sub is not None else ob
        frac = m / nb[:, None]
        single = m[:, 0] == 1
        ob[single] = np.prod(frac[single, 1:], axis=1)
        mu = nb * np.prod(frac, axis=1)
        tiny = ~single & (mu <= MU_EXACT)  # the bound mu, within mu^2 / 2 of exact
        ob[tiny] = mu[tiny]
        chain = ~single & ~tiny & (m[:, 0] <= EXACT_CAP)
        if chain.any():
            chain_at = np.flatnonzero(chain)
            chain_rows.append(lo + (chain_at if sub is None else sub[chain_at]))
            chain_m.append(m[chain])
        big = ~single & ~tiny & ~chain
        if big.any():
            ob[big] = -np.expm1(-mu[big])
        if sub is not None:
            out[lo + sub[~chain]] = ob[~chain]
    if chain_rows:
        rows = np.concatenate(chain_rows)
        out[rows] = _p_match_chain(np.concatenate(chain_m), n[rows])
    return out


#: Below this, a product of n_c^-(G-1) could lose bits: the general path instead.
_TINY = 1e-280


def expected(counts: list[np.ndarray | None], k: int, first: np.ndarray | None,
              classes: np.ndarray, class_sizes: np.ndarray) -> float:
    """Mean match probability over the distinct rows (``first``; None: every row).

    A row with some group count of 1 (every row, when some group is all distinct)
    matches with probability ``prod_g m_g / n_c^(G-1)``: the all-ones value of
    :func:`_match_probabilities` for its class, times its counts, in a few passes over
    columns instead of a per-row sort (equal to the general path within a few ulps).
    Other rows go through :func:`_match_probabilities` as before, bit for bit.
    """
    at = (lambda a: a) if first is None else (lambda a: a[first])
    present = class_sizes > 0
    ones = np.zeros(class_sizes.shape[0])
    ones[present] = _all_ones(class_sizes[present], k)
    kept = [c for c in counts if c is not None]
    rows = np.arange(classes.shape[0]) if first is None else first
    if ones[present].min() < _TINY:
        return float(_general_probabilities(kept, k, rows, class_sizes[at(classes)]).mean())
    probs = ones[at(classes)]
    low = None
    for c in kept:
        cf = at(c)
        probs *= cf
        if len(kept) == k:  # no all-distinct group: track each row's smallest count
            low = cf.copy() if low is None else np.minimum(low, cf, out=low)
    if low is not None:
        rest = np.flatnonzero(low > 1)
        if rest.shape[0]:
            probs[rest] = _general_probabilities(
                kept, k, rows[rest], class_sizes[classes[rows[rest]]])
    return float(probs.mean())


def _general_probabilities(kept: list[np.ndarray], k: int, rows: np.ndarray,
                           sizes: np.ndarray) -> np.ndarray:
    """:func:`match_probabilities` of ``rows`` from the counts of the ``kept`` groups
    (the other ``k - len(kept)`` groups count 1 everywhere)."""

    def rows_of(lo: int, hi: int) -> np.ndarray:
        # Sorted rows built cheaply: all-distinct groups give leading ones, and only the
        # other groups' counts need sorting (the same rows the general path sorts).
        m = np.ones((hi - lo, k), dtype=np.int64)
        if kept:
            rest = np.empty((hi - lo, len(kept)), dtype=np.int64)
            for j, c in enumerate(kept):
                rest[:, j] = c[rows[lo:hi]]
            rest.sort(axis=1)
            m[:, k - len(kept):] = rest
        return m

    return _match_probabilities(rows_of, (rows.shape[0], k), sizes, presorted=True)
