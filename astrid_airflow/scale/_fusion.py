"""Data fusion by class (ASTRID paper, Sec. 6.3).

If the class-conditional distribution factorises over the groups of a grouping S
(paper, Eq. 1: p(x | c) = prod_j p(x_{S_j} | c)), a training row can be assembled from
pieces answered by different respondents, or kept in different systems, as long as the
pieces have the same class. So a survey can be split into one questionnaire per group;
each answer is tagged with its class; the answers are fused afterwards by pairing
rows at random *within* each class. A classifier trained on the fused rows then does as
well as one trained on fully collected rows; the cost is what the paper's table shows
for the chosen k: a0 (all attributes together) minus acc_ave at k (GoldenEye
permutations of S_k, the same distribution that fusion draws from).

:func:`fuse_parts` fuses one table per group; :func:`collection_plan` (``_plan.py``)
reads which attributes must be collected together from an artefact. The size rule, the
sampling and the seeds are documented in ``docs/fusion.md``.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError, SchemaMismatchError, short_list
from astrid_airflow._validation import check_positive_int, check_seed_sequence
from astrid_airflow.engine import Grouping
from astrid_airflow.io import native
from astrid_airflow.release import column_kind, compatible_kind

#: ``n_rows`` may be at most this many times the rows of the largest part: a bootstrap
#: well beyond the data collected, yet a mistyped ``--rows`` cannot write gigabytes.
MAX_ROWS_FACTOR = 10


# --------------------------------------------------------------------------- results

@dataclass(frozen=True)
class FusionReport:
    """What :func:`fuse_parts` did: the fused table's rows per class, the sizing rule,
    and per group the part it was drawn from (``to_dict()`` is JSON-able).

    Attributes
    ----------
    rows : int
        Rows of the fused table.
    rows_per_class : dict
        Class label -> fused rows of that class.
    rule : str
        ``"largest-without-replacement"`` (default size) or ``"n_rows"``.
    parts : list of dict
        One entry per group, in the grouping's order: ``group`` (1-based number),
        ``columns``, ``source`` (file name or ``None``), ``rows`` (rows of the part),
        ``rows_per_class`` (rows of the part per class), ``replace`` (class label ->
        whether that class was sampled with replacement).
    replace : bool or None
        The ``replace`` argument (None: automatic).
    random_state : int or None
        The seed, when it was an int.
    notes : list of str
        Findings that did not stop the fusion (unseen class labels or categories).
    """

    rows: int
    rows_per_class: dict
    rule: str
    parts: list
    replace: bool | None
    random_state: int | None
    notes: list = field(default_factory=list)

    @property
    def any_replacement(self) -> bool:
        """True if some part had some class sampled with replacement."""
        return any(any(p["replace"].values()) for p in self.parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (class labels become strings as keys)."""
        def keyed(d: Mapping) -> dict[str, Any]:
            return {str(k): v for k, v in d.items()}

        return {
            "rows": self.rows, "rows_per_class": keyed(self.rows_per_class),
            "rule": self.rule, "replace": self.replace,
            "with_replacement": self.any_replacement, "random_state": self.random_state,
            "parts": [{**p, "rows_per_class": keyed(p["rows_per_class"]),
                       "replace": keyed(p["replace"])} for p in self.parts],
            "notes": list(self.notes),
        }


class FusionResult(NamedTuple):
    """``(table, report)`` returned by :func:`fuse_parts`."""

    table: pd.DataFrame
    report: FusionReport


# --------------------------------------------------------------------- part checking

@dataclass
class _Part:
    name: str          # how messages refer to it: "part 2 ('a.csv')"
    source: str | None
    table: pd.DataFrame
    group: int = -1    # 0-based index into grouping.groups once matched


def _describe(i: int, source: str | None) -> str:
    return f"part {i + 1}" + (f" ({source!r})" if source else "")


def _as_parts(parts: Any, grouping: Grouping) -> tuple[list[_Part], dict[int, int]]:
    """Parts as a list plus the groups fixed by mapping keys (part index -> group)."""
    from astrid_airflow.io import read_table

    if isinstance(parts, (pd.DataFrame, str, os.PathLike)):
        raise ParameterError("parts must be a sequence of tables (one per group) or a "
                             "mapping {group number: table}, not a single table.")
    fixed: dict[int, int] = {}
    if isinstance(parts, Mapping):
        items = list(parts.items())
        for i, (key, _) in enumerate(items):
            if isinstance(key, bool) or not isinstance(key, numbers.Integral) \
                    or not 1 <= key <= grouping.k:
                raise ParameterError(f"Invalid group number {key!r}: the grouping has "
                                     f"groups 1..{grouping.k}.")
            fixed[i] = int(key) - 1
        values = [v for _, v in items]
    elif isinstance(parts, Sequence) or hasattr(parts, "__iter__"):
        values = list(parts)
    else:
        raise ParameterError(f"parts must be a sequence or mapping of tables, got "
                             f"{type(parts).__name__}.")
    if not values:
        raise ParameterError(f"No parts given; the grouping has {grouping.k} group(s), "
                             "one part is needed for each.")
    out = []
    for i, value in enumerate(values):
        source = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
        if source is None and not isinstance(value, pd.DataFrame):
            raise ParameterError(f"{_describe(i, None)} is a {type(value).__name__}; "
                                 "expected a DataFrame or a path to a table.")
        out.append(_Part(_describe(i, source), source, read_table(value)))
    return out, fixed


