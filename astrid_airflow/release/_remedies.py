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

A :class:`ReleaseRecipe` records, per column, what was done with its parameters: bin
edges and representatives, not "quantiles of whatever data", so it re-applies exactly to
a new batch. It is deterministic (no randomness) and JSON round-trips; a bad recipe is
refused with a :class:`~astrid_airflow.RecipeError`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import RecipeError
from astrid_airflow.engine import Grouping

from ._artefact import dtype_kind

RECIPE_VERSION = 1
_METHODS = ("bins", "round", "suppress", "mdav")
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
               "mdav": {"method", "columns", "k", "published_types"}}[method]
    unknown = sorted(set(s) - allowed)
    missing = sorted(allowed - set(s))
    if unknown or missing:
        raise RecipeError(f"Invalid {where} ({method}): unknown key(s) {unknown}, missing "
                          f"key(s) {missing}.")
    cols = s["columns"] if method == "mdav" else [s["column"]]
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
    if method != "mdav" and s["published_type"] not in _TYPES:
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
        ``"suppress"``, ``"mdav"``), its parameters and the published type (see the
        module docstring and ``docs/privacy.md``).
    target : str or None
        The class column (never generalised).
    notes : tuple of str
        Human-readable notes (e.g. how a new batch is treated).
    version : int
        Schema version of the recipe (1).

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
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "_by_column", seen)

    __hash__ = None  # holds dicts

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the recipe changes."""
        return tuple(self._by_column)

    def check_columns(self, columns: Sequence[str], grouping: Grouping | None = None
                      ) -> None:
        """Refuse a recipe naming unknown columns, or an MDAV step across groups."""
        missing = [c for c in self.columns if c not in set(columns)]
        if missing:
            raise RecipeError(f"The recipe names column(s) {missing} the table does not "
                              "have.")
        if grouping is not None:
            group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
            for s in self.steps:
                if s["method"] == "mdav" and len({group_of.get(c) for c in s["columns"]}) > 1:
                    raise RecipeError(f"The recipe's MDAV step over {s['columns']} spans "
                                      "several groups of the grouping.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict (``version``, ``k``, ``target``, ``steps``, ``notes``)."""
        return {"version": self.version, "k": self.k, "target": self.target,
                "steps": [json.loads(json.dumps(s, allow_nan=False)) for s in self.steps],
                "notes": list(self.notes)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False) \
            + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> ReleaseRecipe:
        """Validate and build; ``RecipeError`` names the problem."""
        if not isinstance(data, Mapping):
            raise RecipeError(f"Invalid recipe: expected an object, got "
                              f"{type(data).__name__}.")
        known = {"version", "k", "target", "steps", "notes"}
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
        return cls(k=data["k"], steps=tuple(steps), target=data.get("target"),
                   notes=tuple(notes), version=data.get("version", RECIPE_VERSION))

    @classmethod
    def from_json(cls, text: str | bytes) -> ReleaseRecipe:
        try:
            return cls.from_dict(json.loads(text))
        except json.JSONDecodeError as exc:
            raise RecipeError(f"Invalid recipe JSON: {exc.msg}.") from None


# ------------------------------------------------------------------------------ apply

def _published_type(series: pd.Series) -> str:
    """``category``, or the column's kind by its dtype alone if it is a number or a
    boolean, else ``string`` (an object column is published as strings)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "category"
    kind = dtype_kind(series.dtype)
    return kind if kind in ("boolean", "integer", "float") else "string"


def _as_float(series: pd.Series) -> np.ndarray:
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _typed(values: np.ndarray, like: pd.Series) -> pd.Series:
    """``values`` (float, NaN = missing) in ``like``'s dtype (integers stay integers)."""
    if pd.api.types.is_integer_dtype(like.dtype) and not np.isnan(values).any():
        return pd.Series(values.astype(like.dtype), index=like.index, name=like.name)
    if pd.api.types.is_integer_dtype(like.dtype):
        return pd.Series(pd.array(values, dtype="Float64").astype("Int64"), index=like.index,
                         name=like.name)
    return pd.Series(values.astype(like.dtype if pd.api.types.is_float_dtype(like.dtype)
                                   else float), index=like.index, name=like.name)


