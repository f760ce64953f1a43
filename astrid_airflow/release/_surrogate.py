"""GoldenEye surrogate tables from a learned grouping (ASTRID paper, Sec. 3.2.2 and 6.2).

Within every class, a surrogate moves the columns of each group of the grouping
together to the rows of an independent uniform within-class permutation ``pi_g``, and
publishes its rows in a uniformly random order ``sigma`` (one more permutation, of all
rows): output row ``j`` carries the class of source row ``sigma[j]`` and the group-``g``
columns of source row ``pi_g[sigma[j]]``. Without ``sigma`` the class column would stay
in place and whoever knows the reference table's row order would read every row's class
(docs/privacy.md, first section). Rows whose class was not seen when the grouping was
learned are shuffled within their own class like any other.

Randomness: the root ``SeedSequence`` of ``random_state`` spawns one child per copy and
each copy's child spawns one child per group, then one more for the row order; group
``g`` of copy ``i`` is permuted by ``goldeneye_indices(codes, 1, default_rng(child))``
and ``sigma`` shuffles ``arange(n)`` with child ``k``
(:func:`~astrid_airflow.engine._permutation.release_permutations`). So the result
depends only on the seed, the class column and the grouping (not on the input's
container type), and copy 0 of ``n_copies=k`` equals the single copy of ``n_copies=1``.

Scale: :func:`shuffle_file` never materialises the table in pandas. It reads the class
column, computes ``sigma`` and the per-group index arrays already composed with it
(int32 when they fit; groups on one thread per core) while reading the table once in
Arrow, and writes the output in row chunks, every column (the class by ``sigma``)
gathered with Arrow ``take`` on both cores while the previous chunk is written; the
peak memory is the Arrow table plus the k + 1 index arrays plus two output chunks (a
batch whose groups fall back to a coarser rung of the recipe holds one more table in
the release's domain per rung tried, until the groups are mixed). Output
bytes never depend on the thread count (:data:`~astrid_airflow.engine._permutation.THREADS`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow import engine  # the permutation building blocks, by their package
from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow._validation import check_positive_int
from astrid_airflow.engine import Grouping, as_grouping
from astrid_airflow.io import TableFile, arrow_writer, csv_schema, file_format, read_arrow

from ._recipe import release_recipe
from ._shuffle_steps import plan_shuffle, step
from ._table_source import is_arrow_table

#: Rows per output chunk (and Parquet row group) in :func:`shuffle_file`.
CHUNK_ROWS = 1 << 20

#: Most copies :func:`shuffle_file` writes in one call: each copy is as large as the
#: input, so a mistyped ``--n-copies`` must not fill a disk (in memory,
#: :func:`make_surrogate` has no such bound).
MAX_FILE_COPIES = 100


class ProtectsNothingWarning(UserWarning):
    """A one-group grouping: every surrogate row is an original row (P_anon = 1)."""


def resolve_grouping(artefact_or_grouping: Any, target: str | None) -> tuple[Grouping, str, Any]:
    """``(grouping, target, artefact or None)`` from an artefact or a grouping.

    An artefact is anything with ``grouping``, ``target`` and ``check_table`` (a
    :class:`~astrid_airflow.GroupingArtefact`); its target wins unless ``target`` names
    the same column. A grouping (``Grouping``, ``"a,b;c"`` text, list of lists) needs
    ``target``.
    """
    obj = artefact_or_grouping
    if hasattr(obj, "grouping") and hasattr(obj, "target") and hasattr(obj, "check_table"):
        if target is not None and target != obj.target:
            raise ParameterError(f"Invalid target: {target!r}. The artefact's class column "
                                 f"is {obj.target!r}.")
        return as_grouping(obj.grouping), str(obj.target), obj
    if target is None or not isinstance(target, str):
        raise ParameterError(f"Invalid target: {target!r}. A grouping needs the name of "
                             "the class column (target=...).")
    return as_grouping(obj), target, None


def remedied(table: Any, recipe: Any, target: str, grouping: Any = None) -> Any:
    """``table`` in the release's domain: the recipe applied and, given the grouping,
    every group locally suppressed (:mod:`._suppression`)."""
    return release_domain(table, recipe, target, grouping)[0]


def release_domain(table: Any, recipe: Any, target: str, grouping: Any = None, *,
                   progress: Any = None, repeated: Any = None) -> tuple[Any, Any]:
    """``(table, Suppression or None)``: the recipe's values, then local suppression of
    every group of ``grouping`` with the recipe's k on this batch's own counts. No
    recipe (the raw release) or no grouping: nothing is suppressed. ``progress`` (a
    stage's :class:`~astrid_airflow.engine.StageProgress`) counts each as a step.

    A recipe with fallbacks (``ReleaseRecipe.rungs``) publishes each group with its
    first rung that keeps ``fallback_share`` on this batch; a group no rung keeps it for
    with its least suppressed (the finest among equals), which the caller's budget then
    judges. A group's suppression depends on its own columns and the class alone, so the
    rungs of groups mix freely (``ReleaseRecipe.mixed``); the choice depends on the
    batch alone, so the shuffle and the gate find the same one
    (``Suppression.recipe_rungs``). ``repeated``: the batch's rows that repeat an earlier
    row exactly (:func:`._suppression.repeated_rows`), counted as no further person by
    the suppression; None counts rows (a resampled batch, where copies are draws).
    """
    out, found, _ = release_domain_parts(table, recipe, target, grouping,
                                         progress=progress, repeated=repeated)
    return out, found


def release_domain_parts(table: Any, recipe: Any, target: str, grouping: Any = None, *,
                         progress: Any = None, repeated: Any = None
                         ) -> tuple[Any, Any, Any]:
    """:func:`release_domain` and, third, the same batch before local suppression (each
    group's values from the rung it was published with): what the gate takes the
    repeated rows' tuples from, whether or not a staged file suppressed them."""
    if recipe is None:
        return table, None, table
    from ._remedies import apply_recipe

    if grouping is None:
        out = apply_recipe(table, recipe, target=target, progress=progress)
        return out, None, out
    from ._suppression import climb_rungs, mixed_suppression, suppress_table

    groups = as_grouping(grouping).groups
    tables, applied = [], []  # per rung tried, the batch in its domain and before

    def suppressed(i: int, rung: Any) -> Any:
        applied.append(apply_recipe(table, rung, target=target, progress=progress))
        with step(progress, "local suppression" if not i else
                  f"local suppression (fallback recipe {i})"):
            out, found = suppress_table(applied[-1], groups, target, recipe.k,
                                        recipe.attacker_model, repeated,
                                        exempt=rung.is_synthesised)
        tables.append(out)
        return found

    picks, tried = climb_rungs(recipe, suppressed)
    out, before = tables[0], applied[0]
    for g, p in enumerate(picks):  # each group's columns from its rung's table
        if p:
            out = _with_columns(out, tables[p], groups[g])
            before = _with_columns(before, applied[p], groups[g])
    return out, mixed_suppression(tried, picks, len(recipe.rungs)), before


def _repeated(table: Any, recipe: Any) -> Any:
    """The rows of a batch that repeat an earlier one (None when nothing is
    suppressed: the raw release)."""
    if recipe is None:
        return None
    from ._suppression import repeated_rows

    return repeated_rows(table)


def _with_columns(table: Any, source: Any, columns: Sequence[str]) -> Any:
    if isinstance(table, pd.DataFrame):
        return table.assign(**{c: source[c] for c in columns})
    for c in columns:
        i = table.schema.get_field_index(c)
        table = table.set_column(i, source.schema.field(c), source.column(c))
    return table


def applied_recipe(table: Any, recipe: Any, target: str, grouping: Any) -> Any:
    """What ``recipe`` (without fallbacks) a batch ``table`` is published with: each
    group's rung (:func:`release_domain`) mixed into one recipe."""
    if recipe is None or not recipe.fallbacks:
        return recipe if recipe is None else recipe.rungs[0]
    found = release_domain(table, recipe, target, grouping)[1]
    return recipe.mixed(found.recipe_rungs, as_grouping(grouping).groups)


def warn_if_one_group(grouping: Grouping) -> None:
    if grouping.k == 1:
        warnings.warn("The grouping has a single group: every surrogate row is an original "
                      "row (intact-row proportion 1); the surrogate protects nothing.",
                      ProtectsNothingWarning, stacklevel=3)


# --------------------------------------------------------------------------- class codes

def arrow_class_codes(column: Any, target: str) -> np.ndarray:
    """Class codes of an Arrow column, numbered as :func:`pandas_class_codes` does."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    n_missing = column.null_count
    if pa.types.is_floating(column.type):
        n_missing += int(pc.sum(pc.is_nan(column)).as_py() or 0)
    if n_missing:
        raise DataError(f"Target column {target!r} has {n_missing} missing value(s); "
                        "every row needs a class to be shuffled within.")
    encoded = pc.dictionary_encode(column)  # dictionary in order of first appearance
    n_classes = len(encoded.chunk(0).dictionary) if encoded.num_chunks else 0
    if encoded.num_chunks == 0:
        return np.zeros(0, dtype=np.int8)
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False)
                            for c in encoded.chunks]) if encoded.num_chunks > 1 else \
        encoded.chunk(0).indices.to_numpy(zero_copy_only=False)
    return engine.small_codes(codes, n_classes)


# ------------------------------------------------------------------------- permutations

# ------------------------------------------------------------------------------ tables

def _check_columns(columns: Sequence[str], grouping: Grouping, target: str) -> list[str]:
    bad = [c for c in columns if not isinstance(c, str)]
    if bad:
        raise DataError(f"Column names must be strings; got {bad[:5]!r}.")
    dup = sorted({c for c in columns if list(columns).count(c) > 1})
    if dup:
        raise DataError(f"Duplicated column name(s): {dup!r}.")
    if target not in columns:
        raise DataError(f"Target column {target!r} is not in the table; "
                        f"columns are {list(columns)[:20]!r}.")
    attrs = [c for c in columns if c != target]
    grouping.check_partition_of(attrs)
    return attrs


def _shuffle_arrow(table: Any, grouping: Grouping, perms: np.ndarray, target: str,
                   rows: np.ndarray) -> Any:
    import pyarrow as pa

    group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
    arrays = []
    for c in table.column_names:
        idx = rows if c == target else perms[group_of[c]]
        arrays.append(table.column(c).take(pa.array(idx)))
    return pa.Table.from_arrays(arrays, schema=table.schema)


def make_surrogate(table: Any, artefact_or_grouping: Any, *, target: str | None = None,
                   random_state: object = None, n_copies: int = 1,
                   remedies: bool = True) -> Any:
    """Return GoldenEye surrogate(s) of ``table`` under a learned grouping.

    The in-memory surrogate the release choice and utility measures draw: recipe, local
    suppression and intact-row swaps, but no budget refusal (:func:`shuffle_file` is the
    publishing path that refuses a batch over the policy's budgets).

    Parameters
    ----------
    table : pandas.DataFrame or pyarrow.Table
        Attributes plus the class column (reference table or a batch of the same schema);
        rows of unseen classes are shuffled within their own class.
    artefact_or_grouping : GroupingArtefact, Grouping, str or list of lists
        An artefact checks ``table``'s schema and names the class; a grouping needs
        ``target``.
    target : str, optional
        Name of the class column (required with a grouping).
    random_state : None, int, SeedSequence or Generator
        Seed; the same seed gives the same surrogate(s).
    n_copies : int, default 1
        Number of independent surrogates.
    remedies : bool, default True
        Apply the artefact's recipe before the shuffle; ``False``: raw GoldenEye release.

    Returns
    -------
    DataFrame or pyarrow.Table, or a list of ``n_copies`` of them
        Same type, columns, dtypes, index and row count as ``table``; within each class
        every column keeps its multiset of values and each group's columns stay aligned.
        The pandas index is ``table``'s position for position.

    Warns
    -----
    ProtectsNothingWarning
        With a one-group grouping (every surrogate row is an original row).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 2, 3, 4], "b": [5, 6, 7, 8], "y": [0, 0, 1, 1]})
    >>> s = make_surrogate(t, "a;b", target="y", random_state=0)
    >>> sorted(s.loc[s.y == 1, "a"]), sorted(s.y)
    ([3, 4], [0, 0, 1, 1])
    """
    grouping, target, artefact = resolve_grouping(artefact_or_grouping, target)
    n_copies = check_positive_int(n_copies, "n_copies")
    is_arrow = is_arrow_table(table)
    if not is_arrow and not isinstance(table, pd.DataFrame):
        raise DataError(f"Cannot make a surrogate of {type(table).__name__}; pass a pandas "
                        "DataFrame or a pyarrow Table (or use shuffle_file for files).")
    if (table.num_rows if is_arrow else len(table)) == 0:
        raise DataError("The table is empty (0 rows).")
    recipe = release_recipe(artefact, remedies)
    repeated = _repeated(table, recipe)  # a declared row id tells copies apart
    if artefact is not None:
        table, _ = artefact.without_identifiers(table)
        artefact.check_table(table)
    columns = table.column_names if is_arrow else list(table.columns)
    _check_columns(columns, grouping, target)
    warn_if_one_group(grouping)
    table = release_domain(table, recipe, target, grouping, repeated=repeated)[0]
    codes = arrow_class_codes(table.column(target), target) if is_arrow else \
        engine.pandas_class_codes(table[target], target)
    out = []
    counted = _counted(table, target, artefact, recipe)  # the same rows for every copy
    for seed in engine.seed_of_copies(random_state, n_copies):
        rows, perms = engine.release_permutations(codes, grouping.k, seed)
        if recipe is not None:
            (rows, perms), _ = _within_intact_budget(table, grouping, target,
                                                     (rows, perms), artefact, seed, counted)
        out.append(_shuffle_arrow(table, grouping, perms, target, rows) if is_arrow else
                   engine.shuffle_frame(table, grouping, perms, target, rows))
    return out[0] if n_copies == 1 else out


# ------------------------------------------------------------------------------- files

def surrogate_paths(out: str | os.PathLike, n_copies: int) -> list[str]:
    """Output paths of :func:`shuffle_file`: ``out`` itself, or ``stem-1.ext`` ... for copies.

    >>> surrogate_paths("s.parquet", 2)
    ['s-1.parquet', 's-2.parquet']
    """
    out = os.fspath(out)
    n_copies = check_positive_int(n_copies, "n_copies")
    if n_copies == 1:
        return [out]
    head, tail = os.path.split(out)
    stem, dot, ext = tail.rpartition(".")
    stem, ext = (stem, dot + ext) if stem else (tail, "")
    width = len(str(n_copies))
    return [os.path.join(head, f"{stem}-{i:0{width}d}{ext}") if head else
            f"{stem}-{i:0{width}d}{ext}" for i in range(1, n_copies + 1)]


def read_arrow_schema(path: str | os.PathLike) -> Any:
    """The Arrow schema of an input file (a Parquet file's footer only)."""
    from astrid_airflow.io import read_schema

    return read_schema(path)


def _write_shuffled(table: Any, grouping: Grouping, released: tuple[np.ndarray, np.ndarray],
                    target: str, kind: str, path: str) -> None:
    """Write ``table`` gathered by ``released = (rows, perms)``, in chunks of CHUNK_ROWS rows.

    The class column is gathered by ``rows`` (the row order), group ``g``'s columns by
    ``perms[g]`` (already composed with it, :func:`engine.release_permutations`).

    A pipeline on :func:`n_threads` threads: the columns of chunk i+1 are gathered in
    parallel (Arrow ``take`` frees the GIL) while a writer thread encodes chunk i, so the
    single-threaded Parquet/CSV encoder overlaps the gathers; at most two output chunks
    are alive. Chunks are written in order: the bytes are those of a sequential write.
    """
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    rows, perms = released
    group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
    schema = table.schema if kind == "parquet" else csv_schema(table.schema)
    n = table.num_rows
    chunk = CHUNK_ROWS

    def piece(item: tuple[str, int]) -> Any:
        c, start = item
        column = table.column(c)
        stop = min(n, start + chunk)
        idx = rows[start:stop] if c == target else perms[group_of[c], start:stop]
        out = column.take(pa.array(idx))
        if kind == "csv" and pa.types.is_dictionary(out.type):
            out = out.cast(out.type.value_type)
        return out

    if engine.n_threads() == 1:
        with contextlib.closing(arrow_writer(kind, path, table.schema)) as writer:
            for start in range(0, max(n, 1), chunk):
                writer.write_table(pa.Table.from_arrays(
                    [piece((c, start)) for c in table.column_names], schema=schema))
        return
    with contextlib.closing(arrow_writer(kind, path, table.schema)) as writer, \
            ThreadPoolExecutor(1) as write_pool:
        pending = None
        try:
            for start in range(0, max(n, 1), chunk):
                batch = pa.Table.from_arrays(
                    engine.run_threaded(piece, [(c, start) for c in table.column_names]),
                    schema=schema)
                if pending is not None:
                    pending.result()  # chunk i-1 written: two chunks alive at most
                pending = write_pool.submit(writer.write_table, batch)
        finally:
            if pending is not None:
                pending.result()  # never close the writer under a running write


def _read_while_permuting(src: str, table: Any, codes: np.ndarray, k: int,
                          seed: np.random.SeedSequence, columns: list[str] | None = None
                          ) -> tuple[Any, tuple[np.ndarray, np.ndarray]]:
    """``(table, engine.release_permutations(codes, k, seed))``, the read (of
    ``columns``, default all) overlapping the draws."""
    if table is not None:
        return table.combine_chunks(), engine.release_permutations(codes, k, seed)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        # One chunk per column: Arrow's take on a many-chunk column resolves every index's
        # chunk (and concatenates string chunks on every call), several times slower.
        reading = pool.submit(lambda: read_arrow(src, columns).combine_chunks())
        try:
            released = engine.release_permutations(codes, k, seed)
        finally:
            table = reading.result()  # a read error wins; never leave the read running
    return table, released


def _counted(table: Any, target: str, artefact: Any, recipe: Any) -> np.ndarray | None:
    """The rows whose intact copies count (:func:`._intact.counted_rows`; None: every
    row's, or no recipe and so no swaps)."""
    from ._intact import counted_rows

    return None if recipe is None else counted_rows(table, target, artefact)


def _within_intact_budget(table: Any, grouping: Grouping, target: str,
                          released: tuple[np.ndarray, np.ndarray], artefact: Any,
                          seed: np.random.SeedSequence, counted: np.ndarray | None
                          ) -> tuple[Any, Any]:
    """A remedied release's permutations with intact rows over the artefact's policy's
    ``max_intact`` broken by within-class swaps (:mod:`._intact`); under a declared
    attacker model only the rows that disclose someone (``counted``) count."""
    from ._intact import break_intact_rows, intact_budget

    return break_intact_rows(table, grouping.groups, target, released,
                             intact_budget(None, artefact), seed, counted)


def shuffle_file(src: str | os.PathLike, artefact: Any, out: str | os.PathLike, *,
                 target: str | None = None, random_state: object = None, n_copies: int = 1,
                 overwrite: bool = False,
                 before_publish: Callable[[list[TableFile]], None] | None = None,
                 remedies: bool = True, max_suppressed_share: float | None = None,
                 record: dict | None = None, progress: Any = None) -> str | list[str]:
    """Write GoldenEye surrogate(s) of a Parquet, CSV or ARFF file, atomically.

    Every output is written to a temporary file and moved into place only after all copies
    are complete, so an error leaves no output; the table is held once, in Arrow.

    Parameters
    ----------
    src : str or path-like
        ``.parquet``/``.pq``, ``.csv`` or ``.arff`` file, local or fsspec URL; never one
        of the outputs (``StoreError``).
    artefact : GroupingArtefact, or Grouping / grouping text with ``target``
        The learned grouping; with an artefact the file's schema is checked first.
    out : str or path-like
        Output file, Parquet or CSV by suffix; copies go to ``stem-1.ext``, ...
        (:func:`surrogate_paths`).
    target : str, optional
        Class column, needed only when ``artefact`` is a grouping.
    random_state : None, int, SeedSequence or Generator
        The same seed gives byte-identical files and :func:`make_surrogate`'s surrogate.
    n_copies : int, default 1
        Number of independent surrogates, at most :data:`MAX_FILE_COPIES`.
    overwrite : bool, default False
        Replace existing outputs; otherwise one raises ``StoreError`` before any work.
    before_publish : callable, optional
        Called with the complete temporary outputs (``TableFile`` per copy) before any is
        moved into place (metrics, a gate); if it raises, nothing is published.
    remedies : bool, default True
        Put the batch in the release's domain first (recipe, rungs, local suppression);
        ``False``: raw release.
    max_suppressed_share : float, optional
        Suppression budget per group (default: the artefact's policy's, else
        :data:`~._suppression.MAX_SUPPRESSED_SHARE`); a batch the rungs leave over it is
        refused (``RecipeError``) before anything is written.
    record : dict, optional
        Filled with ``"suppression"`` (per group, with its ``recipe_rung``; None raw).
    progress : StageProgress, optional
        The shuffle stage's progress (estimate line and step counts); default: its own.

    Returns
    -------
    str or list of str
        The path written, or the list of paths with ``n_copies > 1``.
    """
    from astrid_airflow.io import atomic_path, input_format, refuse_overwriting_inputs

    grouping, target, art = resolve_grouping(artefact, target)
    n_copies = check_positive_int(n_copies, "n_copies")
    if n_copies > MAX_FILE_COPIES:
        raise ParameterError(f"Invalid n_copies: {n_copies}. At most {MAX_FILE_COPIES} "
                             "copies are written in one call (each is as large as the "
                             "input).")
    recipe = release_recipe(art, remedies)
    from ._suppression import suppression_budget

    budget = suppression_budget(max_suppressed_share, art)
    src = os.fspath(src)
    src_kind = input_format(src)  # what `astrid learn` reads: CSV, Parquet, ARFF
    outs = surrogate_paths(out, n_copies)
    kinds = [file_format(p) for p in outs]
    refuse_overwriting_inputs(outs, [src])
    # A CSV/ARFF file is parsed once; a Parquet file is read footer, class column, table.
    table = read_arrow(src) if src_kind != "parquet" else None
    schema = table.schema if table is not None else read_arrow_schema(src)
    dropped: list[str] = []
    repeated = None  # counted below on the table read, unless identifiers are dropped
    if art is not None:  # declared identifiers are never read, so never published
        schema, dropped = art.without_identifiers(schema)
        if dropped:  # a declared row id tells copies apart: read for that alone
            repeated = _repeated(table if table is not None else read_arrow(src), recipe)
        table = table.drop_columns(dropped) if table is not None and dropped else table
        if dropped:
            logging.getLogger(__name__).info(
                "Identifier column(s) %s dropped: never published.", dropped)
        art.check_table(schema)
    _check_columns(schema.names, grouping, target)
    warn_if_one_group(grouping)
    with contextlib.ExitStack() as stack:
        tracker = progress if progress is not None else \
            stack.enter_context(engine.stage_progress("shuffle"))
        tmps = [stack.enter_context(atomic_path(p, overwrite=overwrite)) for p in outs]
        labels = (table if table is not None else read_arrow(src, [target])).column(target)
        codes = arrow_class_codes(labels, target)
        del labels
        plan_shuffle(tracker, codes.shape[0], len(schema.names), recipe, n_copies)
        seeds = engine.seed_of_copies(random_state, n_copies)
        # The first copy's permutations are drawn while Arrow reads the table.
        with tracker.step(f"reading the table, permuting {grouping.k} groups of copy 1"):
            table, released = _read_while_permuting(src, table, codes, grouping.k, seeds[0],
                                                    schema.names if dropped else None)
        if dropped:  # the column descriptions without the identifiers
            table = table.replace_schema_metadata(schema.metadata)
        if repeated is None:
            repeated = _repeated(table, recipe)
        table, suppression = release_domain(table, recipe, target, grouping,
                                            progress=tracker, repeated=repeated)
        if suppression is not None:
            suppression.check_budget(budget)
        swaps: list[dict] = []
        if record is not None:
            record["suppression"] = None if suppression is None else suppression.to_dict()
            record["intact_swaps"] = swaps  # one entry per copy, filled below
            record["dropped_identifiers"] = dropped
        counted = _counted(table, target, art, recipe)  # the same rows for every copy
        for i, (seed, kind, tmp) in enumerate(zip(seeds, kinds, tmps)):
            copy = f"copy {i + 1}/{n_copies}"
            if i:
                with tracker.step(f"{copy}: permuting {grouping.k} groups"):
                    released = engine.release_permutations(codes, grouping.k, seed)
            if recipe is not None:
                with tracker.step(f"{copy}: intact-row swaps"):
                    released, done = _within_intact_budget(table, grouping, target,
                                                           released, art, seed, counted)
                swaps.append(done.to_dict())
                done.check_budget()
            with tracker.step(f"{copy}: writing"):
                _write_shuffled(table, grouping, released, target, kind, tmp)
            del released
        del table, codes
        if before_publish is not None:
            before_publish([TableFile(tmp, kind) for tmp, kind in zip(tmps, kinds)])
    return outs[0] if n_copies == 1 else outs
