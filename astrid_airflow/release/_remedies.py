"""Applying a release recipe (:class:`~._recipe.ReleaseRecipe`) to a table or a file.

Every method but MDAV acts row by row, so a recipe re-applies to any batch, or any
partition of one, exactly (the Spark path relies on this); MDAV aggregates within the
batch it is given. What each method publishes is described in :mod:`._recipe`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import RecipeError

from ._partition import apply_partition
from ._recipe import ReleaseRecipe, release_recipe
from ._shuffle_steps import step
from ._synthesis import synthesised_values
from ._table_schema import dtype_kind, typed_like


def published_type(series: pd.Series) -> str:
    """``category``, or the column's kind by its dtype alone if it is a number or a
    boolean, else ``string`` (an object column is published as strings)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return "category"
    kind = dtype_kind(series.dtype)
    return kind if kind in ("boolean", "integer", "float") else "string"


def as_float(series: pd.Series) -> np.ndarray:
    return pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


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


#: The steps that act on one column, row by row.
_COLUMN_STEPS = {"bins": _apply_bins, "round": _apply_round, "suppress": _apply_suppress}


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


def _apply_synthesis(frame: pd.DataFrame, s: Mapping[str, Any], target: str,
                     ranks: Any = None) -> dict[str, pd.Series]:
    """The group's drawn values, each in its column's published type."""
    out = {}
    for c, values in synthesised_values(s, frame[target].to_numpy(), ranks).items():
        like = frame[c]
        if values.dtype == float and published_type(like) in ("integer", "float"):
            out[c] = _typed(values, like)
        else:
            out[c] = pd.Series(values, index=frame.index, name=c, dtype=object)
    return out


def apply_recipe(table: Any, recipe: ReleaseRecipe | Mapping[str, Any], *,
                 target: str | None = None, progress: Any = None,
                 class_ranks: Any = None) -> Any:
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
    suppress: missing; mdav: cluster means/modes within class, computed in this batch;
    synthesise: draws of the class's model, by each row's rank within its class).

    Notes
    -----
    ``bins``, ``round``, ``suppress`` and ``partition`` act row by row, so applying
    them to any partition of a table gives the same rows (the Spark path relies on this). ``mdav``
    needs the whole batch.
    """
    if not isinstance(recipe, ReleaseRecipe):
        recipe = ReleaseRecipe.from_dict(recipe)
    # its steps, not its fallbacks (a batch's rungs are chosen by release_domain): a
    # fallback may remedy a column these steps leave alone, which the projection lacks
    recipe = recipe.rungs[0]
    target = target or recipe.target
    is_arrow = type(table).__module__.startswith("pyarrow")
    frame = table.select(list(recipe.columns) + ([target] if target and any(
        s["method"] in ("mdav", "synthesise") for s in recipe.steps) else [])
    ).to_pandas() if is_arrow else table
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
            elif m == "synthesise":  # by (class, rank in class): ._synthesis
                if not target or target not in frame.columns:
                    raise RecipeError("A synthesise step needs the class column "
                                      "(target=...).")
                new.update(_apply_synthesis(frame, s, target, class_ranks))
            else:
                new[s["column"]] = _COLUMN_STEPS[m](frame[s["column"]], s)
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
        out[c] = in_published_dtype(series, table[c]).array
    return out


def in_published_dtype(series: pd.Series, like: pd.Series) -> pd.Series:
    """A remedied column in the dtype of the column ``like`` it replaces (integers as
    the remedy typed them: a suppressed one may need a nullable dtype)."""
    if series.dtype != like.dtype and published_type(like) != "integer":
        return series.astype(like.dtype)
    return series


def apply_column_step(series: pd.Series, step: Mapping[str, Any]) -> pd.Series:
    """One ``bins``, ``round`` or ``suppress`` step on its column, as
    :func:`apply_recipe` publishes it (those steps act on one column, row by row)."""
    return in_published_dtype(_COLUMN_STEPS[step["method"]](series, step), series)


def generalise_file(src: Any, artefact: Any, out: Any, *, overwrite: bool = False
                    ) -> dict[str, Any]:
    """Write ``src`` (Parquet/CSV) with the artefact's recipe applied, atomically.

    The file's schema is checked against the artefact first; the output keeps the
    input's column types and row order. Returns ``{"out", "rows"}``. The recipe's values
    only (its first rung, a synthesised group's values kept): the fallbacks and local
    suppression depend on a batch's counts, which the shuffle applies
    (``release_domain``).
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

    recipe = release_recipe(artefact, True)
    if recipe is None:
        raise RecipeError("The artefact records no release recipe: nothing to apply.")
    # a synthesised group's values live in the columns' own domain and its draws are no
    # person's: a record put into the release's domain keeps its own values there
    recipe = recipe.rungs[0].without_synthesis()
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