def _apply_bins(series: pd.Series, s: Mapping[str, Any]) -> pd.Series:
    x = _as_float(series)
    reps = np.asarray(s["values"], dtype=float)
    # right=False: bin i is [edges[i-1], edges[i]); outside values go to the end bins
    idx = np.searchsorted(np.asarray(s["edges"], dtype=float), x, side="right")
    out = np.where(np.isnan(x), np.nan, reps[np.minimum(idx, len(reps) - 1)])
    return _typed(out, series)


def _apply_round(series: pd.Series, s: Mapping[str, Any]) -> pd.Series:
    x = _as_float(series)
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
        if _published_type(col) in ("integer", "float"):
            v = _as_float(col)
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
    k = int(s["k"])
    sub = table[cols].reset_index(drop=True)
    out = {c: sub[c].copy() for c in cols}
    classes = pd.factorize(table[target].reset_index(drop=True), sort=False)[0]
    feats = _mdav_features(sub)
    for cls in np.unique(classes):
        rows = np.flatnonzero(classes == cls)
        labels = mdav_clusters(feats[rows], k)
        for lab in np.unique(labels):
            members = rows[labels == lab]
            for c in cols:
                col = sub[c]
                if _published_type(col) in ("integer", "float"):
                    v = _as_float(col.iloc[members])
                    m = np.nanmean(v) if np.isfinite(v).any() else np.nan
                    if _published_type(col) == "integer" and np.isfinite(m):
                        m = float(np.floor(m + 0.5))  # rounded mean keeps the type
                    out[c].iloc[members] = m
                else:
                    mode = col.iloc[members].mode(dropna=True)
                    out[c].iloc[members] = mode.iloc[0] if len(mode) else None
    index = table.index
    return {c: pd.Series(out[c].to_numpy(), index=index, name=c).astype(table[c].dtype)
            if _published_type(table[c]) != "integer" else
            _typed(_as_float(out[c]), table[c]) for c in cols}


