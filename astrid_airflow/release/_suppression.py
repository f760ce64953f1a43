"""Local suppression: every published group tuple is k-anonymous with its class and
distinct 2-diverse, on every batch, by construction.

The release recipe's bins and category merges are fitted on the reference table; a new
batch can still hold a rare combination of two columns inside one group (one person's
marital status next to their relationship), or a value shared by fewer than ``k`` rows
of a class. GoldenEye publishes every group's tuple next to its true class, so such a
row would give its class away. Local suppression (Hundepool et al., *Statistical
Disclosure Control*, 2012, Sec. 3.4; sdcMicro's ``localSuppression``, ARX's suppression
limit) publishes that group's values of that row as missing instead.

The rule, applied per group of the grouping after the recipe, on the batch's own counts
(like MDAV, it depends on the batch): a row's group tuple is *kept* when

* its (tuple, class) equivalence class holds at least ``k`` people, and
* the tuple has at least two classes holding ``k`` people or more;

where exact copies of one source row (equal in every column: :func:`repeated_rows`)
are one person, so k copies of a target's row are not k people (the shuffle, its Spark
path and the gate pass them; the release choice's resampled batches count rows);

every other row has the group's values published as missing. Under a declared
:class:`~astrid_airflow.release.AttackerModel` the "tuple" is the group's
quasi-identifier projection (what an attacker may know), and a projection must also
show at least ``SENSITIVE_DIVERSITY`` distinct values of each declared sensitive column
of the group, else all its rows are suppressed; with none declared the projection is the
whole tuple and nothing changes. One pass suffices: the
kept rows of a tuple are exactly the classes of ``>= k`` rows, of which there are two or
more, so after suppression every published tuple satisfies both conditions (no second
round). A row whose tuple is already missing in every column publishes nothing of that
group and is not counted as suppressed.

:func:`keep_rows` is the one statement of the rule and :func:`null_rows` the one way a
row's values are removed; the local shuffle counts with NumPy (:func:`suppress_table`),
the Spark path with window counts (``scale/_spark.py``), and both call these two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import ParameterError, SuppressionBudgetError

from ._attacker_model import SENSITIVE_DIVERSITY

#: The policy's default suppression budget: the share of a batch's rows whose group
#: values may be published as missing, per group (``GatePolicy.max_suppressed_share``).
MAX_SUPPRESSED_SHARE = 0.05


def suppression_budget(value: float | None, artefact: Any = None) -> float:
    """The per-group suppression budget: ``value``; for None, the one of the policy the
    artefact's release was chosen for (``artefact.release["policy"]``), else the
    default."""
    if value is None:
        policy = (getattr(artefact, "release", None) or {}).get("policy") or {}
        value = policy.get("max_suppressed_share", MAX_SUPPRESSED_SHARE)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 <= float(value) <= 1.0:
        raise ParameterError(f"Invalid max_suppressed_share: {value!r}. Must be a number "
                             "in [0, 1].")
    return float(value)


def keep_rows(size: np.ndarray, n_big: np.ndarray, k: int) -> np.ndarray:
    """Rows whose group tuple is published: ``size`` rows share the row's (tuple, class)
    and ``n_big`` classes of its tuple hold at least ``k`` rows each.

    >>> keep_rows(np.array([5, 2, 5, 9]), np.array([2, 2, 1, 2]), 5).tolist()
    [True, False, False, True]
    """
    return (np.asarray(size) >= k) & (np.asarray(n_big) >= 2)


def tuple_counts(tuples: np.ndarray, classes: np.ndarray, k: int,
                 weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, ``(size, n_big)`` of :func:`keep_rows` from integer tuple and class codes;
    ``weights`` (integers): what each row counts for (default 1: a row is a person; 0
    for a repeated row, :func:`repeated_rows`; -1 for a copy to take away)."""
    n_cls = int(classes.max()) + 1 if classes.size else 1
    key = tuples.astype(np.int64) * n_cls + classes.astype(np.int64)
    uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    if weights is not None:
        counts = np.rint(np.bincount(inv, weights=weights, minlength=uniq.size)
                         ).astype(np.int64)
    size = counts[inv]
    big_tuple = uniq[counts >= k] // n_cls
    n_tuples = int(tuples.max()) + 1 if tuples.size else 1
    n_big = np.bincount(big_tuple, minlength=n_tuples)[tuples]
    return size, n_big


