"""Learning on a stratified sample of a large reference table.

ASTRID's cost grows with the rows of every fit, while what it measures (which
attributes a classifier needs together) stops changing once the classifier has seen
enough rows. So on a large table the search can run on a stratified sample: every
class keeps its share of rows (at least ``MIN_PER_CLASS``, or all of a smaller class).
The sample is drawn from the run's own seed stream, so it is reproducible for a seed,
and recorded in the result (``sample``: rule, rows, seed). The surrogate shuffle still
applies the learned grouping to every row of the table.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_positive_int

__all__ = ["MIN_PER_CLASS", "check_sample", "stratified_sample"]

# Rows kept of every class (or all of a smaller class): enough for the 50/25/25 split.
MIN_PER_CLASS = 8


def stratified_sample(codes: np.ndarray, n: int, seed: np.random.SeedSequence) -> np.ndarray:
    """Sorted row indices of a stratified sample of about ``n`` rows.

    Classes get ``n`` times their share (largest remainders round up), at least
    ``min(MIN_PER_CLASS, class size)``; rows within a class are drawn without
    replacement. ``n >= len(codes)`` returns every row.
    """
    total = codes.size
    if n >= total:
        return np.arange(total)
    counts = np.bincount(codes)
    exact = n * counts / total
    alloc = np.floor(exact).astype(int)
    short = n - int(alloc.sum())
    if short > 0:  # largest remainders, ties to the earlier class
        alloc[np.argsort(-(exact - alloc), kind="stable")[:short]] += 1
    alloc = np.minimum(counts, np.maximum(alloc, np.minimum(counts, MIN_PER_CLASS)))
    rng = np.random.default_rng(seed)
    picked = [rng.choice(np.flatnonzero(codes == c), size=int(a), replace=False)
              for c, a in enumerate(alloc) if a]
    return np.sort(np.concatenate(picked))


def check_sample(sample: object) -> int | str | None:
    """``sample`` as None, ``"auto"`` or a row count >= 2 * MIN_PER_CLASS."""
    if sample is None or (isinstance(sample, str) and sample.lower() == "none"):
        return None
    if isinstance(sample, str) and sample.lower() == "auto":
        return "auto"
    if isinstance(sample, str) and sample.isdigit():
        sample = int(sample)
    return check_positive_int(sample, "sample", minimum=2 * MIN_PER_CLASS)
