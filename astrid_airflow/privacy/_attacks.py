"""Attack-based privacy risks of a released table (Giomi et al., PETS 2023).

The three attacks of Giomi, Boenisch, Wehmeyer and Tasnádi, "A Unified Framework for
Quantifying Privacy Risk in Synthetic Data", PoPETs 2023(2) — the method behind the
``anonymeter`` package — implemented here on encoded numpy arrays (no code taken from
it). Each attack is run twice with the same procedure: on *training* targets, rows of the
table the release was made from, and on *control* targets, rows of the same population
that did not go into the release. With success rates ``r_train`` and ``r_control``
(Wilson score estimates at 95 %), the risk is

    risk = (r_train - r_control) / (1 - r_control),

the share of the attacker's success that the release taught about *these* rows rather
than about the population (which is utility, not leakage). The interval is the Wilson
error of both rates propagated to the ratio, and risk and interval are clipped to [0, 1],
as in the paper's reference implementation.

Attacks (all vectorised; nearest neighbours searched in chunks of targets):

* singling-out — predicates built from the release that match exactly one released row;
  success when a predicate matches exactly one target-table row. Univariate predicates:
  a value occurring once in a column, ``<=`` the minimum, ``>=`` the maximum, ``isna``
  of a column with one missing value. Multivariate: a random released row and
  ``n_cols`` random columns; a numeric column gives ``>= v`` above the column median
  and ``<= v`` otherwise, other columns ``== v``.
* linkability — the attacker holds two disjoint column sets of the same people; for each
  target the nearest released row on each set; success when both are the same row.
* inference — the attacker knows some columns and guesses a secret column from the
  nearest released row; a numeric guess counts when ``|guess - secret| <= tolerance *
  |guess|`` (tolerance 0.05), other secrets must match exactly.

Distance: Gower-like, as in the paper — per column ``|a - b| / range`` for numeric
columns (range over every table involved) and ``0``/``1`` for categories; a missing
value is at distance 1 from anything (anonymeter gives 1 for two missing values too).
Ties between released rows are broken at random, for each query and each search, so a
tie never links two halves by the coincidence of a shared row order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from scipy.spatial.distance import cdist

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow._validation import (
    check_attack_count,
    check_positive_int,
    check_seed_sequence,
)
from astrid_airflow.engine import Grouping, is_numeric_column

#: Confidence level of every interval (the paper's 95 %).
CONFIDENCE = 0.95
#: Relative tolerance of a numeric inference guess (anonymeter's default).
TOLERANCE = 0.05
#: Elements of one (targets x released rows) distance block; bounds the search memory.
_BLOCK = 1 << 22


@dataclass(frozen=True)
class AttackRisk:
    """Outcome of one attack, on training targets against control targets.

    Attributes
    ----------
    attack : {"singling_out", "linkability", "inference"}
    risk : float
        ``(r_train - r_control) / (1 - r_control)`` of the Wilson success rates, in [0, 1].
    ci : (float, float)
        95 % interval of ``risk`` (Wilson errors propagated, clipped to [0, 1]).
    n_attacks : int
        Attacks made on each side: targets sampled, or singling-out predicates asked
        for (predicates that could not be built count as failed attacks).
    secret : str, optional
        The column guessed (inference).
    variant : str, optional
        ``"univariate"``/``"multivariate"`` (singling-out), ``"cut_largest_group"``/
        ``"random_split"`` (linkability), ``"class"``/``"group_member"``/
        ``"class_from_one_column"`` (inference).
    aux_columns : tuple
        Columns the attacker knows (inference) or its two column sets (linkability).
    n_success, n_control_success, n_baseline_success : int
        Successful attacks on training targets, on control targets, and of a random
        guess (a random released row; for information).
    note : str
        What was sampled or adjusted, when anything was.
    shadow_releases, risk_sd : int and float, optional
        Pooled over that many shadow releases (counts summed; the interval also covers
        the releases' spread, ``risk_sd`` being the standard deviation of their risks);
        ``None`` for an attack on one release.
    """

    attack: str
    risk: float
    ci: tuple[float, float]
    n_attacks: int
    secret: str | None = None
    variant: str | None = None
    aux_columns: tuple = ()
    n_success: int = 0
    n_control_success: int = 0
    n_baseline_success: int = 0
    note: str = ""
    #: Shadow releases the attack was pooled over, and the spread of their risks.
    shadow_releases: int | None = None
    risk_sd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``risk``, ``ci`` as ``[low, high]``, ``n_attacks``, ..."""
        out: dict[str, Any] = {"attack": self.attack, "risk": self.risk,
                               "ci": [self.ci[0], self.ci[1]], "n_attacks": self.n_attacks}
        if self.secret is not None:
            out["secret"] = self.secret
        if self.variant is not None:
            out["variant"] = self.variant
        if self.aux_columns:
            out["aux_columns"] = [list(a) if isinstance(a, tuple) else a
                                  for a in self.aux_columns]
        out.update(n_success=self.n_success, n_control_success=self.n_control_success,
                   n_baseline_success=self.n_baseline_success)
        if self.note:
            out["note"] = self.note
        if self.shadow_releases is not None:
            out.update(shadow_releases=self.shadow_releases, risk_sd=self.risk_sd)
        return out


# ------------------------------------------------------------------------ statistics

def _wilson(n_total: int, n_success: float) -> tuple[float, float]:
    """Wilson score centre and half-width at :data:`CONFIDENCE` (Wilson 1927)."""
    z = NormalDist().inv_cdf(0.5 * (1.0 + CONFIDENCE))
    z2 = z * z
    denom = n_total + z2
    rate = (n_success + 0.5 * z2) / denom
    var = n_success * (n_total - n_success) / n_total
    return rate, (z / denom) * math.sqrt(max(var, 0.0) + 0.25 * z2)


def residual_risk(n_attacks: int, n_success: float, n_control_success: float
                  ) -> tuple[float, tuple[float, float]]:
    """Risk and 95 % interval from success counts (Giomi et al., Sec. 4 and App. A).

    ``risk = (r_t - r_c) / (1 - r_c)`` with ``r_t``, ``r_c`` the Wilson centres of the
    training and control success rates; the half-width propagates both Wilson errors
    (first-order); point and bounds are clipped to [0, 1]. With no attack at all the
    risk is 0 with interval (0, 0): nothing could be attempted.

    >>> residual_risk(200, 200, 0)[0] > 0.98
    True
    """
    if n_attacks == 0:
        return 0.0, (0.0, 0.0)
    r_t, e_t = _wilson(n_attacks, n_success)
    r_c, e_c = _wilson(n_attacks, n_control_success)
    # Wilson centres are < 1 for finite n, so the ratio is always defined.
    value = (r_t - r_c) / (1.0 - r_c)
    err = math.hypot(e_t / (1.0 - r_c), e_c * (r_t - 1.0) / (1.0 - r_c) ** 2)

    def clip(x: float) -> float:
        return min(max(x, 0.0), 1.0)

    return clip(value), (clip(value - err), clip(value + err))


def _result(attack: str, n: int, ok_t: int, ok_c: int, ok_b: int, **kw: Any) -> AttackRisk:
    risk, ci = residual_risk(n, ok_t, ok_c)
    if n and ok_c == n:
        # Nothing is left to learn beyond the population: the interval is uninformative.
        kw["note"] = "; ".join(x for x in (kw.get("note", ""), "the attack succeeded on "
                               "every control target: the residual risk cannot be "
                               "measured") if x)
    return AttackRisk(attack=attack, risk=risk, ci=ci, n_attacks=n, n_success=int(ok_t),
                      n_control_success=int(ok_c), n_baseline_success=int(ok_b), **kw)


# -------------------------------------------------------------------------- encoding

@dataclass
class AttackTables:
    """Training, released and control tables encoded with shared codes and ranges.

    Numeric columns are float64 (NaN missing); the others integer codes shared by the
    three tables (-1 missing).
    """

    columns: list[str]
    numeric: np.ndarray  # bool per column
    ranges: np.ndarray   # per column; 1 for categorical or constant columns (already
    #                      divided out of the encoded numeric columns)
    train: np.ndarray
    released: np.ndarray
    control: np.ndarray
    has_missing: np.ndarray  # per column: a missing value in any of the tables

    @classmethod
    def encode(cls, original: pd.DataFrame, released: pd.DataFrame,
               control: pd.DataFrame) -> AttackTables:
        for name, t in (("original", original), ("released", released),
                        ("control", control)):
            if not isinstance(t, pd.DataFrame):
                raise DataError(f"The {name} table must be a pandas DataFrame, got "
                                f"{type(t).__name__}.")
            if len(t) == 0:
                raise DataError(f"The {name} table is empty (0 rows).")
        columns = [str(c) for c in released.columns]
        for name, t in (("original", original), ("control", control)):
            missing = [c for c in columns if c not in t.columns]
            if missing:
                raise DataError(f"The {name} table lacks the released column(s) "
                                f"{missing[:10]}.")
        numeric = np.array([all(is_numeric_column(t[c]) for t in (original, released,
                                                                  control))
                            for c in columns], dtype=bool)
        tables = [original, released, control]
        encoded = [np.empty((len(t), len(columns)), dtype=np.float64) for t in tables]
        ranges = np.ones(len(columns))
        for j, c in enumerate(columns):
            if numeric[j]:
                cols = [t[c].to_numpy(dtype=np.float64, na_value=np.nan) for t in tables]
                lo = min(np.nanmin(v) if np.isfinite(v).any() else np.inf for v in cols)
                hi = max(np.nanmax(v) if np.isfinite(v).any() else -np.inf for v in cols)
                if np.isfinite(hi - lo) and hi > lo:
                    ranges[j] = hi - lo
            else:
                both = pd.concat([t[c].astype(object) for t in tables], ignore_index=True)
                codes, uniques = pd.factorize(both, use_na_sentinel=True)
                # One code per value across containers: "1" from a CSV equals 1 and 1.0.
                canon, _ = pd.factorize(pd.Index([_canonical(u) for u in uniques],
                                                 dtype=object))
                codes = np.where(codes >= 0, canon[np.maximum(codes, 0)], -1) \
                    if len(uniques) else codes
                cols = np.split(codes.astype(np.float64), np.cumsum([len(t) for t in
                                                                     tables])[:-1])
            for e, v in zip(encoded, cols):
                # Numeric values divided by the range: the L1 term is then |a - b|, and
                # predicates and the relative tolerance are unchanged by the scaling.
                e[:, j] = v / ranges[j] if numeric[j] else v
        has_missing = np.array([any(np.isnan(e[:, j]).any() if numeric[j] else
                                    (e[:, j] < 0).any() for e in encoded)
                                for j in range(len(columns))], dtype=bool)
        return cls(columns, numeric, ranges, *encoded, has_missing)

    def index(self, names: Sequence[str]) -> np.ndarray:
        pos = {c: i for i, c in enumerate(self.columns)}
        unknown = [c for c in names if c not in pos]
        if unknown:
            raise ParameterError(f"Unknown column(s) {list(unknown)}; the released table "
                                 f"has {self.columns[:20]}.")
        return np.array([pos[c] for c in names], dtype=np.intp)


def _canonical(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return value
    if isinstance(value, (int, float, np.number)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _nearest(queries: np.ndarray, candidates: np.ndarray, numeric: np.ndarray,
             missing: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Index of the nearest candidate row of every query row (Gower-like L1 distance).

    Numeric columns arrive divided by their range. Ties go to a uniformly random tied
    row drawn for each query (candidates are also visited in a random order). A shared
    draw would give every query with the same nearest values the same row: on a
    coarsened column one row per bin would then decide every guess, and the training and
    control attacks would each ride on their own lottery.
    """
    order = rng.permutation(candidates.shape[0])
    cand = candidates[order]
    fast_num = numeric & ~missing
    fast_cat = ~numeric & ~missing
    slow = np.flatnonzero(missing)
    out = np.empty(queries.shape[0], dtype=np.intp)
    step = max(1, _BLOCK // max(1, cand.shape[0]))
    for start in range(0, queries.shape[0], step):
        q = queries[start:start + step]
        dist = np.zeros((q.shape[0], cand.shape[0]))
        if fast_num.any():
            dist += cdist(q[:, fast_num], cand[:, fast_num], "cityblock")
        if fast_cat.any():
            dist += cdist(q[:, fast_cat], cand[:, fast_cat], "hamming") * fast_cat.sum()
        for j in slow:  # columns with a missing value somewhere: missing = full mismatch
            a, b = q[:, j, None], cand[None, :, j]
            if numeric[j]:
                d = np.abs(a - b)
                dist += np.where(np.isnan(d), 1.0, d)
            else:
                dist += (a != b) | (a < 0)
        best = np.argmin(dist, axis=1)
        # Each query draws its own row among its tied nearest rows: a tie shared by many
        # queries (a coarsened column) is then not settled by one row for all of them.
        tied = dist == dist[np.arange(q.shape[0]), best][:, None]
        n_tied = tied.sum(axis=1)
        multi = np.flatnonzero(n_tied > 1)
        if multi.size:
            pick = (rng.random(multi.size) * n_tied[multi]).astype(np.intp)
            best[multi] = np.argmax(np.cumsum(tied[multi], axis=1) > pick[:, None], axis=1)
        out[start:start + step] = best
    return order[out]


def _targets(n_rows: int, n_attacks: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n_rows, size=min(n_attacks, n_rows), replace=False))


def _sampled_note(t: AttackTables, n: int) -> str:
    if n < min(t.train.shape[0], t.control.shape[0]):
        return (f"{n} targets sampled from {t.train.shape[0]} training and "
                f"{t.control.shape[0]} control rows")
    return ""


# ----------------------------------------------------------------------- linkability

def linkability_split(columns: Sequence[str], grouping: Grouping | None = None, *,
                      how: str = "cut_largest_group", random_state: object = None
                      ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The attacker's two auxiliary column sets.

    ``"cut_largest_group"``: the largest group of ``grouping`` is cut in two halves (in
    its column order), one to each set; the other groups are kept whole and go, largest
    first, to the set with fewer columns. Cutting the largest group is the attacker's
    best split against GoldenEye: its columns stay aligned in the release, so both
    halves point to the same released row. ``"random_split"``: a random half of the
    columns against the rest.
    """
    columns = [str(c) for c in columns]
    if len(columns) < 2:
        raise ParameterError("Linkability needs at least two attribute columns.")
    if how == "random_split":
        rng = np.random.default_rng(check_seed_sequence(random_state))
        perm = [columns[i] for i in rng.permutation(len(columns))]
        half = (len(perm) + 1) // 2
        return tuple(sorted(perm[:half], key=columns.index)), \
            tuple(sorted(perm[half:], key=columns.index))
    if how != "cut_largest_group":
        raise ParameterError(f"Invalid split {how!r}: 'cut_largest_group' or 'random_split'.")
    if grouping is None:
        grouping = Grouping.singletons(columns)
    groups = [[c for c in g if c in columns] for g in grouping.groups]
    groups = [g for g in groups if g]
    largest = max(range(len(groups)), key=lambda i: (len(groups[i]), -i))
    lead = groups[largest]
    cut = (len(lead) + 1) // 2
    a, b = list(lead[:cut]), list(lead[cut:])
    rest = sorted((g for i, g in enumerate(groups) if i != largest), key=len, reverse=True)
    for g in rest:
        (a if len(a) < len(b) else b).extend(g)
    return tuple(sorted(a, key=columns.index)), tuple(sorted(b, key=columns.index))


def linkability_attack(t: AttackTables, aux: tuple[Sequence[str], Sequence[str]], n_attacks: int,
                 seed: np.random.SeedSequence, variant: str | None) -> AttackRisk:
    ia, ib = t.index(aux[0]), t.index(aux[1])
    if not len(ia) or not len(ib) or set(ia) & set(ib):
        raise ParameterError("Linkability needs two non-empty, disjoint column sets.")
    s = seed.spawn(5)
    n_rel = t.released.shape[0]
    n = min(n_attacks, t.train.shape[0], t.control.shape[0])
    counts = []
    for table, (s_tgt, s_tie) in ((t.train, s[0:2]), (t.control, s[2:4])):
        rows = table[_targets(table.shape[0], n, np.random.default_rng(s_tgt))]
        tie = np.random.default_rng(s_tie)
        near_a = _nearest(rows[:, ia], t.released[:, ia], t.numeric[ia], t.has_missing[ia],
                          tie)
        near_b = _nearest(rows[:, ib], t.released[:, ib], t.numeric[ib], t.has_missing[ib],
                          tie)
        counts.append(int(np.sum(near_a == near_b)))
    base = np.random.default_rng(s[4]).integers(0, n_rel, size=(2, n))
    return _result("linkability", n, counts[0], counts[1], int(np.sum(base[0] == base[1])),
                   variant=variant, aux_columns=(tuple(aux[0]), tuple(aux[1])),
                   note=_sampled_note(t, n))


def linkability_risk(original: pd.DataFrame, released: pd.DataFrame,
                     control: pd.DataFrame, *, aux_columns: tuple[Sequence[str],
                                                                 Sequence[str]],
                     n_attacks: int = 200, random_state: object = None) -> AttackRisk:
    """Linkability risk of ``released`` (Giomi et al. 2023, Sec. 4.2).

    For each of ``n_attacks`` targets sampled from ``original`` (the rows the release was
    made from) the attacker finds the nearest released row on ``aux_columns[0]`` and on
    ``aux_columns[1]``; the attack succeeds when it is the same row (one neighbour). The
    same attack on as many rows of ``control`` (not released) gives the control rate.

    Parameters
    ----------
    original, released, control : DataFrame
        Training table, release, and rows of the same population not released.
    aux_columns : (columns, columns)
        The attacker's two disjoint column sets (see :func:`linkability_split`).
    n_attacks : int, default 200
        Targets on each side (fewer if a table is smaller).
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    AttackRisk
    """
    n_attacks = check_attack_count(n_attacks)
    t = AttackTables.encode(original, released, control)
    return linkability_attack(t, aux_columns, n_attacks, check_seed_sequence(random_state), None)


# ------------------------------------------------------------------------- inference

def inference_attack(t: AttackTables, secret: str, aux: Sequence[str], n_attacks: int,
               seed: np.random.SeedSequence, variant: str | None,
               tolerance: float = TOLERANCE) -> AttackRisk:
    (js,) = t.index([secret])
    ia = t.index(aux)
    if not len(ia) or js in set(ia):
        raise ParameterError(f"Inference of {secret!r} needs known columns other than it.")
    s = seed.spawn(5)
    n = min(n_attacks, t.train.shape[0], t.control.shape[0])

    def hits(guess: np.ndarray, truth: np.ndarray) -> np.ndarray:
        both_missing = np.isnan(guess) & np.isnan(truth) if t.numeric[js] else \
            (guess < 0) & (truth < 0)
        if t.numeric[js]:
            with np.errstate(invalid="ignore"):
                ok = np.abs(guess - truth) <= tolerance * np.abs(guess)
        else:
            ok = (guess == truth) & (guess >= 0)
        return ok | both_missing

    counts = []
    for table, (s_tgt, s_tie) in ((t.train, s[0:2]), (t.control, s[2:4])):
        rows = table[_targets(table.shape[0], n, np.random.default_rng(s_tgt))]
        near = _nearest(rows[:, ia], t.released[:, ia], t.numeric[ia], t.has_missing[ia],
                        np.random.default_rng(s_tie))
        counts.append(int(np.sum(hits(t.released[near, js], rows[:, js]))))
    base_rows = t.train[_targets(t.train.shape[0], n, np.random.default_rng(s[0]))]
    guess = t.released[np.random.default_rng(s[4]).integers(0, t.released.shape[0], n), js]
    base = int(np.sum(hits(guess, base_rows[:, js])))
    return _result("inference", n, counts[0], counts[1], base, secret=secret,
                   variant=variant, aux_columns=tuple(aux), note=_sampled_note(t, n))


def inference_risk(original: pd.DataFrame, released: pd.DataFrame, control: pd.DataFrame,
                   *, secret: str, aux_columns: Sequence[str], n_attacks: int = 200,
                   tolerance: float = TOLERANCE, random_state: object = None) -> AttackRisk:
    """Inference risk of ``secret`` given ``aux_columns`` (Giomi et al. 2023, Sec. 4.3).

    For each target the attacker takes the released row nearest on ``aux_columns`` and
    guesses its ``secret``. A numeric guess is right when ``|guess - secret| <=
    tolerance * |guess|``; any other secret must be equal (two missing values match).

    Parameters
    ----------
    original, released, control : DataFrame
        Training table, release, and rows of the same population not released.
    secret : str
        The column to guess.
    aux_columns : sequence of str
        The columns the attacker knows.
    n_attacks : int, default 200
    tolerance : float, default 0.05
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    AttackRisk
    """
    n_attacks = check_attack_count(n_attacks)
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 1):
        raise ParameterError(f"Invalid tolerance: {tolerance!r}. Must be in [0, 1).")
    t = AttackTables.encode(original, released, control)
    return inference_attack(t, secret, list(aux_columns), n_attacks,
                      check_seed_sequence(random_state), None, float(tolerance))


# ---------------------------------------------------------------------- singling out

# A predicate is a conjunction of (column, op, value); ops: 0 "==", 1 "<=", 2 ">=",
# 3 "isna". Arrays of predicates: cols (q, m), ops (q, m), vals (q, m).
_OPS = ("==", "<=", ">=", "isna")


def _match_counts(x: np.ndarray, numeric: np.ndarray, cols: np.ndarray, ops: np.ndarray,
                  vals: np.ndarray) -> np.ndarray:
    """Rows of ``x`` matched by each predicate (vectorised over predicates)."""
    q, m = cols.shape
    out = np.empty(q, dtype=np.int64)
    step = max(1, _BLOCK // max(1, x.shape[0]))
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
    train = t.train if n_t == size else t.train[_targets(n_t, size, np.random.default_rng(s[1]))]
    control = t.control if n_c == size else \
        t.control[_targets(n_c, size, np.random.default_rng(s[2]))]
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
    return _result("singling_out", n_attacks, ok_t, ok_c, ok_b, variant=mode, note=note)


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


# ------------------------------------------------------ class from one column, exact

def _column_success(x: pd.Series, y: np.ndarray, n_classes: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Expected success of guessing each row's class from ``x`` alone, with the row in
    the release and with the row left out (the inference attack, exact over ties).

    The attacker takes the released rows nearest on ``x`` (all of them tie: a guess is
    a uniformly random one of them) and guesses their class; the expected success is the
    share of the target's class among them. In the release the nearest rows are those
    with the target's value, itself included; left out, they are the others with that
    value, else (a unique value) the nearest other values (numeric) or every other row
    (a category: all at distance 1). A missing value is at distance 1 from everything.
    """
    n = len(x)
    numeric = is_numeric_column(x)
    if numeric:
        v = x.to_numpy(dtype=np.float64, na_value=np.nan)
        present = np.isfinite(v)
    else:
        present = x.notna().to_numpy()
        v = pd.Series(pd.factorize(x.astype(object).map(_canonical), use_na_sentinel=True)[0]
                      ).to_numpy(dtype=np.float64)
    class_all = np.bincount(y, minlength=n_classes).astype(np.float64)
    s_in = class_all[y] / n  # missing: the whole release ties
    s_out = (class_all[y] - 1) / max(n - 1, 1)
    if present.any():
        vals, inv = np.unique(v[present], return_inverse=True)
        yp = y[present]
        m = np.zeros((vals.size, n_classes))
        np.add.at(m, (inv, yp), 1.0)
        count = m.sum(axis=1)
        own = m[inv, yp]
        s_in[present] = own / count[inv]
        shared = count[inv] > 1
        out = np.empty(inv.size)
        out[shared] = (own[shared] - 1) / (count[inv][shared] - 1)
        lone = ~shared
        if lone.any():
            k = inv[lone]
            cls = yp[lone]
            if numeric and vals.size > 1:
                # nearest other value(s): the closer neighbour, both when equally close
                left = np.where(k > 0, vals[k] - vals[np.maximum(k - 1, 0)], np.inf)
                right = np.where(k < vals.size - 1,
                                 vals[np.minimum(k + 1, vals.size - 1)] - vals[k], np.inf)
                use_l, use_r = left <= right, right <= left
                kl, kr = np.maximum(k - 1, 0), np.minimum(k + 1, vals.size - 1)
                hit = use_l * m[kl, cls] + use_r * m[kr, cls]
                tot = use_l * count[kl] + use_r * count[kr]
                out[lone] = hit / tot
            else:  # every other row is at distance 1
                out[lone] = (class_all[cls] - 1) / max(n - 1, 1)
        s_out[present] = out
    return s_in, s_out


def class_from_column_risks(released: pd.DataFrame, *, target: str,
                            columns: Sequence[str] | None = None) -> list[AttackRisk]:
    """Risk of inferring the class from each single column, exact, with left-out control.

    The inference attack of Giomi et al. (2023) with one known column: every released
    row is a target twice, once in the release (a member) and once left out of it (a
    non-member with the same values: the control, free of sampling noise), and the
    success of each is the *expected* success over the tied nearest rows (no random
    draw). With ``s_in`` and ``s_out`` the mean successes,
    ``risk = (s_in - s_out) / (1 - s_out)``: what the release teaches about its own rows
    beyond what it teaches about people like them. A GoldenEye release keeps every
    (value, class) pair of a column, so this is the same on the release and on the
    (remedied) table it was made from. The 95 % interval is the normal interval of the
    mean paired difference, propagated to the ratio (with the error of ``s_out``), and
    clipped to [0, 1].

    For a column whose every value is shared by ``m`` rows of mixed classes the figure
    is exactly ``1 / m`` (whatever the mix), near 1 for a column of unique values: it
    bounds how small a bin or category may be.

    Parameters
    ----------
    released : DataFrame
        The released table (or the remedied table it was made from), with ``target``.
    target : str
        The class column.
    columns : sequence of str, optional
        The columns to attack (default: every column but ``target``).

    Returns
    -------
    list of AttackRisk
        One per column: ``attack="inference"``, ``variant="class_from_one_column_exact"``,
        ``secret=target``, ``aux_columns=(column,)``, ``n_attacks`` = rows;
        ``n_success`` and ``n_control_success`` are the expected successes, rounded;
        ``n_baseline_success`` that of guessing a random released row's class.
    """
    if not isinstance(released, pd.DataFrame):
        raise DataError(f"The released table must be a pandas DataFrame, got "
                        f"{type(released).__name__}.")
    if target not in released.columns:
        raise DataError(f"Target column {target!r} is not in the released table.")
    if columns is None:
        columns = [c for c in released.columns if c != target]
    unknown = [c for c in columns if c not in released.columns or c == target]
    if unknown:
        raise ParameterError(f"Unknown column(s) {unknown} (the class column cannot be "
                             "its own aux).")
    n = len(released)
    if n < 2:
        return [AttackRisk("inference", 0.0, (0.0, 0.0), n, secret=target,
                           variant="class_from_one_column_exact", aux_columns=(str(c),),
                           note="fewer than two rows: nothing to compare") for c in columns]
    y, uniques = pd.factorize(released[target].astype(object), use_na_sentinel=False)
    z = NormalDist().inv_cdf(0.5 * (1.0 + CONFIDENCE))
    out = []
    for c in columns:
        s_in, s_out = _column_success(released[c], y, len(uniques))
        r_out = float(s_out.mean())
        d = s_in - s_out
        d_mean = float(d.mean())
        note = "exact: each row attacked in the release and left out of it"
        if r_out >= 1.0:
            risk, err = 0.0, 0.0
            note += "; the class is always guessed without the row: nothing to learn"
        else:
            risk = d_mean / (1.0 - r_out)
            err = z * math.sqrt(float(d.var()) / n / (1.0 - r_out) ** 2
                                + (d_mean / (1.0 - r_out) ** 2) ** 2
                                * float(s_out.var()) / n)

        def clip(x: float) -> float:
            return min(max(x, 0.0), 1.0)

        out.append(AttackRisk("inference", clip(risk), (clip(risk - err), clip(risk + err)),
                              n, secret=str(target), variant="class_from_one_column_exact",
                              aux_columns=(str(c),), n_success=round(float(s_in.sum())),
                              n_control_success=round(float(s_out.sum())),
                              n_baseline_success=round(float(
                                  (np.bincount(y).astype(float) ** 2).sum() / n)),
                              note=note))
    return out
