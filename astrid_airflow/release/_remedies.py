"""Release remedies: generalise each group's values before the GoldenEye shuffle.

A GoldenEye release publishes every value next to its true class and keeps a group's
columns aligned, so it is only as safe as each group's projection (its columns plus the
class). The standard statistical-disclosure-control remedies (Hundepool et al.,
*Statistical Disclosure Control*, Wiley 2012, ch. 3-4) make those projections
k-anonymous and class-diverse while keeping as much of the values as they can:

* ``bins``: numeric coarsening to intervals, fitted with the class: every bin holds at
  least two classes and at least ``k`` reference rows of each class it holds
  (:func:`_class_edges`). A value is published as its bin's *representative*: the lower median of
  the reference values in the bin, so an integer column stays integer and the value is
  one the data really had (nothing invented); the recipe also states each bin's label
  ``[low, high)``. Values below the first edge or above the last are published as the
  first/last bin's representative: the bins do the top- and bottom-coding;
* ``round``: rounding to a multiple of ``step``, top/bottom-coded at ``low``/``high``;
* ``suppress``: categorical merging of rare categories: categories not in ``keep`` are
  published as missing (one "suppressed" value; the type is unchanged);
* ``mdav``: microaggregation of a multi-column group within class (MDAV, Domingo-Ferrer
  and Mateo-Sanz, "Practical data-oriented microaggregation for statistical disclosure
  control", IEEE TKDE 14(1), 2002): every published tuple is the mean (numeric columns;
  rounded for integer columns) or mode (others) of at least ``k`` similar tuples of the
  same class. MDAV has no parameters to fit: on any batch it is applied *within that
  batch* with the recorded ``k`` (so a new batch is aggregated among its own rows).
* ``partition``: a multi-column group generalised together, across classes: a Mondrian
  tree of cuts fitted on the reference table, every cell with at least two classes and
  at least ``k`` rows of each; a row is published as its cell's representative tuple
  (row by row, on any batch: :mod:`._partition`).

A :class:`ReleaseRecipe` records, per column, what was done with its parameters: bin
edges and representatives, not "quantiles of whatever data", so it re-applies exactly to
a new batch. It is deterministic (no randomness) and JSON round-trips; a bad recipe is
refused with a :class:`~astrid_airflow.RecipeError`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import RecipeError
from astrid_airflow.engine import Grouping

from ._partition import PARTITION_KEYS, apply_partition, check_partition_step
from ._shuffle_steps import step
from ._table_schema import dtype_kind

RECIPE_VERSION = 1
_METHODS = ("bins", "round", "suppress", "mdav", "partition")
_TYPES = ("integer", "float", "string", "category", "boolean")
#: Bin counts tried per group, most detailed first (the first that passes is kept).
BIN_LADDER = (64, 32, 20, 12, 8, 6, 5, 4, 3, 2)


# ----------------------------------------------------------------------------- recipe

def _finite(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _scalar(x: object) -> bool:
    return x is None or isinstance(x, (str, bool)) or _finite(x)


def _check_step(i: int, s: Any, target: str | None) -> dict[str, Any]:
    where = f"recipe step #{i}"
    if not isinstance(s, Mapping):
        raise RecipeError(f"Invalid {where}: expected an object, got {type(s).__name__}.")
    s = dict(s)
    method = s.get("method")
    if method not in _METHODS:
        raise RecipeError(f"Invalid {where}: method {method!r}; known: {list(_METHODS)}.")
    allowed = {"bins": {"method", "column", "edges", "values", "labels", "published_type"},
               "round": {"method", "column", "step", "low", "high", "published_type"},
               "suppress": {"method", "column", "keep", "published_type"},
               "mdav": {"method", "columns", "k", "published_types"},
               "partition": set(PARTITION_KEYS)}[method]
    unknown = sorted(set(s) - allowed)
    missing = sorted(allowed - set(s))
    if unknown or missing:
        raise RecipeError(f"Invalid {where} ({method}): unknown key(s) {unknown}, missing "
                          f"key(s) {missing}.")
    cols = s["columns"] if method in ("mdav", "partition") else [s["column"]]
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) and c
                                                         for c in cols):
        raise RecipeError(f"Invalid {where} ({method}): column names must be non-empty "
                          f"strings, got {cols!r}.")
    if target is not None and target in cols:
        raise RecipeError(f"Invalid {where}: the class column {target!r} is never "
                          "generalised.")
    if method == "bins":
        e, v, lab = s["edges"], s["values"], s["labels"]
        if not (isinstance(e, list) and isinstance(v, list) and isinstance(lab, list)) \
                or not all(_finite(x) for x in e + v) or len(v) != len(e) + 1 \
                or len(lab) != len(v) or not all(isinstance(x, str) for x in lab):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): need finite numeric "
                              "'edges' (n), 'values' (n + 1) and string 'labels' (n + 1).")
        if any(b <= a for a, b in itertools.pairwise(e)):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): edges must "
                              "increase strictly.")
        if any(b <= a for a, b in itertools.pairwise(v)):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): representative "
                              "values must increase strictly (one per bin).")
        if any(not (lo <= x < hi) for x, lo, hi in zip(v, [-math.inf, *e], [*e, math.inf])):
            raise RecipeError(f"Invalid {where} (bins of {cols[0]!r}): a representative "
                              "value lies outside its bin (it would invent a value).")
    elif method == "round":
        if not _finite(s["step"]) or s["step"] <= 0:
            raise RecipeError(f"Invalid {where} (round {cols[0]!r}): step must be > 0, got "
                              f"{s['step']!r}.")
        for key in ("low", "high"):
            if s[key] is not None and not _finite(s[key]):
                raise RecipeError(f"Invalid {where} (round {cols[0]!r}): {key} must be a "
                                  f"number or null, got {s[key]!r}.")
        if s["low"] is not None and s["high"] is not None and s["low"] > s["high"]:
            raise RecipeError(f"Invalid {where} (round {cols[0]!r}): low > high.")
    elif method == "partition":  # the tree of cuts (._partition)
        check_partition_step(where, s)
    elif method == "suppress":
        if not isinstance(s["keep"], list) or not all(_scalar(x) and x is not None
                                                      for x in s["keep"]):
            raise RecipeError(f"Invalid {where} (suppress {cols[0]!r}): 'keep' must be a "
                              "list of category values.")
    else:
        k = s["k"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise RecipeError(f"Invalid {where} (mdav): k must be an integer >= 1, got "
                              f"{k!r}.")
        if len(set(cols)) != len(cols):
            raise RecipeError(f"Invalid {where} (mdav): duplicated columns {cols!r}.")
        pt = s["published_types"]
        if not isinstance(pt, list) or len(pt) != len(cols) or any(t not in _TYPES
                                                                   for t in pt):
            raise RecipeError(f"Invalid {where} (mdav): published_types must list one of "
                              f"{list(_TYPES)} per column.")
    if method not in ("mdav", "partition") and s["published_type"] not in _TYPES:
        raise RecipeError(f"Invalid {where}: published_type {s['published_type']!r}; "
                          f"known: {list(_TYPES)}.")
    return s


@dataclass(frozen=True)
class ReleaseRecipe:
    """What a release does to each column before the shuffle (frozen, validated).

    Parameters
    ----------
    k : int
        The k the remedies were fitted for (every bin, kept category and MDAV cluster
        holds at least k reference rows).
    steps : tuple of dict
        One entry per remedied column (or MDAV group), applied in order; columns not
        named are published unchanged. Each has ``method`` (``"bins"``, ``"round"``,
        ``"suppress"``, ``"mdav"``, ``"partition"``), its parameters and the published type (see the
        module docstring and ``docs/privacy.md``).
    target : str or None
        The class column (never generalised).
    notes : tuple of str
        Human-readable notes (e.g. how a new batch is treated).
    version : int
        Schema version of the recipe (1).
    fallbacks : tuple of ReleaseRecipe
        Coarser recipes of the same release, each checked by the release choice as any
        release is (``choose_release``), finest first: a batch on which this recipe
        needs more local suppression than ``fallback_share`` in some group is published
        with the first of them that does not (:attr:`rungs`,
        :func:`~astrid_airflow.release._surrogate.release_domain`). Empty: no fallback.
    fallback_share : float or None
        The per-group suppressed share the rungs are chosen by (the policy's
        ``max_suppressed_share`` at the choice); required with ``fallbacks``.

    Examples
    --------
    >>> r = ReleaseRecipe(k=5, steps=({"method": "round", "column": "a", "step": 10,
    ...                                "low": 0, "high": 100, "published_type": "float"},))
    >>> ReleaseRecipe.from_json(r.to_json()) == r
    True
    """

    k: int
    steps: tuple = ()
    target: str | None = None
    notes: tuple = ()
    version: int = RECIPE_VERSION
    fallbacks: tuple = ()
    fallback_share: float | None = None
    _by_column: dict = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, numbers.Integral) \
                or self.k < 1:
            raise RecipeError(f"Invalid recipe k: {self.k!r}. Must be an integer >= 1.")
        if self.version != RECIPE_VERSION:
            raise RecipeError(f"Unknown recipe version {self.version!r}; supported: "
                              f"{RECIPE_VERSION}.")
        if self.target is not None and not isinstance(self.target, str):
            raise RecipeError(f"Invalid recipe target: {self.target!r}.")
        if isinstance(self.steps, (str, bytes, Mapping)) or not isinstance(self.steps,
                                                                           Sequence):
            raise RecipeError("Invalid recipe: steps must be a list of objects.")
        steps = tuple(_check_step(i, s, self.target) for i, s in enumerate(self.steps))
        seen: dict[str, int] = {}
        for i, s in enumerate(steps):
            for c in s.get("columns") or [s["column"]]:
                if c in seen:
                    raise RecipeError(f"Invalid recipe: column {c!r} is remedied twice "
                                      f"(steps #{seen[c]} and #{i}).")
                seen[c] = i
        if not all(isinstance(n, str) for n in self.notes):
            raise RecipeError("Invalid recipe: notes must be strings.")
        object.__setattr__(self, "k", int(self.k))
        object.__setattr__(self, "steps", steps)
        self._check_fallbacks()
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "_by_column", seen)

    __hash__ = None  # holds dicts

    def _check_fallbacks(self) -> None:
        if isinstance(self.fallbacks, (str, bytes, Mapping)) or not isinstance(
                self.fallbacks, Sequence):
            raise RecipeError("Invalid recipe: fallbacks must be a list of recipes.")
        rungs = tuple(f if isinstance(f, ReleaseRecipe) else ReleaseRecipe.from_dict(f)
                      for f in self.fallbacks)
        for i, f in enumerate(rungs, 1):
            if f.fallbacks or f.k != self.k or f.target != self.target:
                raise RecipeError(f"Invalid recipe fallback #{i}: it must have the "
                                  f"recipe's k ({self.k}) and target ({self.target!r}) "
                                  "and no fallbacks of its own.")
        share = self.fallback_share
        if rungs and (isinstance(share, bool) or not _finite(share)
                      or not 0 <= share <= 1):
            raise RecipeError(f"Invalid recipe fallback_share: {share!r}. A recipe with "
                              "fallbacks needs the share they are chosen by, in [0, 1].")
        object.__setattr__(self, "fallbacks", rungs)
        object.__setattr__(self, "fallback_share", float(share) if rungs else None)

    @property
    def rungs(self) -> tuple[ReleaseRecipe, ...]:
        """This recipe without its fallbacks, then each fallback: what a batch may be
        published with, finest first (rung 0 is the chosen release)."""
        if not self.fallbacks:
            return (self,)
        return (dataclasses.replace(self, fallbacks=(), fallback_share=None),
                *self.fallbacks)

    def keeps_fallback_share(self, share: float) -> bool:
        """Whether a group of a batch that needs ``share`` of its rows suppressed on a
        rung may be published with it (always, without fallbacks)."""
        return self.fallback_share is None or share <= self.fallback_share + 1e-12

    def mixed(self, picks: Sequence[int], groups: Sequence[Sequence[str]]
              ) -> ReleaseRecipe:
        """The recipe (without fallbacks) whose steps for ``groups[g]``'s columns are
        those of rung ``picks[g]``: what a batch whose groups fell back is published
        with (a step never spans groups, ``check_columns``)."""
        rungs = self.rungs
        if not any(picks):
            return rungs[0]
        steps = []
        for cols, p in zip(groups, picks):
            steps += [s for s in rungs[p].steps if set(s.get("columns") or [s["column"]])
                      <= set(cols)]
        return dataclasses.replace(rungs[0], steps=tuple(steps))

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the recipe changes."""
        return tuple(self._by_column)

    def check_columns(self, columns: Sequence[str], grouping: Grouping | None = None
                      ) -> None:
        """Refuse a recipe naming unknown columns, or an MDAV/partition step across
        groups."""
        for f in self.fallbacks:
            f.check_columns(columns, grouping)
        missing = [c for c in self.columns if c not in set(columns)]
        if missing:
            raise RecipeError(f"The recipe names column(s) {missing} the table does not "
                              "have.")
        if grouping is not None:
            group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
            for s in self.steps:
                if s["method"] in ("mdav", "partition") and len(
                        {group_of.get(c) for c in s["columns"]}) > 1:
                    raise RecipeError(f"The recipe's {s['method']} step over "
                                      f"{s['columns']} spans several groups of the "
                                      "grouping.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict (``version``, ``k``, ``target``, ``steps``, ``notes``; with
        fallbacks, ``fallbacks`` and ``fallback_share`` too)."""
        out = {"version": self.version, "k": self.k, "target": self.target,
               "steps": [json.loads(json.dumps(s, allow_nan=False)) for s in self.steps],
               "notes": list(self.notes)}
        if self.fallbacks:
            out.update(fallbacks=[f.to_dict() for f in self.fallbacks],
                       fallback_share=self.fallback_share)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) \
            + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> ReleaseRecipe:
        """Validate and build; ``RecipeError`` names the problem."""
        if not isinstance(data, Mapping):
            raise RecipeError(f"Invalid recipe: expected an object, got "
                              f"{type(data).__name__}.")
        known = {"version", "k", "target", "steps", "notes", "fallbacks", "fallback_share"}
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown or "k" not in data or "steps" not in data:
            raise RecipeError(f"Invalid recipe: unknown key(s) {unknown}; 'k' and 'steps' "
                              f"are required (known: {sorted(known)}).")
        steps = data["steps"]
        if not isinstance(steps, list):
            raise RecipeError("Invalid recipe: steps must be a list of objects.")
        notes = data.get("notes", [])
        if not isinstance(notes, list):
            raise RecipeError("Invalid recipe: notes must be a list of strings.")
        fallbacks = data.get("fallbacks", [])
        if not isinstance(fallbacks, list):
            raise RecipeError("Invalid recipe: fallbacks must be a list of recipes.")
        return cls(k=data["k"], steps=tuple(steps), target=data.get("target"),
                   notes=tuple(notes), version=data.get("version", RECIPE_VERSION),
                   fallbacks=tuple(fallbacks), fallback_share=data.get("fallback_share"))

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleaseRecipe:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise RecipeError(f"Invalid recipe JSON: {exc.msg}.") from None


# ------------------------------------------------------------------------------ apply

def published_type(series: pd.Series) -> str:
    """``category``, or the column's kind by its dtype alone if it is a number or a
    boolean, else ``string`` (an object column is published as strings)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "category"
    kind = dtype_kind(series.dtype)
    return kind if kind in ("boolean", "integer", "float") else "string"


