"""Fitting a release recipe: the remedies each group needs, chosen on a reference table.

The recipe itself (:class:`~astrid_airflow.release.ReleaseRecipe`, what it does to a
batch) lives in the release layer; fitting it measures disclosure risks (privacy
layer), so it sits here, in the pipeline that orchestrates both.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import RecipeError
from astrid_airflow.release import (
    BIN_LADDER,
    ReleaseRecipe,
    apply_column_step,
    apply_recipe,
    as_float,
    check_attacker_model,
    dtype_kind,
    published_type,
)

from ._fit_bins import ColumnBins, single_bin


def group_risk(frame: pd.DataFrame, labels: Any, k: int) -> tuple[float, float, int]:
    """``(share_below_k, class_disclosure_share, k_min)`` of ``frame``'s tuples + class.

    The per-group measures of :mod:`._disclosure` on one group's (remedied) columns:
    equivalence classes are rows sharing the tuple and the class (missing = a value).
    """
    n = len(frame)
    if n == 0:
        return 0.0, 0.0, 0
    # hashing, no sort and no boxing of values (a million rows); missing
    # values are one value (use_na_sentinel=False)
    codes = [pd.factorize(frame[c], use_na_sentinel=False)[0] for c in frame.columns]
    tup = codes[0] if codes else np.zeros(n, dtype=np.int64)
    for c in codes[1:]:  # one int64 key per column pair (a MultiIndex is slow)
        tup = pd.factorize(tup.astype(np.int64) * (int(c.max()) + 1) + c)[0]
    y = pd.factorize(pd.Series(labels), sort=False)[0]
    n_y = int(y.max()) + 1
    cell, cells = pd.factorize(tup.astype(np.int64) * n_y + y)
    size = np.bincount(cell)[cell]
    # classes per tuple value: one (tuple, class) cell each
    n_classes = np.bincount(cells // n_y, minlength=int(tup.max()) + 1)
    one_class = n_classes[tup] == 1
    return float(np.mean(size < k)), float(np.mean(one_class)), int(size.min())


def column_class_risk(series: pd.Series, labels: Any) -> float:
    """Upper 95 % bound of the exact risk of inferring the class from ``series`` alone
    (:func:`~astrid_airflow.privacy.class_from_column_risks`, the gate's measure)."""
    from astrid_airflow.privacy import class_from_column_risks

    frame = pd.DataFrame({"x": series.to_numpy(), "__y": np.asarray(labels)})
    return class_from_column_risks(frame, target="__y", columns=["x"])[0].ci[1]


def _suppress_step(series: pd.Series, labels: Any, k: int, column: str, ptype: str,
                   max_below: float, max_disclosure: float, max_column_risk: float = math.inf
                   ) -> dict[str, Any] | None:
    """The rare categories of ``series`` suppressed (published missing) until its
    column alone is safe: categories below ``k`` rows first, then, one at a time, the
    kept category that fails worst. Counted on the (category, class) table, not on
    rebuilt frames: every figure is a function of those counts."""
    counts = series.value_counts(dropna=True)
    keep = [v for v, c in counts.items() if c >= k]
    # codes in sorted order: ties go to the first category as a crosstab sorts them
    codes, uniques = pd.factorize(series, sort=True)
    y = pd.factorize(pd.Series(np.asarray(labels)), use_na_sentinel=False)[0]
    n_y = int(y.max()) + 1 if y.size else 1
    present = codes >= 0
    cells = np.bincount(codes[present] * n_y + y[present],
                        minlength=len(uniques) * n_y).reshape(len(uniques), n_y)
    missing = np.bincount(y[~present], minlength=n_y)
    code_of = {v: i for i, v in enumerate(uniques)}
    kept = np.zeros(len(uniques), dtype=bool)
    kept[[code_of[v] for v in keep]] = True
    n = len(series)
    while True:
        shown = cells[kept]
        hidden = missing + cells[~kept].sum(axis=0)
        below, disclosure, suppressed = _column_risks(shown, hidden, k, n)
        if not keep:
            break
        if below <= max_below and disclosure <= max_disclosure and \
                suppressed <= min(max_below, max_disclosure):
            if max_column_risk == math.inf or column_class_risk(
                    series.where(series.isin(keep) | series.isna()), labels) <= max_column_risk:
                break
            # the class from this column alone: suppress the smallest kept category
            worst = min(keep, key=lambda v: (counts[v], keep.index(v)))
        else:
            # drop the kept category that fails worst: one naming a single class first
            # (smallest), else the one with the smallest (category, class) cell
            worst = uniques[np.flatnonzero(kept)[_worst_category(shown, k)]]
        keep = [v for v in keep if v != worst]
        kept[code_of[worst]] = False
    if len(keep) == len(counts):
        return None
    return {"method": "suppress", "column": column,
            "keep": [v.item() if hasattr(v, "item") else v for v in keep],
            "published_type": ptype}


def _column_risks(shown: np.ndarray, hidden: np.ndarray, k: int, n: int
                  ) -> tuple[float, float, float]:
    """``group_risk``'s share below k and class disclosure share, and
    ``suppressed_share``, of one column from its (kept category, class) counts
    ``shown`` and the missing value's class counts ``hidden`` (missing is one value)."""
    if n == 0:
        return 0.0, 0.0, 0.0
    cells = np.vstack([shown, hidden[None, :]])
    below = int(cells[(cells > 0) & (cells < k)].sum())
    one_class = (cells > 0).sum(axis=1) == 1
    disclosure = int(cells[one_class].sum())
    published = (shown >= k) & ((shown >= k).sum(axis=1) >= 2)[:, None]
    suppressed = int(shown.sum() - shown[published].sum())
    # as suppressed_share rounds it: one minus the share kept
    return below / n, disclosure / n, 1.0 - (n - suppressed) / n


def _worst_category(shown: np.ndarray, k: int) -> int:
    """Row of ``shown`` (kept category x class counts) to suppress next: the smallest
    category with one class or fewer than two classes of ``k`` rows, else the one with
    the smallest (category, class) cell; the first such row on ties."""
    single = ((shown > 0).sum(axis=1) == 1) | ((shown >= k).sum(axis=1) < 2)
    if single.any():
        sizes = np.where(single, shown.sum(axis=1), np.iinfo(np.int64).max)
        return int(np.argmin(sizes))
    return int(np.argmin(np.where(shown > 0, shown, np.iinfo(np.int64).max).min(axis=1)))


@dataclass(frozen=True)
class _GroupFit:
    steps: tuple
    passed: bool
    share_below_k: float
    class_disclosure_share: float
    detail: str
    class_from_one_column_risk: float | None = None


class _PublishedColumns:
    """A group's columns as each one-column step publishes them, each step applied once
    however many rungs of the ladder judge it (its categories' suppression is judged
    with every bin count of its numeric columns)."""

    def __init__(self, table: pd.DataFrame) -> None:
        self.table = table
        self.done: dict[int, tuple[dict, pd.Series]] = {}  # id(step): (step, column)

    def column(self, step: dict) -> pd.Series:
        hit = self.done.get(id(step))
        if hit is None:  # the step is kept alive with its column, so its id stays its own
            hit = self.done[id(step)] = (step, apply_column_step(self.table[step["column"]],
                                                                 step))
        return hit[1]

    def frame(self, cols: Sequence[str], steps: list) -> pd.DataFrame | None:
        """``apply_recipe`` of ``steps`` on ``cols`` (the last step of a column wins, as
        there); None when a step acts on several columns."""
        if any("column" not in s or s["method"] not in ("bins", "round", "suppress")
               for s in steps):
            return None
        last = {s["column"]: s for s in steps}
        return pd.DataFrame({c: (self.column(last[c]) if c in last else self.table[c]).array
                             for c in cols}, index=self.table.index)


def _fit_group(table: pd.DataFrame, cols: Sequence[str], labels: Any, k: int,
               max_below: float, max_disclosure: float, method: str,
               max_column_risk: float = math.inf, max_bins: int | None = None,
               value_k: int | None = None) -> _GroupFit:
    """The remedies of one group: ``k`` rows of each class per published tuple (the
    fit's), every published value one that no row or ``value_k`` rows have."""
    numeric = [c for c in cols if published_type(table[c]) in ("integer", "float")]
    other = [c for c in cols if c not in numeric]
    column_risk: list[float | None] = [None]  # of the last judged remedy
    published = _PublishedColumns(table)

    def judge(steps: list) -> tuple[bool, float, float]:
        frame = published.frame(cols, steps)
        if frame is None:  # a step on several columns (mdav, partition)
            frame = apply_recipe(table[list(cols)].assign(**{"__y": np.asarray(labels)}),
                                 ReleaseRecipe(k=k, steps=tuple(steps), target="__y"),
                                 target="__y")[list(cols)]
        below, disc, _ = group_risk(frame, labels, k)
        # local suppression removes every exposed row, the closure included (a tuple
        # left with one class of k rows): that share is what the budget bounds
        from astrid_airflow.release import suppressed_share

        ok = below <= max_below and disc <= max_disclosure and \
            suppressed_share(frame, labels, k) <= min(max_below, max_disclosure)
        column_risk[0] = None
        if ok and max_column_risk != math.inf:
            # the class from any one column of the group, as the gate measures it
            column_risk[0] = max(column_class_risk(frame[c], labels) for c in cols)
            ok = column_risk[0] <= max_column_risk
        return ok, below, disc

    ok, below, disc = judge([])
    if ok and (max_bins is None or all(table[c].nunique() <= max_bins for c in numeric)):
        return _GroupFit((), True, below, disc, "unchanged", column_risk[0])
    if method == "mdav" and len(cols) > 1:
        step = {"method": "mdav", "columns": list(cols), "k": k,
                "published_types": [published_type(table[c]) for c in cols]}
        ok, below, disc = judge([step])
        return _GroupFit((step,), ok, below, disc, f"mdav k={k}", column_risk[0])
    cat_steps = []
    for c in other:
        s = _suppress_step(table[c], labels, k, c, published_type(table[c]),
                           max_below, max_disclosure, max_column_risk)
        if s is not None:
            cat_steps.append(s)
    last = (False, below, disc, list(cat_steps))
    ladder = [b for b in BIN_LADDER if max_bins is None or b <= max_bins]
    columns = {c: (as_float(table[c]), published_type(table[c])) for c in numeric}
    bins = {c: ColumnBins(vals, labels, k, max(ladder, default=2), value_k)
            for c, (vals, _) in columns.items()}
    for n_bins in ladder:
        steps = list(cat_steps)
        for c, (vals, ptype) in columns.items():
            s = bins[c].step(n_bins, c, ptype)
            steps.append(s if s is not None else single_bin(vals, c, ptype, k, value_k))
        ok, below, disc = judge(steps)
        last = (ok, below, disc, steps)
        if ok:
            return _GroupFit(tuple(steps), True, below, disc, f"at most {n_bins} class-aware bins",
                            column_risk[0])
    if method == "partition" and len(cols) > 1:
        # the group generalised together before it is split (._fit_partition)
        from ._fit_partition import partition_ladder

        for step in partition_ladder(table[list(cols)], labels, k, value_k):
            ok, below, disc = judge([step])
            if ok:
                return _GroupFit((step,), True, below, disc,
                                 f"partition: {len(step['cells'])} cells, >= 2 classes "
                                 f"and >= {step['min_class_rows']} rows of each",
                                 column_risk[0])
    if numeric and len(cols) == 1:
        steps = [single_bin(as_float(table[c]), c, published_type(table[c]), k, value_k)
                 for c in numeric]
        ok, below, disc = judge(cat_steps + steps)
        return _GroupFit(tuple(cat_steps + steps), ok, below, disc, "one bin (suppressed)",
                        column_risk[0])
    ok, below, disc, steps = last
    return _GroupFit(tuple(steps), ok, below, disc, "at most 2 class-aware bins (not enough)",
                     column_risk[0])


#: The remedy methods of :func:`fit_recipe`.
FIT_METHODS = ("bins", "mdav", "partition", "synthesise")
#: A placeholder step: the group's model is fitted once every group is known.
_SYNTHESISE = "synthesise"


def _placeholder(step: Any) -> bool:
    return isinstance(step, tuple) and step[0] == _SYNTHESISE


def _synthesised(table: pd.DataFrame, labels: Any, steps: list, k: int,
                 random_state: Any, budget: Any, report: list[dict]) -> list:
    """``steps`` with each placeholder replaced by its group's fitted model, the
    budget split evenly over those groups (the report names each group's model)."""
    from astrid_airflow._validation import check_seed_sequence
    from astrid_airflow.release import Budget, check_budget, fit_synthesis

    todo = [s[1] for s in steps if _placeholder(s)]
    if not todo:
        return steps
    rho = None
    if budget is not None:
        if not isinstance(budget, (tuple, list)) or len(budget) != 2:
            raise RecipeError(f"Invalid synthesis_budget: {budget!r}. Must be (epsilon, "
                              "delta).")
        accountant = Budget(*check_budget(*budget, len(table)), len(todo))
        rho = accountant.rho_per_group
    root = check_seed_sequence(random_state)
    out, done = [], {}
    for s in steps:
        if not _placeholder(s):
            out.append(s)
            continue
        cols = list(s[1])
        # one stream per group, by its columns: the same group gets the same draws in
        # every candidate of the choice
        seq = np.random.SeedSequence(root.entropy, spawn_key=(
            *root.spawn_key, zlib.crc32("\x1f".join(cols).encode())))
        step = fit_synthesis(table[cols], labels, cols,
                             [published_type(table[c]) for c in cols], min_count=k,
                             random_state=seq, rho=rho)
        if budget is not None:
            step["dp"]["accounting"] = accountant.accounting()
        done[tuple(cols)] = step
        out.append(step)
    for r in report:
        step = next((st for cols, st in done.items() if set(cols) <= set(r["columns"])),
                    None)
        if step is not None:
            r["remedy"] = f"synthesised ({step['model']}" + (
                f", epsilon {budget[0]:g} over {len(todo)} group(s))" if budget else ")")
    return out


#: The fit asks this many times k rows of every published (tuple, class) cell of the
#: reference, so that a batch of the same size rarely falls below k (docs/privacy.md).
BATCH_FACTOR = 3

#: A non-numeric column with at least this share of distinct values is an identifier.
IDENTIFIER_DISTINCT_SHARE = 0.95


def identifier_columns(table: pd.DataFrame, columns: Sequence[str]) -> list[str]:
    """The columns that identify rows: text, categories or timestamps with at least
    ``IDENTIFIER_DISTINCT_SHARE`` distinct values per row (e-mail, name, timestamp),
    and integers unique per row (an ID). Floats are measurements: binned, not dropped.

    >>> t = pd.DataFrame({"id": range(40), "x": [0.5 * i for i in range(40)],
    ...                   "mail": [f"p{i}@x.org" for i in range(40)], "c": ["a"] * 40})
    >>> identifier_columns(t, ["id", "x", "mail", "c"])
    ['id', 'mail']
    """
    out = []
    n = len(table)
    for c in columns:
        s = table[c]
        kind = dtype_kind(s.dtype, s)
        present = int(s.notna().sum())
        if n < 20 or present == 0 or kind in ("float", "boolean"):
            continue
        distinct = int(s.nunique(dropna=True))
        # a tolerance: a few duplicated IDs (a data-entry slip) must not hide an ID
        if (kind == "integer" and distinct >= IDENTIFIER_DISTINCT_SHARE * present
                and present >= IDENTIFIER_DISTINCT_SHARE * n) or \
                (kind != "integer" and distinct >= IDENTIFIER_DISTINCT_SHARE * n):
            out.append(c)
    return out


def fit_recipe(table: pd.DataFrame, *, target: str, grouping: Any, k: int = 5,
               max_share_below_k: float = 0.05, max_class_disclosure_share: float = 0.05,
               margin: float = 0.5, method: str = "bins",
               max_class_from_one_column_risk: float | None = None,
               max_bins: int | None = None, batch_factor: int = BATCH_FACTOR,
               attacker_model: Any = None, random_state: Any = None,
               synthesis_budget: Any = None,
               _fits: dict | None = None) -> tuple[ReleaseRecipe, list[dict]]:
    # _fits: the release choice's memo of group fits on this same table (a group's
    # remedy depends on its own columns only; candidates share most of their groups)
    """Fit the least generalisation that makes every group's projection safe.

    For each group of ``grouping``: the most detailed remedy in coarsening order (none; rare
    categories suppressed; numeric columns in at most 64, 32, 20, 12, ... 2 class-aware
    bins) whose ``share_below_k``, ``class_disclosure_share`` and, if asked, exact
    class-from-one-column risk on the reference ``table`` stay within ``margin`` times
    their thresholds, the slack a new batch needs. ``method="mdav"`` microaggregates
    multi-column groups within class instead; ``method="partition"`` gives a multi-column
    group the bins cannot make safe a Mondrian partition (:mod:`._fit_partition`).
    ``max_bins`` starts the order lower (the choice's coarser retry). Every published
    cell holds ``batch_factor`` times ``k`` rows of each of its classes, so a new batch's
    local suppression stays within the budget (docs/privacy.md). Under a declared
    ``attacker_model`` only a group's quasi-identifiers are remedied and judged (its
    other columns are published as they are, and local suppression keeps the declared
    sensitive columns diverse); the recipe records the model.

    Returns
    -------
    (ReleaseRecipe, list of dict)
        The recipe and, per group, ``{"columns", "passed", "share_below_k",
        "class_disclosure_share", "class_from_one_column_risk", "remedy"}``; a group that
        did not pass needs a split.

    References
    ----------
    Hundepool et al., *Statistical Disclosure Control*, Wiley 2012.
    """
    from astrid_airflow.release import resolve_grouping

    grouping, target, _ = resolve_grouping(grouping, target)
    if method not in FIT_METHODS:
        raise RecipeError(f"Invalid remedy method {method!r}; known: {list(FIT_METHODS)}.")
    if target not in table.columns:
        raise RecipeError(f"The table has no class column {target!r}.")
    labels = table[target].to_numpy()
    steps: list[dict] = []
    report: list[dict] = []
    # a threshold of 1 is "report only" (GatePolicy.raw_release_demo): nothing to remedy
    below = math.inf if max_share_below_k >= 1 else max_share_below_k * margin
    disclosure = math.inf if max_class_disclosure_share >= 1 else \
        max_class_disclosure_share * margin
    column_risk = max_class_from_one_column_risk
    if column_risk is not None and not (isinstance(column_risk, (int, float))
                                        and not isinstance(column_risk, bool)
                                        and 0 <= column_risk <= 1):
        raise RecipeError(f"Invalid max_class_from_one_column_risk: {column_risk!r}. Must "
                          "be a number in [0, 1] or None.")
    column_risk = math.inf if column_risk is None or column_risk >= 1 else \
        column_risk * margin
    if max_bins is not None and not (isinstance(max_bins, int) and not isinstance(
            max_bins, bool) and max_bins >= min(BIN_LADDER)):
        raise RecipeError(f"Invalid max_bins: {max_bins!r}. Must be an integer >= "
                          f"{min(BIN_LADDER)} or None.")
    if isinstance(batch_factor, bool) or not isinstance(batch_factor, int) or \
            batch_factor < 1:
        raise RecipeError(f"Invalid batch_factor: {batch_factor!r}. Must be an integer "
                          ">= 1.")
    ids = identifier_columns(table, list(grouping.columns))
    # Fitted for BATCH_FACTOR * k rows per published cell on the reference: a new
    # batch's counts vary around the reference's, and its local suppression (at k)
    # must stay within the budget (benchmarks/bench_honest_release.py)
    k_fit = batch_factor * k
    model = check_attacker_model(attacker_model)
    for cols in grouping.groups:
        rest = [c for c in cols if c not in ids and model.is_key(c)]
        # an identifier is published fully suppressed (all missing), never binned
        steps.extend({"method": "suppress", "column": c, "keep": [],
                      "published_type": published_type(table[c])} for c in cols if c in ids)
        # one column's fit is the same by every method (mdav and partition remedy
        # multi-column groups only): MDAV and partitioned candidates share it
        # a synthesised group is one the bins' fit fails: the same fit first
        fitted = "bins" if method == "synthesise" or len(rest) < 2 else method
        key = (tuple(rest), k_fit, k, below, disclosure, fitted, column_risk, max_bins)
        fit = _fits.get(key) if _fits is not None else None
        if fit is None:
            fit = _fit_group(table, rest, labels, k_fit, below, disclosure, fitted,
                             column_risk, max_bins, value_k=k) if rest else \
                _GroupFit((), True, 0.0, 0.0, "")
            if _fits is not None:
                _fits[key] = fit
        # synthesised: a group the bins cannot make safe, or would coarsen (a numeric
        # column, or several), every column but its identifiers (a declared model's
        # other columns too: their interaction with the drawn ones is the group's)
        if method == "synthesise" and rest and (not fit.passed or (
                fit.detail != "unchanged" and (len(rest) > 1 or published_type(
                    table[rest[0]]) in ("integer", "float")))):
            drawn = tuple(c for c in cols if c not in ids)
            fit = _GroupFit(((_SYNTHESISE, drawn),), True, 0.0, 0.0, "synthesised")
        if any(c in ids for c in cols):
            fit = dataclasses.replace(fit, detail="; ".join(filter(None, [
                f"identifier(s) {[c for c in cols if c in ids]} fully suppressed",
                fit.detail])))
        steps.extend(fit.steps)
        report.append({"columns": list(cols), "passed": fit.passed,
                       "share_below_k": fit.share_below_k,
                       "class_disclosure_share": fit.class_disclosure_share,
                       "class_from_one_column_risk": fit.class_from_one_column_risk,
                       "remedy": fit.detail})
    steps = _synthesised(table, labels, steps, k, random_state, synthesis_budget, report)
    notes = ["bins: values published as the bin's representative (lower median of the "
             "reference values in the bin, so integers stay integers); values outside the "
             "reference range go to the first/last bin (top/bottom coding)",
             "suppress: categories not kept are published as missing"]
    if ids:
        notes.append(f"identifiers: {ids} are unique or nearly unique per row (an ID, an "
                     "e-mail address, a timestamp) and are published fully suppressed")
        logging.getLogger(__name__).warning(
            "Column(s) %s look like identifiers (unique or nearly unique per row): the "
            "release publishes them fully suppressed (missing).", ids)
    if any(s["method"] == "partition" for s in steps):
        notes.append("partition: a group's tuple published as its cell's representative "
                     "tuple; the tree of cuts routes any batch's rows (missing and unseen "
                     "values go right)")
    if any(s["method"] == "mdav" for s in steps):
        notes.append("mdav: applied within each batch (classes separately) with the "
                     "recorded k; a new batch is aggregated among its own rows")
    if any(s["method"] == "synthesise" for s in steps):
        notes.append("synthesise: a group's values drawn from its class-conditional model "
                     "of the reference, by each row's class and rank within its class; "
                     "the model is never refitted on a batch (no batch's own values "
                     "enter it, and a privacy budget is spent once)")
    if model.declared:
        notes.append(model.describe())
    return ReleaseRecipe(k=k, steps=tuple(steps), target=target, notes=tuple(notes),
                         attacker_model=model), report