def _match_groups(parts: list[_Part], fixed: dict[int, int], grouping: Grouping,
                  target: str, schema_names: set[str]) -> None:
    """Assign each part its group (by columns unless fixed) or raise naming the problem."""
    group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
    for i, part in enumerate(parts):
        cols = [str(c) for c in part.table.columns]
        dup = sorted({c for c in cols if cols.count(c) > 1})
        if dup:
            raise DataError(f"{part.name} has duplicated column(s) {short_list(dup)}.")
        if target not in cols:
            raise DataError(f"{part.name} has no class column {target!r}: every part must "
                            "carry the class of each row.")
        attrs = [c for c in cols if c != target]
        unknown = [c for c in attrs if c not in schema_names]
        if unknown:
            raise SchemaMismatchError(f"{part.name} has column(s) {short_list(unknown)} "
                                      "that are not in the artefact's schema.")
        if not attrs:
            raise DataError(f"{part.name} has only the class column; it must hold the "
                            "columns of one group.")
        groups = sorted({group_of[c] for c in attrs})
        if i in fixed:
            g = fixed[i]
            foreign = [c for c in attrs if group_of[c] != g]
            if foreign:
                raise DataError(
                    f"{part.name} is given for group {g + 1} {list(grouping.groups[g])} but "
                    f"has column(s) {foreign} of another group ("
                    + ", ".join(f"{c!r} is in group {group_of[c] + 1}" for c in foreign) + ").")
        elif len(groups) > 1:
            raise DataError(
                f"{part.name} has columns of {len(groups)} groups: " + "; ".join(
                    f"group {g + 1} {[c for c in attrs if group_of[c] == g]}"
                    for g in groups)
                + ". Each part must hold the columns of exactly one group.")
        else:
            g = groups[0]
        missing = [c for c in grouping.groups[g] if c not in attrs]
        if missing:
            raise DataError(f"{part.name} (group {g + 1}) misses column(s) "
                            f"{short_list(missing)} of group {g + 1} {list(grouping.groups[g])}.")
        part.group = g
    by_group: dict[int, list[str]] = {}
    for part in parts:
        by_group.setdefault(part.group, []).append(part.name)
    twice = {g: names for g, names in by_group.items() if len(names) > 1}
    if twice:
        g, names = min(twice.items())
        raise DataError(f"Group {g + 1} {list(grouping.groups[g])} is given by several "
                        f"parts: {', '.join(names)}. Give one part per group.")
    absent = [g for g in range(grouping.k) if g not in by_group]
    if absent:
        raise DataError("No part for " + "; ".join(
            f"group {g + 1} {list(grouping.groups[g])}" for g in absent)
            + ". The parts must cover every group of the grouping.")
    parts.sort(key=lambda p: p.group)


def _check_kinds(part: _Part, artefact: Any) -> None:
    """Kinds of a part's columns against the artefact's schema (as ``check_table``)."""
    problems = []
    for c in part.table.columns:
        entry = artefact.column_schema(str(c))
        got = column_kind(part.table[c])
        if not compatible_kind(entry["kind"], got):
            problems.append(f"column {str(c)!r} should be {entry['kind']} ({entry['dtype']})"
                            f" but is {got} ({part.table[c].dtype})")
    if problems:
        raise SchemaMismatchError(f"{part.name} does not match the artefact's schema: "
                                  + "; ".join(problems) + ".")


def _labels(series: pd.Series) -> list:
    vals = series.dropna().unique()
    return [native(v) for v in vals]


