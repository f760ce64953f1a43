"""The singling-out attack (Giomi et al. 2023, Sec. 4.1): univariate and multivariate
predicates built from the release that match exactly one released row, scored on the
training and control tables (:func:`singling_out_attack`, :func:`singling_out_risk`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import (
    check_attack_count,
    check_positive_int,
    check_seed_sequence,
)

from ._attack_tables import BLOCK, AttackTables, targets
from ._attacks import AttackRisk, result

# A predicate is a conjunction of (column, op, value); ops: 0 "==", 1 "<=", 2 ">=",
# 3 "isna". Arrays of predicates: cols (q, m), ops (q, m), vals (q, m).
_OPS = ("==", "<=", ">=", "isna")


def _match_counts(x: np.ndarray, numeric: np.ndarray, cols: np.ndarray, ops: np.ndarray,
                  vals: np.ndarray) -> np.ndarray:
    """Rows of ``x`` matched by each predicate (vectorised over predicates)."""
    q, m = cols.shape
    out = np.empty(q, dtype=np.int64)
    step = max(1, BLOCK // max(1, x.shape[0]))
    for start in range(0, q, step):
        sl = slice(start, start + step)
        mask = np.ones((x.shape[0], cols[sl].shape[0]), dtype=bool)
        for k in range(m):
            data = x[:, cols[sl, k]]  # (n, chunk)
            op, v = ops[sl, k], vals[sl, k]
            missing = np.isnan(data) | ((~numeric[cols[sl, k]]) & (data < 0))
            with np.errstate(invalid="ignore"):
                cond = np.where(op == 0, data == v,
                                np.where(op == 1, data <= v,
                                         np.where(op == 2, data >= v, missing)))
            mask &= cond & ((op == 3) | ~missing)
        out[sl] = mask.sum(axis=0)
    return out


def _single_match(x: np.ndarray, numeric: np.ndarray, cols: np.ndarray, ops: np.ndarray,
                  vals: np.ndarray) -> np.ndarray:
    """Whether each predicate matches exactly one row of ``x``.

    Rows are scanned in growing blocks and a predicate is dropped once it has two
    matches: most candidate predicates match many rows and are settled by the first few
    hundred rows.
    """
    counts = np.zeros(cols.shape[0], dtype=np.int64)
    alive = np.arange(cols.shape[0])
    start, block = 0, 256
    while start < x.shape[0] and alive.size:
        counts[alive] += _match_counts(x[start:start + block], numeric, cols[alive],
                                       ops[alive], vals[alive])
        alive = alive[counts[alive] < 2]
        start, block = start + block, min(2 * block, 16384)
    return counts == 1


def _univariate_predicates(t: AttackTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols, ops, vals = [], [], []
    rel = t.released
    for j in range(rel.shape[1]):
        v = rel[:, j]
        missing = np.isnan(v) | ((not t.numeric[j]) & (v < 0))
        if missing.sum() == 1:
            cols.append(j), ops.append(3), vals.append(np.nan)
        present = v[~missing]
        if present.size == 0:
            continue
        if t.numeric[j]:
            cols += [j, j]
            ops += [1, 2]
            vals += [present.min(), present.max()]
        uniq, counts = np.unique(present, return_counts=True)
        rare = uniq[counts == 1]
        cols += [j] * rare.size
        ops += [0] * rare.size
        vals += rare.tolist()
    return (np.array(cols, dtype=np.intp)[:, None], np.array(ops, dtype=np.int8)[:, None],
            np.array(vals, dtype=np.float64)[:, None])


def _multivariate_predicates(t: AttackTables, n_wanted: int, n_cols: int,
                             rng: np.random.Generator, max_attempts: int
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rel = t.released
    n, d = rel.shape
    m = min(n_cols, d)
    with np.errstate(all="ignore"):
        medians = np.array([np.nanmedian(rel[:, j]) if t.numeric[j] and
                            np.isfinite(rel[:, j]).any() else np.nan for j in range(d)])
    found: dict[tuple, None] = {}
    attempts = 0
    batch = max(64, 2 * n_wanted)
    while len(found) < n_wanted and attempts < max_attempts:
        b = min(batch, max_attempts - attempts)
        attempts += b
        rows = rng.integers(0, n, size=b)
        cols = np.sort(np.argsort(rng.random((b, d)), axis=1)[:, :m], axis=1)
        vals = rel[rows[:, None], cols]
        num = t.numeric[cols]
        missing = np.isnan(vals) | (~num & (vals < 0))
        ops = np.where(missing, 3, np.where(~num, 0, np.where(vals > medians[cols], 2, 1)))
        ok = _single_match(rel, t.numeric, cols, ops, vals)
        for i in np.flatnonzero(ok):
            key = (tuple(cols[i]), tuple(ops[i]), tuple(np.nan_to_num(vals[i], nan=-1.0)))
            found.setdefault(key)
            if len(found) == n_wanted:
                break
    keys = list(found)
    if not keys:
        return (np.empty((0, m), np.intp), np.empty((0, m), np.int8),
                np.empty((0, m), np.float64))
    return (np.array([k[0] for k in keys], dtype=np.intp),
            np.array([k[1] for k in keys], dtype=np.int8),
            np.array([k[2] for k in keys], dtype=np.float64))


def singling_out_attack(t: AttackTables, mode: str, n_attacks: int, seed: np.random.SeedSequence,
                  n_cols: int = 3, max_attempts: int | None = None) -> AttackRisk:
    s = seed.spawn(4)
    rng = np.random.default_rng(s[0])
    if mode == "univariate":
        cols, ops, vals = _univariate_predicates(t)
        # Candidates in random order, checked in batches until enough single out.
        order = rng.permutation(cols.shape[0])
        pick: list[np.ndarray] = []
        found, batch = 0, 2 * n_attacks
        for start in range(0, order.size, batch):
            if found >= n_attacks:
                break
            idx = order[start:start + batch]
            idx = idx[_single_match(t.released, t.numeric, cols[idx], ops[idx], vals[idx])]
            pick.append(idx)
            found += idx.size
        sel = np.concatenate(pick)[:n_attacks] if pick else np.empty(0, np.intp)
        cols, ops, vals = cols[sel], ops[sel], vals[sel]
    elif mode == "multivariate":
        cols, ops, vals = _multivariate_predicates(
            t, n_attacks, n_cols, rng, max_attempts or 100 * n_attacks)
    else:
        raise ParameterError(f"Invalid mode {mode!r}: 'univariate' or 'multivariate'.")
    # A predicate singles out more easily in a smaller table: score training and control
    # tables of the same size (the larger one is subsampled; the paper fits a size model).
    n_t, n_c = t.train.shape[0], t.control.shape[0]
    size = min(n_t, n_c)
    train = t.train if n_t == size else t.train[targets(n_t, size, np.random.default_rng(s[1]))]
    control = t.control if n_c == size else \
        t.control[targets(n_c, size, np.random.default_rng(s[2]))]
    note = f"training and control compared on {size} rows each" if n_t != n_c else ""
    ok_t = int(np.sum(_single_match(train, t.numeric, cols, ops, vals)))
    ok_c = int(np.sum(_single_match(control, t.numeric, cols, ops, vals)))
    # Baseline: the same number of predicates on random released rows, random operators.
    q = cols.shape[0]
    rows = np.random.default_rng(s[3]).integers(0, t.released.shape[0], size=q)
    b_vals = t.released[rows[:, None], cols] if q else vals
    b_ops = np.where(np.isnan(b_vals), 3, np.where(t.numeric[cols], ops % 3, 0)) if q else ops
    ok_b = int(np.sum(_single_match(train, t.numeric, cols, b_ops, b_vals))) if q else 0
    if q < n_attacks:
        # As in the paper's implementation, the attacks asked for are the denominator:
        # a release that offers few singling-out predicates is hard to single out from.
        note = "; ".join(x for x in (note, f"only {q} of {n_attacks} predicates single out "
                                            "a released row; the others count as failed") if x)
    return result("singling_out", n_attacks, ok_t, ok_c, ok_b, variant=mode, note=note)


def singling_out_risk(original: pd.DataFrame, released: pd.DataFrame,
                      control: pd.DataFrame, *, mode: str = "univariate",
                      n_attacks: int = 200, n_cols: int = 3,
                      max_attempts: int | None = None,
                      random_state: object = None) -> AttackRisk:
    """Singling-out risk of ``released`` (Giomi et al. 2023, Sec. 4.1).

    Predicates are built from the release and kept when they match exactly one released
    row (``mode="univariate"``: one column; ``"multivariate"``: ``n_cols`` columns of a
    random released row). An attack succeeds on a target table when its predicate
    matches exactly one row there; training and control are compared at the same size.

    Parameters
    ----------
    original, released, control : DataFrame
    mode : {"univariate", "multivariate"}
    n_attacks : int, default 200
        Predicates wanted; those that cannot be built (no more single out a released
        row) count as failed attacks, as in the paper's implementation.
    n_cols : int, default 3
        Columns per multivariate predicate.
    max_attempts : int, optional
        Candidate predicates tried (multivariate), default ``100 * n_attacks``.
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    AttackRisk
    """
    n_attacks = check_attack_count(n_attacks)
    n_cols = check_positive_int(n_cols, "n_cols")
    t = AttackTables.encode(original, released, control)
    return singling_out_attack(t, mode, n_attacks, check_seed_sequence(random_state), n_cols,
                         max_attempts)