def repeated_rows(table: Any) -> np.ndarray:
    """Per row of a batch (pandas or Arrow), True where it repeats an earlier row in
    every column: exact copies of one record are one person, so they count once for
    k-anonymity (a stager's k copies of a target's row are not k people). A 64-bit row
    hash decides (:func:`~._hashing.row_hashes`); a collision would only count two
    people as one, which suppresses more, never less."""
    from ._hashing import row_hashes

    columns = list(table.columns) if isinstance(table, pd.DataFrame) else \
        list(table.schema.names)
    hashes = row_hashes(table, columns)
    out = np.ones(hashes.shape[0], dtype=bool)
    out[np.unique(hashes, return_index=True)[1]] = False
    return out


def _person_weights(repeated: np.ndarray | None) -> np.ndarray | None:
    return None if repeated is None or not repeated.any() else \
        (~np.asarray(repeated, dtype=bool)).astype(np.int64)


# ------------------------------------------------------------------ codes of a group

def combine_codes(codes: Iterable[np.ndarray], n: int) -> np.ndarray:
    """One integer code per distinct tuple of per-column codes (missing = a value);
    ``codes`` may be a generator (each array is folded in, then dropped)."""
    out = np.zeros(n, dtype=np.int64)
    for c in codes:
        width = int(c.max()) + 1 if c.size else 1
        out = pd.factorize(out * width + c.astype(np.int64))[0].astype(np.int64)
    return out


