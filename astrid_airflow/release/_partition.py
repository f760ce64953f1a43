"""The ``partition`` recipe step: a group's tuples generalised together, across classes.

A multi-column group is the unit a GoldenEye release keeps aligned, so a group of many
continuous columns is unique row by row however each column is binned. The
``partition`` step generalises the group's columns *together*: a Mondrian partition
(LeFevre, DeWitt and Ramakrishnan, "Mondrian multidimensional k-anonymity", ICDE 2006)
of the group's tuples, fitted on the reference table
(:mod:`astrid_airflow.pipeline._fit_partition`), with every cell holding at least two
classes, at least ``k`` rows and, of every class it holds, at least ``min_class_rows``
(>= ``k``) rows:
distinct 2-diversity (Machanavajjhala et al., ACM TKDD 1(1), 2007) that also keeps every
(published tuple, class) combination k-anonymous, the measure the gate checks. Each
cell is published as its *representative tuple*: per column, the lower median of the
cell's reference values (numbers; missing sorts last) or its most frequent value
(others): values the data had, each published for every row of the cell.

The recipe records the partition as a tree of cuts, so it re-applies to any batch row by
row (the local shuffle and the Spark path run this same code on their rows):

* ``nodes``: a list, the root first. An inner node is ``{"column", "cut", "left",
  "right"}`` (a number column: ``value < cut`` goes left, anything else, missing
  included, goes right) or ``{"column", "left_values", "left", "right"}`` (any other
  column: a value in the list goes left, anything else, missing or unseen, goes right);
  ``left``/``right`` are indices of later nodes. A leaf is ``{"cell": i}``.
* ``cells``: one representative tuple per cell (in ``columns`` order; ``null`` =
  missing).

:func:`check_partition_step` refuses a malformed tree (a node reached twice or never,
a cell not reached exactly once, a representative outside its cell: it would invent a
value).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import RecipeError

from ._table_schema import typed_like

#: Keys of a partition step.
PARTITION_KEYS = frozenset({"method", "columns", "k", "min_class_rows", "diversity",
                            "published_types", "nodes", "cells"})
_NUMBER_TYPES = ("integer", "float")


def _finite(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _count(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_node(where: str, node: Any, i: int, n_nodes: int, kinds: Mapping[str, str]
                ) -> None:
    if not isinstance(node, Mapping):
        raise RecipeError(f"{where}: node #{i} must be an object.")
    if set(node) == {"cell"}:
        if not _count(node["cell"]) or node["cell"] < 0:
            raise RecipeError(f"{where}: leaf #{i} needs a cell index >= 0.")
        return
    col = node.get("column")
    numeric = kinds.get(col) in _NUMBER_TYPES
    split = "cut" if numeric else "left_values"
    if col not in kinds or set(node) != {"column", split, "left", "right"}:
        raise RecipeError(f"{where}: node #{i} must be {{'cell'}} or {{'column', "
                          f"{split!r}, 'left', 'right'}} for a column of the step "
                          f"(got keys {sorted(node)} for column {col!r}).")
    if numeric and not _finite(node["cut"]):
        raise RecipeError(f"{where}: node #{i} needs a finite numeric cut.")
    if not numeric and not (isinstance(node["left_values"], list) and node["left_values"]
                            and all(isinstance(v, (str, bool)) or _finite(v)
                                    for v in node["left_values"])):
        raise RecipeError(f"{where}: node #{i} needs a non-empty list of left_values.")
    for side in ("left", "right"):
        j = node[side]
        if not _count(j) or not i < j < n_nodes:
            raise RecipeError(f"{where}: node #{i}'s {side} child must be the index of a "
                              f"later node, got {j!r}.")


def _check_rep(where: str, rep: Any, kind: str, col: str, path: list) -> None:
    """``rep`` of ``col`` lies in the cell that ``path`` ((node, went_left) pairs) bounds."""
    if rep is not None and (not _finite(rep) if kind in _NUMBER_TYPES else
                            not (isinstance(rep, (str, bool)) or _finite(rep))):
        raise RecipeError(f"{where}: representative of {col!r} must be a "
                          f"{'finite number' if kind in _NUMBER_TYPES else 'scalar'} or "
                          f"null, got {rep!r}.")
    for node, left in path:
        if node["column"] != col:
            continue
        if kind in _NUMBER_TYPES:
            inside = (rep is not None and rep < node["cut"]) if left else \
                (rep is None or rep >= node["cut"])
        else:
            inside = (rep in node["left_values"]) if left else \
                (rep not in node["left_values"])
        if not inside:
            raise RecipeError(f"{where}: the representative {rep!r} of {col!r} lies "
                              "outside its cell (it would invent a value).")


def check_partition_step(where: str, s: Mapping[str, Any]) -> None:
    """Refuse a malformed ``partition`` step (:class:`~astrid_airflow.RecipeError`)."""
    cols, types = s["columns"], s["published_types"]
    if len(cols) < 2 or len(set(cols)) != len(cols):
        raise RecipeError(f"{where} (partition): needs at least two distinct columns, got "
                          f"{cols!r}.")
    k, m = s["k"], s["min_class_rows"]
    if not _count(k) or k < 1 or not _count(m) or m < k:
        raise RecipeError(f"{where} (partition): k must be an integer >= 1 and "
                          f"min_class_rows an integer >= k, got {k!r}, {m!r}.")
    if s["diversity"] != "distinct-2":
        raise RecipeError(f"{where} (partition): diversity must be 'distinct-2', got "
                          f"{s['diversity']!r}.")
    if not isinstance(types, list) or len(types) != len(cols) or any(
            t not in ("integer", "float", "string", "category", "boolean") for t in types):
        raise RecipeError(f"{where} (partition): published_types must give one known "
                          "type per column.")
    kinds = dict(zip(cols, types))
    nodes, cells = s["nodes"], s["cells"]
    if not isinstance(nodes, list) or not nodes or not isinstance(cells, list) or not cells:
        raise RecipeError(f"{where} (partition): needs non-empty 'nodes' and 'cells' lists.")
    for i, node in enumerate(nodes):
        _check_node(f"{where} (partition)", node, i, len(nodes), kinds)
    for c, cell in enumerate(cells):
        if not isinstance(cell, list) or len(cell) != len(cols):
            raise RecipeError(f"{where} (partition): cell #{c} must list one value per "
                              "column.")
    reached = [0] * len(nodes)
    seen_cells = [0] * len(cells)
    stack: list[tuple[int, list]] = [(0, [])]
    reached[0] = 1
    while stack:
        i, path = stack.pop()
        node = nodes[i]
        if "cell" in node:
            c = node["cell"]
            if c >= len(cells):
                raise RecipeError(f"{where} (partition): leaf #{i} names cell {c}, but "
                                  f"there are {len(cells)}.")
            seen_cells[c] += 1
            for col, rep in zip(cols, cells[c]):
                _check_rep(f"{where} (partition, cell #{c})", rep, kinds[col], col, path)
            continue
        for side, left in (("left", True), ("right", False)):
            reached[node[side]] += 1
            stack.append((node[side], [*path, (node, left)]))
    if any(r != 1 for r in reached) or any(c != 1 for c in seen_cells):
        raise RecipeError(f"{where} (partition): not a tree: every node and every cell "
                          "must be reached exactly once from the root.")


def partition_cells(frame: pd.DataFrame, s: Mapping[str, Any]) -> np.ndarray:
    """The cell index of every row of ``frame`` (the step's columns), row by row."""
    n = len(frame)
    cell = np.full(n, -1, dtype=np.int64)
    nodes = s["nodes"]
    kinds = dict(zip(s["columns"], s["published_types"]))
    values: dict[str, Any] = {}

    def column(c: str) -> Any:
        if c not in values:
            values[c] = pd.to_numeric(frame[c], errors="coerce").to_numpy(
                dtype=float, na_value=np.nan) if kinds[c] in _NUMBER_TYPES else \
                frame[c].astype(object).reset_index(drop=True)
        return values[c]

    stack = [(0, np.arange(n))]
    while stack:
        i, rows = stack.pop()
        node = nodes[i]
        if "cell" in node:
            cell[rows] = node["cell"]
            continue
        if rows.size == 0:
            stack.extend([(node["left"], rows), (node["right"], rows)])
            continue
        x = column(node["column"])
        if kinds[node["column"]] in _NUMBER_TYPES:
            left = x[rows] < node["cut"]  # NaN compares False: missing goes right
        else:
            v = x.iloc[rows]
            left = (v.isin(node["left_values"]) & v.notna()).to_numpy(dtype=bool)
        stack.extend([(node["left"], rows[left]), (node["right"], rows[~left])])
    return cell


def apply_partition(table: pd.DataFrame, s: Mapping[str, Any]) -> dict[str, pd.Series]:
    """Each row's group tuple replaced by its cell's representative tuple."""
    cols = list(s["columns"])
    cell = partition_cells(table[cols], s)
    reps = s["cells"]
    out: dict[str, pd.Series] = {}
    for j, (c, kind) in enumerate(zip(cols, s["published_types"])):
        like = table[c]
        if kind in _NUMBER_TYPES:
            col = np.array([np.nan if r[j] is None else float(r[j]) for r in reps])
            out[c] = typed_like(col[cell], like)
            continue
        col_obj = np.empty(len(reps), dtype=object)
        col_obj[:] = [r[j] for r in reps]
        series = pd.Series(col_obj[cell], index=like.index, name=c)
        try:
            out[c] = series.astype(like.dtype)
        except (TypeError, ValueError):  # e.g. a missing representative in a bool column
            out[c] = series
    return out