def as_float(series: pd.Series) -> np.ndarray:
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def typed_like(values: np.ndarray, like: pd.Series) -> pd.Series:
    """``values`` (float, NaN = missing) in ``like``'s dtype (integers stay integers)."""
    if pd.api.types.is_integer_dtype(like.dtype) and not np.isnan(values).any():
        # through pandas: a nullable Int64 column is no numpy dtype
        return pd.Series(values, index=like.index, name=like.name).astype(like.dtype)
    if pd.api.types.is_integer_dtype(like.dtype):
        return pd.Series(pd.array(values, dtype="Float64").astype("Int64"), index=like.index,
                         name=like.name)
    return pd.Series(values.astype(like.dtype if pd.api.types.is_float_dtype(like.dtype)
                                   else float), index=like.index, name=like.name)


_typed = typed_like


def _apply_bins(series: pd.Series, s: Mapping[str, Any]) -> pd.Series:
    x = as_float(series)
    reps = np.asarray(s["values"], dtype=float)
    # right=False: bin i is [edges[i-1], edges[i]); outside values go to the end bins
    idx = np.searchsorted(np.asarray(s["edges"], dtype=float), x, side="right")
    out = np.where(np.isnan(x), np.nan, reps[np.minimum(idx, len(reps) - 1)])
    return _typed(out, series)