def apply_recipe(table: Any, recipe: ReleaseRecipe | Mapping[str, Any], *,
                 target: str | None = None) -> Any:
    """Return ``table`` with the recipe's remedies applied (values only; no shuffle).

    Parameters
    ----------
    table : pandas.DataFrame or pyarrow.Table
        The reference table or a new batch with the same columns.
    recipe : ReleaseRecipe or its dict
    target : str, optional
        The class column (default: the recipe's); needed by MDAV steps.

    Returns
    -------
    Same type as ``table``: same columns, dtypes and row order; remedied columns hold
    the published values (bins: representatives; round: rounded, top/bottom-coded;
    suppress: missing; mdav: cluster means/modes within class, computed in this batch).

    Notes
    -----
    ``bins``, ``round`` and ``suppress`` act row by row, so applying them to any
    partition of a table gives the same rows (the Spark path relies on this). ``mdav``
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
    for s in recipe.steps:
        m = s["method"]
        if m == "mdav":
            if not target or target not in frame.columns:
                raise RecipeError("An MDAV step needs the class column (target=...).")
            new.update(_apply_mdav(frame, s, target))
        else:
            fn = {"bins": _apply_bins, "round": _apply_round, "suppress": _apply_suppress}[m]
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
        out[c] = series.to_numpy() if not isinstance(series.dtype, pd.CategoricalDtype) \
            else series
        if out[c].dtype != table[c].dtype and _published_type(table[c]) != "integer":
            out[c] = out[c].astype(table[c].dtype)
    return out


def generalise_file(src: Any, artefact: Any, out: Any, *, overwrite: bool = False
                    ) -> dict[str, Any]:
    """Write ``src`` (Parquet/CSV) with the artefact's recipe applied, atomically.

    The file's schema is checked against the artefact first; the output keeps the
    input's column types and row order. Returns ``{"out", "rows"}``.
    """
    import contextlib
    import os

    from astrid_airflow.io import atomic_path

    from ._surrogate import arrow_writer, file_format, read_arrow, release_recipe

    recipe = release_recipe(artefact, True)
    if recipe is None:
        raise RecipeError("The artefact records no release recipe: nothing to apply.")
    src, out = os.fspath(src), os.fspath(out)
    kind = file_format(out)
    table = read_arrow(src)
    artefact.check_table(table.schema)
    table = apply_recipe(table, recipe, target=artefact.target)
    with atomic_path(out, overwrite=overwrite) as tmp, \
            contextlib.closing(arrow_writer(kind, tmp, table.schema)) as writer:
        if kind == "csv":
            from ._surrogate import csv_schema

            table = table.cast(csv_schema(table.schema))
        writer.write_table(table)
    return {"out": out, "rows": table.num_rows}


# -------------------------------------------------------------------------------- fit

def group_risk(frame: pd.DataFrame, labels: Any, k: int) -> tuple[float, float, int]:
    """``(share_below_k, class_disclosure_share, k_min)`` of ``frame``'s tuples + class.

    The per-group measures of :mod:`._disclosure` on one group's (remedied) columns:
    equivalence classes are rows sharing the tuple and the class (missing = a value).
    """
    n = len(frame)
    if n == 0:
        return 0.0, 0.0, 0
    codes = [pd.factorize(frame[c].astype(object), use_na_sentinel=False)[0]
             for c in frame.columns]
    tup = pd.factorize(pd.MultiIndex.from_arrays(codes) if len(codes) > 1 else codes[0])[0] \
        if codes else np.zeros(n, dtype=np.int64)
    y = pd.factorize(pd.Series(labels), sort=False)[0]
    key = tup.astype(np.int64) * (int(y.max()) + 1) + y
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    size = counts[inv]
    # classes per tuple value
    pairs = np.unique(key)
    n_classes = np.bincount(pairs // (int(y.max()) + 1), minlength=int(tup.max()) + 1)
    one_class = n_classes[tup] == 1
    return float(np.mean(size < k)), float(np.mean(one_class)), int(size.min())


def _bin_step(values: np.ndarray, n_bins: int, k: int, column: str, ptype: str,
              labels: Any) -> dict[str, Any] | None:
    """At most ``n_bins`` class-aware bins of ``values`` (:func:`_class_edges`; ``None``:
    a single bin)."""
    finite = np.isfinite(values)
    order = np.argsort(values[finite], kind="stable")
    v = values[finite][order]
    if v.size == 0:
        return None
    y = pd.factorize(pd.Series(np.asarray(labels)[finite][order]))[0]
    edges = _class_edges(v, y, n_bins, k)
    if not edges:
        return None
    bounds = [0, *[int(np.searchsorted(v, e, side="left")) for e in edges], v.size]
    # Edges and representatives are published (file, recipe, validation JSON): never one
    # person's value. An edge is the roundest number between the values it separates
    # (the same cut); a representative the roundest number among the middle half of
    # its bin's values, or the median when k rows share it (issue 29).
    uniq, counts = np.unique(v, return_counts=True)
    rare = frozenset(uniq[counts < k].tolist())
    edges = [_roundest(float(v[a - 1]), float(v[a]), True, rare) for a in bounds[1:-1]]
    reps = [_representative(v[a:b], k, ptype == "integer", rare)
            for a, b in itertools.pairwise(bounds)]
    if any(b <= a for a, b in itertools.pairwise(reps)):  # ties at rounding: medians
        reps = [float(v[a + (b - a - 1) // 2]) for a, b in itertools.pairwise(bounds)]
    fmt = (lambda x: f"{x:g}") if ptype == "float" else (lambda x: f"{int(x)}")
    names = [f"[{fmt(a)}, {fmt(b)})" if np.isfinite(a) and np.isfinite(b) else
             (f"< {fmt(b)}" if np.isfinite(b) else f">= {fmt(a)}")
             for a, b in zip([-math.inf, *edges], [*edges, math.inf])]
    return {"method": "bins", "column": column, "edges": edges, "values": reps,
            "labels": names, "published_type": ptype}


def _roundest(lo: float, hi: float, low_open: bool = False,
              avoid: frozenset = frozenset()) -> float:
    """The number with the fewest significant digits in ``[lo, hi]`` (``(lo, hi]`` with
    ``low_open``), nearest the middle among those and not in ``avoid`` (the values fewer
    than k rows have); ``hi`` when the interval is a point.

    >>> _roundest(1234.0, 1317.0), _roundest(3.0, 97.0), _roundest(0.5, 0.5)
    (1300.0, 50.0, 0.5)
    """
    if not hi > lo:
        return float(hi)
    mid = (lo + hi) / 2
    step = 10.0 ** math.ceil(math.log10(hi - lo))
    for _ in range(40):
        for mult in (1.0, 0.5, 0.2):
            s = step * mult
            m = round(mid / s) * s
            m = float(round(m, 12))
            inside = (lo < m if low_open else lo <= m) and m <= hi
            if inside and m not in avoid:
                return m
        step /= 10
    return float(hi)


def _representative(values: np.ndarray, k: int, integer: bool = False,
                    rare: frozenset = frozenset()) -> float:
    """A bin's published value: its lower median when ``k`` rows share it, else the
    roundest number among the middle half of the bin's (sorted) values (an integer for
    an integer column)."""
    med = float(values[(values.size - 1) // 2])
    if np.count_nonzero(values == med) >= k:
        return med
    q1 = float(values[values.size // 4])
    q3 = float(values[max(values.size // 4, (3 * values.size) // 4 - 1)])
    if integer:  # whole numbers only: the roundest integer of the middle half not rare
        pool = [x for x in range(math.ceil(q1), math.floor(q3) + 1) if float(x) not in rare]
        if pool:
            mid = (q1 + q3) / 2
            return float(min(pool, key=lambda x: (_digits(x), abs(x - mid))))
        return med
    return _roundest(q1, q3, avoid=rare)


def _digits(x: int) -> int:
    """Significant digits of an integer (0 has none): roundness of a representative."""
    x = abs(x)
    if x == 0:
        return 0
    while x % 10 == 0:
        x //= 10
    return len(str(x))


#: Cut points a class-aware binning chooses from (quantiles of the column).
CANDIDATE_CUTS = 1024


def _class_edges(v: np.ndarray, y: np.ndarray, n_bins: int, k: int) -> list[float]:
    """Cuts of sorted ``v`` (class codes ``y``) into at most ``n_bins`` class-aware bins.

    Top-down, as a decision tree on one column (Fayyad and Irani, IJCAI 1993): the bin
    whose best cut gains the most class information is cut next, among the column's
    quantiles (``CANDIDATE_CUTS``). A cut is allowed only when both sides keep at least
    two classes and, of every class they hold, at least ``k`` rows: so every bin is
    k-anonymous with its class and distinct 2-diverse (Machanavajjhala et al., ACM TKDD
    1(1), 2007) by construction, and the detail goes where it tells the classes apart.
    A class with fewer than ``k`` rows in all is below k wherever it goes (the per-group
    budget counts it) and does not stop a cut. A cut must pass Fayyad and Irani's
    minimum-description-length test: one whose gain the sample's noise explains would
    fit the bins to the released rows' own labels, and the boundaries would then tell
    members from non-members; a bin with no such cut is cut at its median when allowed,
    the largest such bin first, after every informative cut.
    """
    import heapq

    n, n_classes = v.size, int(y.max()) + 1
    q = np.quantile(v, np.linspace(0, 1, CANDIDATE_CUTS + 1)[1:-1], method="lower")
    pos = np.unique(np.searchsorted(v, np.unique(q[q > v[0]]), side="left"))
    pos = np.concatenate([[0], pos[(pos > 0) & (pos < n)], [n]])
    # class counts before each candidate position
    cum = np.zeros((pos.size, n_classes), dtype=np.int64)
    for c in range(n_classes):
        cum[:, c] = np.concatenate([[0], np.cumsum(y == c)])[pos]

    def entropy(counts: np.ndarray) -> np.ndarray:
        tot = counts.sum(axis=-1, keepdims=True)
        p = np.divide(counts, tot, out=np.zeros(counts.shape), where=tot > 0)
        return -(p * np.log(p, out=np.zeros(p.shape), where=p > 0)).sum(axis=-1)

    rare = cum[-1] < k  # classes below k in the whole column

    def ok(counts: np.ndarray) -> np.ndarray:
        return (((counts == 0) | (counts >= k) | rare).all(axis=-1)
                & ((counts > 0).sum(axis=-1) >= 2))

    def best(a: int, b: int) -> tuple[tuple[int, float], int] | None:
        if b - a < 2:
            return None
        whole = cum[b] - cum[a]
        left = cum[a + 1:b] - cum[a]
        right = whole - left
        allowed = ok(left) & ok(right)
        if not allowed.any():
            return None
        nl, nr = left.sum(axis=1), right.sum(axis=1)
        n_ab = whole.sum()
        gain = entropy(whole) - (nl * entropy(left) + nr * entropy(right)) / n_ab
        gain = np.where(allowed, gain, -np.inf)
        j = int(np.argmax(gain))
        if not mdl_accepts(whole, left[j], right[j], gain[j]):
            # no cut tells the classes apart better than the sample's own noise: the
            # median, which fits nothing to the labels (a cut fitted to noise would
            # tell who is in the release)
            mid = (pos[a] + pos[b]) / 2
            j = int(np.argmin(np.where(allowed, np.abs(pos[a + 1:b] - mid), np.inf)))
            return (0, float(n_ab)), a + 1 + j  # after every informative cut, largest first
        return (1, float(gain[j]) * n_ab), a + 1 + j

    def mdl_accepts(whole: np.ndarray, left: np.ndarray, right: np.ndarray,
                    gain: float) -> bool:
        """Fayyad and Irani's minimum-description-length test of a cut (in nats)."""
        n_ab = whole.sum()
        c, c1, c2 = ((x > 0).sum() for x in (whole, left, right))
        delta = np.log(3.0 ** c - 2) - (c * entropy(whole) - c1 * entropy(left)
                                         - c2 * entropy(right))
        return gain > (np.log(n_ab - 1) + delta) / n_ab

    if not ok(cum[-1] - cum[0])[()]:
        return []
    heap: list = []
    cuts: list[int] = []
    first = best(0, pos.size - 1)
    if first is not None:
        heapq.heappush(heap, (-first[0][0], -first[0][1], 0, pos.size - 1, first[1]))
    while heap and len(cuts) + 1 < n_bins:
        *_, a, b, j = heapq.heappop(heap)
        cuts.append(j)
        for lo, hi in ((a, j), (j, b)):
            nxt = best(lo, hi)
            if nxt is not None:
                heapq.heappush(heap, (-nxt[0][0], -nxt[0][1], lo, hi, nxt[1]))
    return [float(v[pos[j]]) for j in sorted(cuts)]