def _arrow_codes(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """(codes, missing) of an Arrow column; NaN is missing, as every reader reads it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    missing = column.is_null(nan_is_null=True) if pa.types.is_floating(column.type) \
        else column.is_null()
    missing = missing.to_numpy(zero_copy_only=False)
    if pa.types.is_floating(column.type):  # every NaN is the one missing value
        column = pc.if_else(pa.array(missing), pa.scalar(None, column.type), column)
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), missing


def _pandas_codes(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(codes, missing) of a pandas column, every missing value one code; factorized
    in its own dtype (no object copy: the choice encodes columns thousands of times)."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    missing = codes < 0
    return (np.where(missing, len(uniques), codes) if missing.any() else codes), missing


def _column_codes(table: Any, columns: Sequence[str]) -> dict[str, tuple]:
    """``(codes, missing)`` of each of ``columns`` of a pandas or Arrow table."""
    is_arrow = not isinstance(table, pd.DataFrame)
    return {c: _arrow_codes(table.column(c)) if is_arrow else _pandas_codes(table[c])
            for c in columns}


def group_codes(table: Any, columns: Sequence[str], _parts: dict | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(tuple codes, all missing)`` of a group's columns of a pandas or Arrow table
    (``_parts``: their :func:`_column_codes`, computed once by the caller)."""
    n = len(table) if isinstance(table, pd.DataFrame) else table.num_rows
    parts = [(_parts if _parts is not None else _column_codes(table, columns))[c]
             for c in columns]
    all_missing = np.logical_and.reduce([m for _, m in parts]) if parts else \
        np.ones(n, dtype=bool)
    return combine_codes([c for c, _ in parts], n), all_missing


def class_codes(table: Any, target: str) -> np.ndarray:
    values = table[target] if isinstance(table, pd.DataFrame) else \
        table.column(target).to_pandas()
    return pd.factorize(values.astype(object), use_na_sentinel=False)[0].astype(np.int64)


def projection_codes(table: Any, columns: Sequence[str], model: Any = None
                     ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """``(key codes, silent, sensitive codes)`` of a group under ``model``.

    The key is the group's quasi-identifier projection (the whole tuple with no model);
    ``silent`` marks rows missing in *every* column of the group (they publish nothing
    of it); one code array per declared sensitive column of the group.
    """
    key = list(columns) if model is None else model.key_columns(columns)
    sensitive = [] if model is None else model.sensitive_columns(columns)
    parts = _column_codes(table, columns)  # each column encoded once
    tuples, silent = group_codes(table, columns, parts)
    if key != list(columns):
        tuples = group_codes(table, key, parts)[0] if key else \
            np.zeros(len(silent), dtype=np.int64)
    return tuples, silent, [parts[c][0] for c in sensitive]


def diverse_rows(tuples: np.ndarray, shown: np.ndarray, sensitive: Sequence[np.ndarray],
                 diversity: int) -> np.ndarray:
    """Rows whose key tuple shows at least ``diversity`` distinct values of every
    sensitive code array among the ``shown`` rows (all rows True without sensitive).

    >>> t, s = np.array([0, 0, 1, 1]), np.array([3, 4, 3, 3])
    >>> diverse_rows(t, np.ones(4, bool), [s], 2).tolist()
    [True, True, False, False]
    """
    ok = np.ones(tuples.shape[0], dtype=bool)
    n_tuples = int(tuples.max()) + 1 if tuples.size else 1
    for codes in sensitive:
        width = int(codes.max()) + 1 if codes.size else 1
        pairs = np.unique(tuples[shown].astype(np.int64) * width + codes[shown])
        distinct = np.bincount(pairs // width, minlength=n_tuples)
        ok &= distinct[tuples] >= diversity
    return ok


def group_keep(table: Any, columns: Sequence[str], y: np.ndarray, k: int, model: Any = None,
               repeated: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(keep, silent)``: the rows whose values of the group are published, by the
    module's rule under ``model``, and the rows that publish nothing of it anyway
    (``repeated``: the rows that repeat an earlier one, counted as no further person)."""
    tuples, silent, sensitive = projection_codes(table, columns, model)
    keep = keep_rows(*tuple_counts(tuples, y, k, _person_weights(repeated)), k)
    if sensitive:
        keep &= diverse_rows(tuples, keep | silent, sensitive, SENSITIVE_DIVERSITY)
    return keep | silent, silent


# ------------------------------------------------------------------------ the nulling

def null_rows(table: Any, columns: Sequence[str], keep: np.ndarray) -> Any:
    """``table`` with ``columns`` missing on the rows where ``keep`` is False.

    Arrow tables and record batches keep their types (a dictionary column its
    dictionary); a pandas column becomes what an Arrow column with nulls reads as
    (integers as floats, booleans as objects), so a suppressed table and the file written
    from it read back alike.
    """
    if bool(np.all(keep)):
        return table
    if isinstance(table, pd.DataFrame):
        out = table.copy(deep=False)
        for c in columns:
            s = out[c]
            if pd.api.types.is_integer_dtype(s.dtype) and not isinstance(
                    s.dtype, pd.api.extensions.ExtensionDtype):
                s = s.astype(float)
            elif pd.api.types.is_bool_dtype(s.dtype):
                s = s.astype(object)
            out[c] = s.where(keep, None) if s.dtype == object else s.where(keep)
        return out
    import pyarrow as pa
    import pyarrow.compute as pc

    mask = pa.array(np.asarray(keep, dtype=bool))
    for c in columns:
        i = table.schema.get_field_index(c)
        col = table.column(i)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if pa.types.is_dictionary(col.type):
            # rebuilt from the values left (as apply_recipe does): a dictionary entry no
            # row uses would reach the file (and its statistics)
            plain = col.cast(col.type.value_type)
            new = pc.if_else(mask, plain, pa.scalar(None, plain.type)).cast(col.type)
        else:
            new = pc.if_else(mask, col, pa.scalar(None, col.type))
        table = table.set_column(i, table.schema.field(i), new)
    return table


# ----------------------------------------------------------------------- the report

@dataclass(frozen=True)
class Suppression:
    """What local suppression removed from one batch, per group.

    ``groups`` lists ``{"columns", "suppressed_rows", "suppressed_share"}`` in the
    grouping's order, with a recipe's fallbacks also ``"recipe_rung"``: which of the
    recipe's rungs the group was published with (0: the chosen recipe; ``i``: its
    ``i``-th coarser fallback, ``ReleaseRecipe.rungs``); ``rows`` is the batch's row
    count, ``k`` the recipe's k and ``rungs`` how many the recipe has.
    """

    k: int
    rows: int
    groups: tuple = ()
    rungs: int = 1

    @property
    def recipe_rungs(self) -> list[int]:
        """Per group, the recipe rung it was published with."""
        return [int(g.get("recipe_rung", 0)) for g in self.groups]

    @property
    def suppressed_rows(self) -> int:
        """Rows with at least one group suppressed."""
        return int(max((g["suppressed_rows"] for g in self.groups), default=0))

    @property
    def worst(self) -> dict[str, Any] | None:
        return max(self.groups, key=lambda g: g["suppressed_share"], default=None)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "rows": self.rows,
                "max_suppressed_share": self.max_share,
                "groups": [dict(g) for g in self.groups],
                # the coarsest rung any group was published with (0: the chosen recipe)
                "recipe_rung": max(self.recipe_rungs, default=0)}

    @property
    def max_share(self) -> float:
        """The worst group's suppressed share (0 without groups)."""
        worst = self.worst
        return 0.0 if worst is None else float(worst["suppressed_share"])

    def check_budget(self, max_share: float) -> None:
        """Refuse a batch that needs more suppression than ``max_share`` in any group."""
        over = [g for g in self.groups if g["suppressed_share"] > max_share + 1e-12]
        if over:
            g = max(over, key=lambda g: g["suppressed_share"])
            raise SuppressionBudgetError(
                f"This batch needs {g['suppressed_share']:.4f} of its rows suppressed in "
                f"group {g['columns']} ({g['suppressed_rows']} of {self.rows}), more than "
                f"the policy's max_suppressed_share {max_share}: rows of that group are too "
                f"rare in this batch for k={self.k}{self._rung_note()}. Nothing is "
                "published; coarsen the recipe (learn again on more data) or raise the "
                "budget knowingly.")

    def _rung_note(self) -> str:
        if self.rungs < 2:
            return ""
        return (f", with the least suppressed of the recipe and its {self.rungs - 1} "
                "coarser fallback(s)")


def pick_rungs(tried: Sequence[Suppression], keeps: Callable[[float], bool]) -> list[int]:
    """Per group, the first of the ``tried`` rungs (finest first) whose suppressed share
    ``keeps`` accepts (``ReleaseRecipe.keeps_fallback_share``), else the least
    suppressed (the finest among equals).

    >>> s = [Suppression(5, 10, ({"suppressed_share": x},)) for x in (0.3, 0.2, 0.1)]
    >>> pick_rungs(s, lambda x: x <= 0.25), pick_rungs(s, lambda x: x <= 0.05)
    ([1], [2])
    >>> pick_rungs(s[:1], lambda x: x <= 0.05)
    [0]
    """
    picks = []
    for g in range(len(tried[0].groups)):
        shares = [t.groups[g]["suppressed_share"] for t in tried]
        kept = [i for i, x in enumerate(shares) if keeps(x)]
        picks.append(kept[0] if kept else min(range(len(shares)), key=shares.__getitem__))
    return picks


def climb_rungs(recipe: Any, suppressed: Callable[[int, Any], Suppression]
                ) -> tuple[list[int], list[Suppression]]:
    """The recipe's rungs tried finest first (``suppressed(i, rung)``: what rung ``i``
    suppresses on the batch) while a group needs a coarser one; returns the rung
    picked per group (:func:`pick_rungs`) and the Suppression of every rung tried."""
    tried: list[Suppression] = []
    for i, rung in enumerate(recipe.rungs):
        tried.append(suppressed(i, rung))
        picks = pick_rungs(tried, recipe.keeps_fallback_share)
        if all(recipe.keeps_fallback_share(tried[p].groups[g]["suppressed_share"])
               for g, p in enumerate(picks)):
            break
    return picks, tried


def mixed_suppression(tried: Sequence[Suppression], picks: Sequence[int], rungs: int
                      ) -> Suppression:
    """What a batch whose group ``g`` is published with rung ``picks[g]`` of a recipe of
    ``rungs`` rungs suppresses (each group's figures from its rung, with its
    ``recipe_rung``); with one rung, the rung's own."""
    if rungs == 1:
        return tried[0]
    groups = tuple({**tried[p].groups[g], "recipe_rung": int(p)} for g, p in enumerate(picks))
    return dataclasses.replace(tried[0], groups=groups, rungs=rungs)


def suppress_counted(batch: Any, groups: Sequence[Sequence[str]], k: int,
                     counts: Sequence[tuple[str, ...]]) -> tuple[Any, list[int]]:
    """Local suppression of an Arrow batch whose per-row counts were computed elsewhere.

    ``counts[g]`` names the batch's columns holding group ``g``'s ``size`` and ``n_big``
    and, optionally, the fewest distinct values of a declared sensitive column its
    projection shows (the Spark path counts with windows over the whole DataFrame).
    Returns the batch without those columns, suppressed by :func:`keep_rows` /
    :func:`null_rows`, and the rows suppressed per group.
    """
    dropped = []
    for cols, (size_col, big_col, *diverse) in zip(groups, counts):
        _, all_missing = group_codes(batch, cols)
        keep = keep_rows(batch.column(size_col).to_numpy(zero_copy_only=False),
                         batch.column(big_col).to_numpy(zero_copy_only=False), k)
        for col in diverse:
            keep &= batch.column(col).to_numpy(zero_copy_only=False) >= SENSITIVE_DIVERSITY
        keep |= all_missing
        dropped.append(int(keep.size - np.count_nonzero(keep)))
        batch = null_rows(batch, cols, keep)
    helper = {c for pair in counts for c in pair}
    return batch.select([c for c in batch.schema.names if c not in helper]), dropped


def suppress_table(table: Any, groups: Sequence[Sequence[str]], target: str, k: int,
                   model: Any = None, repeated: np.ndarray | None = None,
                   exempt: Callable[[Sequence[str]], bool] | None = None
                   ) -> tuple[Any, Suppression]:
    """Apply local suppression to a remedied batch (pandas or Arrow) under the attacker
    ``model`` (None: every column a quasi-identifier); return the table and what was
    suppressed. Without anything to suppress, ``table`` itself. ``repeated``
    (:func:`repeated_rows` of the batch before the recipe): copies of a row count as
    one person. ``exempt(columns)``: a group that publishes no real value (a
    synthesised one, ``ReleaseRecipe.is_synthesised``) keeps its rows, and its entry
    says it suppressed none (the entries are per group, in order)."""
    y = class_codes(table, target)
    n = int(y.shape[0])
    report = []
    for cols in groups:
        if exempt is not None and exempt(cols):
            report.append({"columns": list(cols), "suppressed_rows": 0,
                           "suppressed_share": 0.0})
            continue
        keep, _ = group_keep(table, cols, y, k, model, repeated)
        dropped = int(n - np.count_nonzero(keep))
        table = null_rows(table, cols, keep)
        report.append({"columns": list(cols), "suppressed_rows": dropped,
                       "suppressed_share": dropped / n if n else 0.0})
    return table, Suppression(k=int(k), rows=n, groups=tuple(report))


def resampled_suppressed_shares(table: Any, groups: Sequence[Sequence[str]], target: str,
                                k: int, multiplicities: Iterable[np.ndarray],
                                model: Any = None) -> list[float]:
    """The worst group's suppressed share of each batch drawn from ``table``'s rows.

    ``table`` is in the release's domain before local suppression (the recipe applied
    row by row); each batch is given by its row multiplicities (``m[i]`` copies of row
    ``i``: a bootstrap resample). The figure is what :func:`suppress_table` finds on the
    batch built from those rows, counted from the (tuple, class) cells instead: the
    rule depends on the batch's counts only, so a batch costs one weighted count per
    group, not the recipe and the suppression of a new table. Not for a recipe whose
    values depend on the batch (MDAV). Under an attacker ``model`` the cells are those
    of the quasi-identifier projections; a group holding a declared sensitive column is
    suppressed on each batch's rows themselves (its diversity is not a cell count).
    """
    y = class_codes(table, target)
    if model is not None and any(model.sensitive_columns(c) for c in groups):
        return [_materialised_worst(table, groups, y, k, model, m) for m in multiplicities]
    n_cls = int(y.max()) + 1 if y.size else 1
    cells = []
    for cols in groups:
        tuples, all_missing, _ = projection_codes(table, cols, model)
        uniq, cell = np.unique(tuples * n_cls + y, return_inverse=True)
        _, cell_tuple = np.unique(uniq // n_cls, return_inverse=True)
        # rows missing in every column of the group publish nothing (never suppressed)
        # but count in their projection's cell, which other rows may share
        cells.append((cell.ravel(), cell_tuple.ravel(), all_missing, uniq.size))
    out = []
    for m in multiplicities:
        m = np.asarray(m, dtype=np.float64)
        rows, worst = float(m.sum()), 0.0
        for cell, cell_tuple, all_missing, n_cells in cells:
            size = np.bincount(cell, weights=m, minlength=n_cells)
            silent = np.bincount(cell, weights=m * all_missing, minlength=n_cells)
            n_big = np.bincount(cell_tuple, weights=size >= k)[cell_tuple]
            dropped = (size - silent)[~keep_rows(size, n_big, k)].sum()
            worst = max(worst, float(dropped) / rows if rows else 0.0)
        out.append(worst)
    return out


def _materialised_worst(table: Any, groups: Sequence[Sequence[str]], y: np.ndarray, k: int,
                        model: Any, m: np.ndarray) -> float:
    """The worst group's suppressed share of the batch of ``m[i]`` copies of row ``i``."""
    rows = np.repeat(np.arange(len(y)), np.asarray(m, dtype=np.int64))
    batch = table.iloc[rows] if isinstance(table, pd.DataFrame) else table.take(rows)
    worst = 0.0
    for cols in groups:
        keep, _ = group_keep(batch, cols, y[rows], k, model)
        worst = max(worst, float(1.0 - keep.mean()) if rows.size else 0.0)
    return worst


def suppressed_share(frame: pd.DataFrame, labels: Any, k: int, model: Any = None) -> float:
    """Share of ``frame``'s rows (one group's columns) that local suppression would
    remove, with class ``labels``: what the recipe's fit keeps within the budget."""
    if len(frame) == 0:
        return 0.0
    y = pd.factorize(pd.Series(np.asarray(labels), dtype=object), use_na_sentinel=False)[0]
    keep, _ = group_keep(frame, list(frame.columns), y.astype(np.int64), k, model)
    return float(1.0 - keep.mean())


def published_exposure(table: Any, groups: Sequence[Sequence[str]], target: str, k: int,
                       model: Any = None, copies: Any = None) -> list[dict[str, Any]]:
    """Per group, the rows a release exposes among its published tuples.

    ``share_below_k`` and ``class_disclosure_share`` count rows whose group tuple is
    published (not missing in every column) and sits in a (tuple, class) class below
    ``k`` or in a tuple of one class, over all rows; ``exposed_rows`` those failing
    :func:`keep_rows`; ``suppressed_rows``/``suppressed_share`` the rows published
    without the group's values; ``k_min`` the smallest published equivalence class.
    Under a declared attacker ``model`` the tuples are the quasi-identifier projections,
    and ``sensitive_disclosure_share`` counts the published rows whose projection shows
    fewer than ``SENSITIVE_DIVERSITY`` values of a declared sensitive column (they are
    exposed, and counted in ``class_disclosure_share``: the class is the sensitive
    column every model has); that key is there only when the group holds one.

    ``copies``: the source's repeated rows (:func:`repeated_rows`) in the release's
    domain, a table of ``table``'s columns. Each is one more row of a person counted
    already, so it is taken off its (tuple, class) class: the counts are of people.
    """
    n = len(table) if isinstance(table, pd.DataFrame) else table.num_rows
    weights = None
    if copies is not None and len(copies):
        needed = [target, *dict.fromkeys(c for g in groups for c in g if c != target)]
        frame = table if isinstance(table, pd.DataFrame) else table.to_pandas()
        table = pd.concat([frame[needed], copies[needed]], ignore_index=True)
        weights = np.r_[np.ones(n, dtype=np.int64), -np.ones(len(copies), dtype=np.int64)]
    y = class_codes(table, target)
    out = []
    for cols in groups:
        tuples, all_missing, sensitive = projection_codes(table, cols, model)
        size, n_big = tuple_counts(tuples, y, k, weights)
        _, n_cls = tuple_counts(tuples, y, 1, weights)  # classes of the tuple, any size
        tuples, all_missing = tuples[:n], all_missing[:n]
        size, n_big, n_cls = size[:n], n_big[:n], n_cls[:n]
        sensitive = [s[:n] for s in sensitive]
        shown = ~all_missing
        below = shown & (size < k)
        one_class = shown & (n_cls < 2)
        exposed = shown & ~keep_rows(size, n_big, k)
        extra = {}
        if sensitive:
            undiverse = shown & ~diverse_rows(tuples, np.ones(n, dtype=bool), sensitive,
                                              SENSITIVE_DIVERSITY)
            exposed |= undiverse
            one_class |= undiverse  # a sensitive value given away, as the class would be
            extra["sensitive_disclosure_share"] = float(undiverse.sum() / n) if n else 0.0
        out.append({"columns": list(cols), "k": int(k),
                    "k_min": int(size[shown].min()) if shown.any() else 0,
                    "share_below_k": float(below.sum() / n) if n else 0.0,
                    "class_disclosure_share": float(one_class.sum() / n) if n else 0.0,
                    "exposed_rows": int(exposed.sum()),
                    "suppressed_rows": int(all_missing.sum()),
                    "suppressed_share": float(all_missing.sum() / n) if n else 0.0,
                    "n_rows": n, **extra})
    return out