def _check_classes(parts: list[_Part], target: str, known: Sequence) -> tuple[list, list[str]]:
    """The class labels shared by every part (sorted when possible), and notes."""
    per_part = []
    for part in parts:
        y = part.table[target]
        if len(y) == 0:
            raise DataError(f"{part.name} (group {part.group + 1}) has no rows.")
        if y.isna().any():
            raise DataError(f"{part.name} has {int(y.isna().sum())} missing value(s) in the "
                            f"class column {target!r}.")
        per_part.append(_labels(y))
    union: list = []
    for labels in per_part:
        union += [v for v in labels if v not in union]
    for part, labels in zip(parts, per_part):
        lacking = [v for v in union if v not in labels]
        if lacking:
            having = [p.name for p, ls in zip(parts, per_part) if lacking[0] in ls]
            raise DataError(
                f"{part.name} (group {part.group + 1}) has no rows of class(es) "
                f"{lacking[:10]} that {', '.join(having[:5])} ha{'s' if len(having) == 1 else 've'}"
                "; rows are fused within class, so every part needs every class.")
    try:
        union = sorted(union)
    except TypeError:
        pass
    notes = []
    unseen = [v for v in union if v not in set(known)]
    if unseen:
        notes.append(f"{len(unseen)} class label(s) not seen at learning time: "
                     f"{unseen[:10]!r}; they are fused within their own class.")
    return union, notes


def _category_notes(parts: list[_Part], artefact: Any) -> list[str]:
    notes = []
    for part in parts:
        for c in part.table.columns:
            entry = artefact.column_schema(str(c))
            if "categories" not in entry or c == artefact.target:
                continue
            vals = [v for v in _labels(part.table[c]) if v not in set(entry["categories"])]
            if vals:
                notes.append(f"{part.name}: column {str(c)!r} has {len(vals)} value(s) "
                             f"outside its recorded categories: {vals[:10]!r}.")
    return notes


# ---------------------------------------------------------------------------- sizes