def _single_bin(values: np.ndarray, column: str, ptype: str) -> dict[str, Any]:
    # No split keeps k rows per bin: one bin, everything published as the lower median
    # (full suppression of the column's information, stated as such in the recipe).
    v = np.sort(values[np.isfinite(values)])
    rep = float(v[(v.size - 1) // 2]) if v.size else 0.0
    return {"method": "bins", "column": column, "edges": [], "values": [rep],
            "labels": ["all values"], "published_type": ptype}


def column_class_risk(series: pd.Series, labels: Any) -> float:
    """Upper 95 % bound of the exact risk of inferring the class from ``series`` alone
    (:func:`~astrid_airflow.privacy.class_from_column_risks`, the gate's measure)."""
    from astrid_airflow.privacy import class_from_column_risks

    frame = pd.DataFrame({"x": series.to_numpy(), "__y": np.asarray(labels)})
    return class_from_column_risks(frame, target="__y", columns=["x"])[0].ci[1]


def _suppress_step(series: pd.Series, labels: Any, k: int, column: str, ptype: str,
                   max_below: float, max_disclosure: float, max_column_risk: float = math.inf
                   ) -> dict[str, Any] | None:
    counts = series.value_counts(dropna=True)
    keep = [v for v, c in counts.items() if c >= k]
    while True:
        remedied = series.where(series.isin(keep) | series.isna())
        below, disclosure, _ = group_risk(remedied.to_frame(), labels, k)
        if not keep:
            break
        from ._suppression import suppressed_share

        if below <= max_below and disclosure <= max_disclosure and suppressed_share(
                remedied.to_frame(), labels, k) <= min(max_below, max_disclosure):
            if max_column_risk == math.inf or \
                    column_class_risk(remedied, labels) <= max_column_risk:
                break
            # the class from this column alone: suppress the smallest kept category
            keep = [v for v in keep if v != min(keep, key=lambda v: (counts[v], keep.index(v)))]
            continue
        # drop the kept category that fails worst: one naming a single class first
        # (smallest), else the one with the smallest (category, class) cell
        by = pd.crosstab(remedied, pd.Series(np.asarray(labels), index=series.index))
        present = (by > 0).sum(axis=1)
        big = (by >= k).sum(axis=1)  # fewer than two classes of k rows: all suppressed
        single = by[(present == 1) | (big < 2)]
        worst = single.sum(axis=1).idxmin() if len(single) else \
            by.where(by > 0).min(axis=1).idxmin()
        keep = [v for v in keep if v != worst]
    if len(keep) == len(counts):
        return None
    return {"method": "suppress", "column": column,
            "keep": [v.item() if hasattr(v, "item") else v for v in keep],
            "published_type": ptype}


@dataclass(frozen=True)
class _GroupFit:
    steps: tuple
    passed: bool
    share_below_k: float
    class_disclosure_share: float
    detail: str
    class_from_one_column_risk: float | None = None


def _fit_group(table: pd.DataFrame, cols: Sequence[str], labels: Any, k: int,
               max_below: float, max_disclosure: float, method: str,
               max_column_risk: float = math.inf, max_bins: int | None = None) -> _GroupFit:
    numeric = [c for c in cols if _published_type(table[c]) in ("integer", "float")]
    other = [c for c in cols if c not in numeric]
    column_risk: list[float | None] = [None]  # of the last judged remedy

    def judge(steps: list) -> tuple[bool, float, float]:
        frame = table[list(cols)]
        if steps:
            frame = apply_recipe(frame.assign(**{"__y": np.asarray(labels)}),
                                 ReleaseRecipe(k=k, steps=tuple(steps), target="__y"),
                                 target="__y")[list(cols)]
        below, disc, _ = group_risk(frame, labels, k)
        # local suppression removes every exposed row, the closure included (a tuple
        # left with one class of k rows): that share is what the budget bounds
        from ._suppression import suppressed_share

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
                "published_types": [_published_type(table[c]) for c in cols]}
        ok, below, disc = judge([step])
        return _GroupFit((step,), ok, below, disc, f"mdav k={k}", column_risk[0])
    cat_steps = []
    for c in other:
        s = _suppress_step(table[c], labels, k, c, _published_type(table[c]),
                           max_below, max_disclosure, max_column_risk)
        if s is not None:
            cat_steps.append(s)
    last = (False, below, disc, list(cat_steps))
    for n_bins in [b for b in BIN_LADDER if max_bins is None or b <= max_bins]:
        steps = list(cat_steps)
        for c in numeric:
            vals = _as_float(table[c])
            s = _bin_step(vals, n_bins, k, c, _published_type(table[c]), labels)
            steps.append(s if s is not None else _single_bin(vals, c,
                                                             _published_type(table[c])))
        ok, below, disc = judge(steps)
        last = (ok, below, disc, steps)
        if ok:
            return _GroupFit(tuple(steps), True, below, disc, f"at most {n_bins} class-aware bins",
                            column_risk[0])
    if numeric and len(cols) == 1:
        steps = [_single_bin(_as_float(table[c]), c, _published_type(table[c]))
                 for c in numeric]
        ok, below, disc = judge(cat_steps + steps)
        return _GroupFit(tuple(cat_steps + steps), ok, below, disc, "one bin (suppressed)",
                        column_risk[0])
    ok, below, disc, steps = last
    return _GroupFit(tuple(steps), ok, below, disc, "at most 2 class-aware bins (not enough)",
                     column_risk[0])


#: The fit asks this many times k rows of every published (tuple, class) cell of the
#: reference, so that a batch of the same size rarely falls below k (issue 28).
BATCH_FACTOR = 2

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
        if (kind == "integer" and distinct == present and present >= 0.95 * n) or \
                (kind != "integer" and distinct >= IDENTIFIER_DISTINCT_SHARE * n):
            out.append(c)
    return out


def fit_recipe(table: pd.DataFrame, *, target: str, grouping: Any, k: int = 5,
               max_share_below_k: float = 0.05, max_class_disclosure_share: float = 0.05,
               margin: float = 0.5, method: str = "bins",
               max_class_from_one_column_risk: float | None = None,
               max_bins: int | None = None) -> tuple[ReleaseRecipe, list[dict]]:
    """Fit the least generalisation that makes every group's projection safe.

    For each group of ``grouping``, the most detailed remedy of the ladder whose
    per-group ``share_below_k`` and ``class_disclosure_share`` (on the reference
    ``table``) stay within ``margin`` times the thresholds (the slack absorbs a new
    batch), and, with ``max_class_from_one_column_risk``, whose every column's exact
    class-from-one-column risk (upper 95 % bound, the gate's measure) stays within
    ``margin`` times that threshold: unchanged; else rare categories suppressed (and,
    for that risk, the smallest kept categories next) and numeric columns cut into at
    most 64, 32, 20, 12, ... 2 class-aware bins, each with at least two classes and at
    least ``k`` rows of every class it holds (all of a group's numeric columns with the
    same count: fewer, larger bins for a column the risk names);
    ``method="mdav"`` microaggregates multi-column groups within class instead
    (Domingo-Ferrer & Mateo-Sanz 2002). ``max_bins`` starts the ladder lower (at most
    that many bins per numeric column): the choice's coarser retry of a release the
    attacks refuse.

    Returns
    -------
    (ReleaseRecipe, list of dict)
        The recipe and, per group, ``{"columns", "passed", "share_below_k",
        "class_disclosure_share", "class_from_one_column_risk", "remedy"}`` (the risk is
        the worst column's upper bound, ``None`` when not asked for or not reached; a
        group that did not pass needs a split; see
        :func:`~astrid_airflow.choose_release`).

    References
    ----------
    Hundepool et al., *Statistical Disclosure Control*, Wiley 2012 (global recoding,
    top/bottom coding, local suppression, microaggregation).
    """
    from ._surrogate import resolve_grouping

    grouping, target, _ = resolve_grouping(grouping, target)
    if method not in ("bins", "mdav"):
        raise RecipeError(f"Invalid remedy method {method!r}; known: ['bins', 'mdav'].")
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
    ids = identifier_columns(table, list(grouping.columns))
    # Fitted for BATCH_FACTOR * k rows per published cell on the reference: a new
    # batch's counts vary around the reference's, and its local suppression (at k)
    # must stay within the budget (benchmarks/bench_honest_release.py)
    k_fit = BATCH_FACTOR * k
    for cols in grouping.groups:
        rest = [c for c in cols if c not in ids]
        # an identifier is published fully suppressed (all missing), never binned
        steps.extend({"method": "suppress", "column": c, "keep": [],
                      "published_type": _published_type(table[c])} for c in cols if c in ids)
        fit = _fit_group(table, rest, labels, k_fit, below, disclosure, method,
                         column_risk, max_bins) if rest else _GroupFit((), True, 0.0, 0.0, "")
        if len(rest) < len(cols):
            fit = dataclasses.replace(fit, detail="; ".join(filter(None, [
                f"identifier(s) {[c for c in cols if c in ids]} fully suppressed",
                fit.detail])))
        steps.extend(fit.steps)
        report.append({"columns": list(cols), "passed": fit.passed,
                       "share_below_k": fit.share_below_k,
                       "class_disclosure_share": fit.class_disclosure_share,
                       "class_from_one_column_risk": fit.class_from_one_column_risk,
                       "remedy": fit.detail})
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
    if any(s["method"] == "mdav" for s in steps):
        notes.append("mdav: applied within each batch (classes separately) with the "
                     "recorded k; a new batch is aggregated among its own rows")
    return ReleaseRecipe(k=k, steps=tuple(steps), target=target, notes=tuple(notes)), report