def _apply_round(series: pd.Series, s: Mapping[str, Any]) -> pd.Series:
    x = as_float(series)
    if s["low"] is not None:
        x = np.where(x < s["low"], s["low"], x)
    if s["high"] is not None:
        x = np.where(x > s["high"], s["high"], x)
    step = float(s["step"])
    return _typed(np.round(x / step) * step, series)


def _apply_suppress(series: pd.Series, s: Mapping[str, Any]) -> pd.Series:
    keep = series.isin(s["keep"]) | series.isna()
    # categorical dtype and categories stay as they are; strings get None (Arrow: null)
    return series.where(keep, None) if series.dtype == object else series.where(keep)


def mdav_clusters(x: np.ndarray, k: int) -> np.ndarray:
    """MDAV cluster labels of the rows of ``x`` (Domingo-Ferrer & Mateo-Sanz 2002).

    Every cluster has at least ``k`` rows (all rows form one cluster when there are
    fewer than ``2k``). Deterministic: ties go to the lowest row index.

    >>> mdav_clusters(np.array([[0.], [0.1], [5.], [5.1], [9.], [9.2]]), 2).tolist()
    [0, 0, 2, 2, 1, 1]
    """
    n = x.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    rest = np.arange(n)
    next_label = 0

    def take_near(point: np.ndarray, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = ((x[rest] - point) ** 2).sum(axis=1)
        order = np.argsort(d, kind="stable")
        return rest[order[:k]], np.sort(rest[order[k:]])

    while rest.size >= 3 * k:
        c = x[rest].mean(axis=0)
        r = rest[int(np.argmax(((x[rest] - c) ** 2).sum(axis=1)))]
        near, rest = take_near(x[r], rest)
        labels[near] = next_label
        s = rest[int(np.argmax(((x[rest] - x[r]) ** 2).sum(axis=1)))]
        near, rest = take_near(x[s], rest)
        labels[near] = next_label + 1
        next_label += 2
    if rest.size >= 2 * k:
        c = x[rest].mean(axis=0)
        r = rest[int(np.argmax(((x[rest] - c) ** 2).sum(axis=1)))]
        near, rest = take_near(x[r], rest)
        labels[near] = next_label
        next_label += 1
    if rest.size:
        labels[rest] = next_label
    return labels


def _mdav_features(frame: pd.DataFrame) -> np.ndarray:
    parts = []
    for c in frame.columns:
        col = frame[c]
        if published_type(col) in ("integer", "float"):
            v = as_float(col)
            sd = np.nanstd(v)
            v = (v - np.nanmean(v)) / (sd if sd > 0 else 1.0) if v.size else v
            parts.append(np.nan_to_num(v, nan=0.0)[:, None])
        else:  # one-hot, so a mismatch weighs like one standard deviation
            codes = pd.factorize(col.astype(object), sort=True)[0]
            parts.append((codes[:, None] == np.arange(codes.max() + 1)).astype(float)
                         / math.sqrt(2) if codes.size else np.zeros((0, 1)))
    return np.hstack(parts) if parts else np.zeros((len(frame), 0))


def _apply_mdav(table: pd.DataFrame, s: Mapping[str, Any], target: str) -> dict[str, pd.Series]:
    cols = list(s["columns"])
    sub = table[cols].reset_index(drop=True)
    members = _mdav_members(sub, table[target], int(s["k"]))
    out = {c: _mdav_values(sub[c], members) for c in cols}
    index = table.index
    return {c: pd.Series(out[c], index=index, name=c).astype(table[c].dtype)
            if published_type(table[c]) != "integer" else
            _typed(out[c], table[c]) for c in cols}


def _mdav_members(sub: pd.DataFrame, target: pd.Series, k: int) -> list[np.ndarray]:
    """The rows of each MDAV cluster, clustered within each class."""
    classes = pd.factorize(target.reset_index(drop=True), sort=False)[0]
    feats = _mdav_features(sub)
    members = []
    for cls in np.unique(classes):
        rows = np.flatnonzero(classes == cls)
        labels = mdav_clusters(feats[rows], k)
        order = np.argsort(labels, kind="stable")
        cuts = np.flatnonzero(np.diff(labels[order])) + 1
        members += np.split(rows[order], cuts)
    return members


def _mdav_values(col: pd.Series, members: list[np.ndarray]) -> np.ndarray:
    """Each row's cluster value: the (rounded, for an integer column) mean of a number,
    else the most common value (the least in sort order among equals; missing when the
    cluster has none). Numpy per cluster: a pandas assignment per cluster and column was
    most of the choice's time on kr-vs-kp's MDAV candidates (36 columns, 100 batches)."""
    kind = published_type(col)
    if kind in ("integer", "float"):
        v = as_float(col)
        out = np.full(v.size, np.nan)
        for rows in members:
            part = v[rows]
            m = np.nanmean(part) if np.isfinite(part).any() else np.nan
            out[rows] = float(np.floor(m + 0.5)) if kind == "integer" and np.isfinite(m) \
                else m
        return out
    codes, uniques = pd.factorize(col, sort=True)
    out = np.empty(codes.size, dtype=object)
    for rows in members:
        counts = np.bincount(codes[rows][codes[rows] >= 0], minlength=1)
        out[rows] = uniques[int(np.argmax(counts))] if counts.sum() else None
    return out


def apply_recipe(table: Any, recipe: ReleaseRecipe | Mapping[str, Any], *,
                 target: str | None = None, progress: Any = None) -> Any:
    """Return ``table`` with the recipe's remedies applied (values only; no shuffle).

    Parameters
    ----------
    table : pandas.DataFrame or pyarrow.Table
        The reference table or a new batch with the same columns.
    recipe : ReleaseRecipe or its dict
    target : str, optional
        The class column (default: the recipe's); needed by MDAV steps.
    progress : StageProgress, optional
        A stage's progress (:func:`~astrid_airflow.engine.stage_progress`): each step of
        the recipe is counted as one of its steps.

    Returns
    -------
    Same type as ``table``: same columns, dtypes and row order; remedied columns hold
    the published values (bins: representatives; round: rounded, top/bottom-coded;
    suppress: missing; mdav: cluster means/modes within class, computed in this batch).

    Notes
    -----
    ``bins``, ``round``, ``suppress`` and ``partition`` act row by row, so applying
    them to any partition of a table gives the same rows (the Spark path relies on this). ``mdav``
    needs the whole batch.
    """
    if not isinstance(recipe, ReleaseRecipe):
        recipe = ReleaseRecipe.from_dict(recipe)
    target = target or recipe.target
    is_arrow = type(table).__module__.startswith("pyarrow")
    frame = table.select(list(recipe.columns) + ([target] if target and any(
        s["method"] == "mdav" for s in recipe.steps) else [])).to_pandas() if is_arrow \
        else table
    if not isinstance(frame, pd.DataFrame):
        raise RecipeError(f"apply_recipe needs a DataFrame or pyarrow Table, got "
                          f"{type(table).__name__}.")
    recipe.check_columns(list(map(str, frame.columns)))
    new: dict[str, pd.Series] = {}
    for i, s in enumerate(recipe.steps):
        m = s["method"]
        with step(progress, f"recipe step {i + 1}/{len(recipe.steps)}: {m} "
                  f"{', '.join(s.get('columns') or [s.get('column', '')])}"):
            if m == "mdav":
                if not target or target not in frame.columns:
                    raise RecipeError("An MDAV step needs the class column (target=...).")
                new.update(_apply_mdav(frame, s, target))
            elif m == "partition":  # row by row, the tree of cuts (._partition)
                new.update(apply_partition(frame, s))
            else:
                fn = {"bins": _apply_bins, "round": _apply_round,
                      "suppress": _apply_suppress}[m]
                new[s["column"]] = fn(frame[s["column"]], s)
    if is_arrow:
        import pyarrow as pa

        out = table
        for c, series in new.items():
            i = out.column_names.index(c)
            typ = out.schema.field(c).type
            arr = pa.array(series.to_numpy(dtype=object, na_value=None)
                           if not pa.types.is_dictionary(typ) else
                           series.astype(object).where(series.notna(), None).to_numpy(),
                           from_pandas=True)
            out = out.set_column(i, out.schema.field(c), arr.cast(typ))
        return out
    out = table.copy(deep=False)
    for c, series in new.items():
        # the values by position, in their own dtype (a tz-aware datetime's numpy form
        # is naive, and an all-missing one cannot be cast back to its zone)
        out[c] = series.array
        if out[c].dtype != table[c].dtype and published_type(table[c]) != "integer":
            out[c] = out[c].astype(table[c].dtype)
    return out


def generalise_file(src: Any, artefact: Any, out: Any, *, overwrite: bool = False
                    ) -> dict[str, Any]:
    """Write ``src`` (Parquet/CSV) with the artefact's recipe applied, atomically.

    The file's schema is checked against the artefact first; the output keeps the
    input's column types and row order. Returns ``{"out", "rows"}``. The recipe's values
    only (its first rung): the fallbacks and local suppression depend on a batch's
    counts, which the shuffle applies (``release_domain``).
    """
    import contextlib
    import os

    from astrid_airflow.io import (
        arrow_writer,
        atomic_path,
        file_format,
        read_arrow,
        refuse_overwriting_inputs,
    )

    from ._surrogate import release_recipe

    recipe = release_recipe(artefact, True)
    if recipe is None:
        raise RecipeError("The artefact records no release recipe: nothing to apply.")
    src, out = os.fspath(src), os.fspath(out)
    refuse_overwriting_inputs([out], [src])  # --overwrite never replaces the input
    kind = file_format(out)
    table = read_arrow(src)
    artefact.check_table(table.schema)
    table = apply_recipe(table, recipe, target=artefact.target)
    with atomic_path(out, overwrite=overwrite) as tmp, \
            contextlib.closing(arrow_writer(kind, tmp, table.schema)) as writer:
        if kind == "csv":
            from astrid_airflow.io import csv_schema

            table = table.cast(csv_schema(table.schema))
        writer.write_table(table)
    return {"out": out, "rows": table.num_rows}


# -------------------------------------------------------------------------------- fit