def _apportion(total: int, weights: Sequence[int]) -> list[int]:
    """Split ``total`` in proportion to integer ``weights`` (largest remainders).

    Integer arithmetic only; ties go to the earlier class. No share exceeds the ceiling
    of its quota, and a share whose quota is an integer is exactly that integer.
    """
    s = sum(weights)
    floors = [total * w // s for w in weights]
    rema = [total * w % s for w in weights]
    left = total - sum(floors)
    for j in sorted(range(len(weights)), key=lambda j: -rema[j])[:left]:
        floors[j] += 1
    return floors


def fused_class_sizes(counts: Sequence[Sequence[int]], n_rows: int | None = None
                      ) -> list[int]:
    """Rows per class of a fused table.

    Parameters
    ----------
    counts : array-like of shape (n_parts, n_classes)
        Rows of each class in each part.
    n_rows : int or None
        Total size. None: the default rule.

    Returns
    -------
    list of int
        With ``S_c`` the rows of class c pooled over all parts (its share
        ``pi_c = S_c / sum S``) and ``m_c`` the fewest rows of class c in any part:

        * ``n_rows`` given: ``n_rows`` split by ``pi_c`` with largest remainders;
        * default: the largest total ``N`` whose split by ``pi_c`` needs no part to
          repeat a row, ``N = min_c floor(m_c / pi_c)``, split the same way (every
          class then gets at most ``m_c`` rows). When every part holds the same rows
          per class this is all of them.
    """
    counts = np.asarray(counts, dtype=np.int64)
    pooled = [int(v) for v in counts.sum(axis=0)]
    total = sum(pooled)
    if n_rows is None:
        fewest = counts.min(axis=0)
        n_rows = min(int(m) * total // s for m, s in zip(fewest, pooled))
    return _apportion(n_rows, pooled)


def _class_sizes(items: list[_Part], target: str, classes: list, n_rows: int | None,
                 replace: bool | None) -> tuple[list, list[list[int]], list[int]]:
    """Where each class's rows are in each part, their counts, and the fused rows per
    class; raises when ``n_rows`` or ``replace=False`` cannot be met."""
    # Positions of every class's rows in every part.
    where = []
    for part in items:
        y = part.table[target].to_numpy(dtype=object)
        where.append([np.flatnonzero(y == c) for c in classes])
    counts = [[len(ix) for ix in w] for w in where]
    largest = max(len(part.table) for part in items)
    if n_rows is not None and n_rows > MAX_ROWS_FACTOR * largest:
        # a typo (an extra digit or three) must not write gigabytes of resampled rows
        raise ParameterError(f"Invalid n_rows: {n_rows}. At most {MAX_ROWS_FACTOR} times "
                             f"the largest part's {largest} rows "
                             f"({MAX_ROWS_FACTOR * largest}) can be fused.")
    sizes = fused_class_sizes(counts, n_rows)
    empty = [c for c, n in zip(classes, sizes) if n == 0]
    if empty:
        raise ParameterError(f"n_rows={n_rows} leaves class(es) {empty[:10]} without rows; "
                             f"at least {len(classes)} rows are needed (one per class).")
    if replace is False:
        for part, cnt in zip(items, counts):
            short = [(c, have, need) for c, have, need in zip(classes, cnt, sizes)
                     if have < need]
            if short:
                c, have, need = short[0]
                raise ParameterError(
                    f"{part.name} (group {part.group + 1}) has {have} row(s) of class "
                    f"{c!r} but {need} are needed and replace=False; pass fewer rows or "
                    "allow replacement.")
    return where, counts, sizes


# ---------------------------------------------------------------------------- fusion

def fuse_parts(
    parts: Sequence[Any] | Mapping[int, Any],
    artefact: Any,
    *,
    n_rows: int | None = None,
    replace: bool | None = None,
    random_state: object = None,
) -> FusionResult:
    """Fuse one table per group into training rows by pairing rows within class.

    Parameters
    ----------
    parts : sequence of tables, or mapping {group number: table}
        One table (DataFrame or file) per group of ``artefact.grouping``: its columns plus
        the class; a sequence is matched by columns, a mapping by 1-based group number.
    artefact : GroupingArtefact
        Supplies the grouping, the class column and the schema the parts must fit.
    n_rows : int or None
        Rows fused, split by the pooled class shares; None: the most that repeat no row
        (:func:`fused_class_sizes`); at most :data:`MAX_ROWS_FACTOR` times the largest part.
    replace : bool or None
        None: with replacement only where a part lacks rows of a class; True: always;
        False: never (an error when a part is too small).
    random_state : None, int, SeedSequence or Generator
        One stream per group and one for the row order: a part's draw ignores the others.

    Returns
    -------
    FusionResult
        ``(table, report)``: the artefact's columns, rows in random order, fused row ``i``
        of class c taking group j's columns from the ``i``-th row drawn from part j's class
        c; the :class:`FusionReport` states the sizes and where replacement was used.

    Raises ``DataError`` (parts that do not match the groups or lack classes or rows),
    ``SchemaMismatchError`` or ``ParameterError``.
    """
    grouping, target = artefact.grouping, artefact.target
    if n_rows is not None:
        n_rows = check_positive_int(n_rows, "n_rows")
    if replace is not None and not isinstance(replace, (bool, np.bool_)):
        raise ParameterError(f"Invalid replace: {replace!r}. Must be None, True or False.")
    root = check_seed_sequence(random_state)
    items, fixed = _as_parts(parts, grouping)
    _match_groups(items, fixed, grouping, target, set(artefact.columns))
    for part in items:
        _check_kinds(part, artefact)
    classes, notes = _check_classes(items, target, artefact.classes)
    notes += _category_notes(items, artefact)

    where, counts, sizes = _class_sizes(items, target, classes, n_rows, replace)

    streams = root.spawn(grouping.k + 1)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    n_total = int(offsets[-1])
    picks, part_reports = [], []
    for part, w, cnt in zip(items, where, counts):
        rng = np.random.default_rng(streams[part.group])
        rows = np.empty(n_total, dtype=np.intp)
        used = {}
        for j, (c, need) in enumerate(zip(classes, sizes)):
            with_repl = bool(replace) if replace is not None else need > cnt[j]
            draw = rng.integers(0, cnt[j], need) if with_repl else \
                rng.permutation(cnt[j])[:need]
            rows[offsets[j]:offsets[j + 1]] = w[j][draw]
            used[c] = with_repl
        picks.append(rows)
        part_reports.append({
            "group": part.group + 1, "columns": list(grouping.groups[part.group]),
            "source": part.source, "rows": len(part.table),
            "rows_per_class": dict(zip(classes, cnt)), "replace": used})

    order = np.random.default_rng(streams[grouping.k]).permutation(n_total)
    pieces: dict[str, pd.Series] = {}
    for part, rows in zip(items, picks):
        taken = part.table.iloc[rows[order]]
        for c in grouping.groups[part.group]:
            pieces[c] = taken[c].reset_index(drop=True)
    # Every part's row i has the same class; take the class column from group 1.
    pieces[target] = items[0].table[target].iloc[picks[0][order]].reset_index(drop=True)
    table = pd.DataFrame({c: pieces[c] for c in artefact.columns})
    report = FusionReport(
        rows=n_total, rows_per_class=dict(zip(classes, sizes)),
        rule="n_rows" if n_rows is not None else "largest-without-replacement",
        parts=part_reports, replace=None if replace is None else bool(replace),
        random_state=int(random_state) if isinstance(random_state, numbers.Integral)
        and not isinstance(random_state, bool) else None,
        notes=notes)
    return FusionResult(table, report)
