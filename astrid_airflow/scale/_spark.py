"""GoldenEye surrogates of tables beyond one machine, on Apache Spark.

The same guarantee as :func:`~astrid_airflow.make_surrogate` (ASTRID paper, Sec. 3.2.2
and 6.2): within every class, each group's columns move together to the rows of an
independent uniform within-class permutation, so every per-class column multiset is
kept and the columns of a group stay aligned. Spark has no row positions, so a surrogate
is built as *slots* ``(class, rank)``, rank = 0..n_c−1, and group g fills slot
``(c, r)`` with the group-g part of the class-c row of rank r in a random order π_g:

1. every input row gets an id (``monotonically_increasing_id``) and, per group, a
   random key ``xxhash64(seed_g, id)``; sorting a class by (key, id) is a uniform random
   ordering, independent across groups (one seed per group, spawned with
   ``SeedSequence``);
2. the rank of a row in that ordering is computed without sorting a class in one task:
   the key's top bits cut the class into B buckets (B a power of two; the keys are
   uniform, so buckets are equal in size); one aggregation counts the rows of every
   (group, class, bucket), the driver turns the counts into offsets, and the rank is the
   offset plus ``row_number()`` within the (group, class, bucket) window, so windows hold
   about 2^16 rows and the work spreads over the whole cluster;
3. every input row is exploded into G "long" rows, one per group, carrying that group's
   columns in typed slots (slot (T, j) holds a group's j-th column of type T, so the long
   rows are as wide as the widest group, not the table); after the ranking they are
   regrouped by slot (class, rank) and each output column is taken from its group's row.

Whatever the number of groups, that is two shuffles of the long rows and one sort per
task (a G-way join holds G sort buffers of one memory page each at once; with 20 groups
it ran out of execution memory in local mode with a 4 GiB driver). A slot that does not
get exactly one row of every group makes the job fail (``assert_true``) instead of
writing a corrupt surrogate.

The output has the input's columns, types and per-class row counts; its row order is
that of the slots, not of the input (Spark keeps no row order anyway).

Determinism: the same seed gives the same surrogate (the same multiset of rows) when the
input's rows and partitions are the same on every evaluation, as for a DataFrame read from
Parquet files (row ids come from partition positions). A DataFrame computed through a
shuffle may not be: ``persist()`` or ``localCheckpoint()`` it first. The result differs
from the pandas/Arrow implementation's for the same seed (another random generator); its
distribution is the same.

The intact-row proportion P_anon (Sec. 6.2) is computed in Spark as
``|distinct(T) ∩ S| / |distinct(T)|`` with SQL ``INTERSECT`` (nulls compare equal, NaN
equals NaN), exactly, without hashing.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from astrid_airflow._errors import DataError, ParameterError, StoreError
from astrid_airflow._validation import check_seed_sequence
from astrid_airflow.engine import Grouping
from astrid_airflow.release import (
    release_recipe,
    resolve_grouping,
    suppression_budget,
    warn_if_one_group,
)

_SLOT_ERROR = ("GoldenEye slot without exactly one part per group: the input changed "
               "between jobs (persist or checkpoint it)")

#: Target rows per (class, bucket) window.
WINDOW_ROWS = 1 << 16
#: At most this many buckets per class (2^12: the driver collects G x C x B counts).
MAX_BUCKET_BITS = 12

_RID, _KEY, _BUCKET, _RANK, _OFFSET, _GROUP = (
    "__astrid_rid", "__astrid_key", "__astrid_bucket", "__astrid_rank", "__astrid_offset",
    "__astrid_group")
_PERSON = "__astrid_person"  # 1 on the first of a row's exact copies, 0 on the others
_RANK = "__astrid_class_rank"  # a row's rank within its class (synthesised groups draw by it)


def _pyspark() -> tuple[Any, Any, Any]:
    try:
        from pyspark.sql import DataFrame, Window
        from pyspark.sql import functions as F
    except ImportError:  # pragma: no cover - depends on the extra being installed
        raise ParameterError("Spark surrogates need the 'spark' extra: pip install "
                             "'astrid-airflow[spark]' (pyspark) and a Java runtime.") from None
    return DataFrame, Window, F


def _check_spark_table(df: Any, grouping: Grouping, target: str, artefact: Any) -> list[str]:
    DataFrame, _, _ = _pyspark()
    if not isinstance(df, DataFrame):
        raise DataError(f"Cannot make a Spark surrogate of {type(df).__name__}; pass a "
                        "pyspark.sql.DataFrame.")
    columns = list(df.columns)
    if artefact is not None:
        artefact.check_table(_arrow_schema(df))
    reserved = sorted(c for c in columns if c.startswith("__astrid_"))
    if reserved:
        raise DataError(f"Column name(s) {reserved} are reserved for internal use.")
    dup = sorted({c for c in columns if columns.count(c) > 1})
    if dup:
        raise DataError(f"Duplicated column name(s): {dup!r}.")
    if target not in columns:
        raise DataError(f"Target column {target!r} is not in the table; "
                        f"columns are {columns[:20]!r}.")
    grouping.check_partition_of([c for c in columns if c != target])
    return columns


def _arrow_schema(df: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(df.schema)
    except Exception as exc:  # a Spark type without an Arrow equivalent
        raise DataError(f"Cannot check the Spark schema against the artefact: {exc}") from None


def _group_seeds(random_state: object, k: int) -> list[int]:
    """One signed 64-bit hash seed per group, spawned as in ``make_surrogate``."""
    copy = check_seed_sequence(random_state).spawn(1)[0]
    return [int(s.generate_state(1, np.uint64)[0].astype(np.int64)) for s in copy.spawn(k)]


def _class_sizes(df: Any, target: str) -> dict[Any, int]:
    rows = df.groupBy(target).count().collect()
    sizes = {r[target]: int(r["count"]) for r in rows}
    missing = sum(n for c, n in sizes.items()
                  if c is None or (isinstance(c, float) and math.isnan(c)))
    if missing:
        raise DataError(f"Target column {target!r} has {missing} missing value(s); every "
                        "row needs a class to be shuffled within.")
    if not sizes:
        raise DataError("The table is empty (0 rows).")
    return sizes


def _bucket_bits(sizes: dict[Any, int], parallelism: int) -> int:
    """log2 of the buckets per class: windows of ~WINDOW_ROWS rows, and enough windows
    (at least twice the cluster's cores) to keep every core busy."""
    by_rows = math.ceil(math.log2(max(1, max(sizes.values()) / WINDOW_ROWS)))
    by_cores = math.ceil(math.log2(max(1, 2 * parallelism / len(sizes))))
    return int(min(MAX_BUCKET_BITS, max(0, by_rows, by_cores)))


def spark_surrogate(df: Any, artefact_or_grouping: Any, *, target: str | None = None,
                    random_state: object = None, remedies: bool = True,
                    max_suppressed_share: float | None = None,
                    record: dict | None = None) -> Any:
    """Return a GoldenEye surrogate of a Spark DataFrame (lazy, except two small jobs).

    Two jobs count the class sizes and every group's buckets; the returned DataFrame does
    the rest when written, in two shuffles whatever the number of groups
    (docs/scale-out.md).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Attributes plus the class column; its rows must be the same on every evaluation
        (a DataFrame read from files is).
    artefact_or_grouping : GroupingArtefact, Grouping, str or list of lists
        With an artefact, ``df``'s schema is checked first (``SchemaMismatchError``).
    target : str, optional
        The class column (needed with a grouping).
    random_state : None, int, SeedSequence or Generator
    remedies : bool, default True
        Apply the artefact's recipe and local suppression first, with the local path's
        row-wise code on every partition; a recipe with an MDAV step needs the whole batch
        and is refused (``RecipeError``). ``False``: the raw release.
    max_suppressed_share : float, optional
        The suppression budget per group (default 0.05): a batch needing more is refused.
    record : dict, optional
        Filled with ``"suppression"`` (what was suppressed, per group).

    Returns
    -------
    pyspark.sql.DataFrame
        The same columns and types; per class the same row count, column multisets and
        group multisets. Evaluating it fails (``assert_true``) if ``df`` changed between
        the counting jobs and the evaluation.
    """
    _, Window, F = _pyspark()
    grouping, target, artefact = resolve_grouping(artefact_or_grouping, target)
    recipe = release_recipe(artefact, remedies)
    if artefact is not None and (ids := [c for c in artefact.identifiers
                                         if c in df.columns]):
        df = df.drop(*ids)  # declared identifiers: never published
        if record is not None:
            record["dropped_identifiers"] = ids
    columns = _check_spark_table(df, grouping, target, artefact)
    warn_if_one_group(grouping)
    if recipe is not None:
        df, found = _spark_published(df, recipe, target, grouping)
        if record is not None:
            record["suppression"] = found.to_dict()
        found.check_budget(suppression_budget(max_suppressed_share, artefact))
    elif record is not None:
        record["suppression"] = None
    spark = df.sparkSession
    k = grouping.k
    seeds = _group_seeds(random_state, k)
    sizes = _class_sizes(df, target)
    bits = _bucket_bits(sizes, spark.sparkContext.defaultParallelism)

    def key(g: int) -> Any:
        return F.xxhash64(F.lit(seeds[g]).cast("long"), F.col(_RID))

    def bucket(key_col: Any) -> Any:
        return F.shiftrightunsigned(key_col, 64 - bits) if bits else F.lit(0).cast("long")

    base = df.withColumn(_RID, F.monotonically_increasing_id())
    # 1. One aggregation counts the rows of every (group, class, bucket).
    narrow = F.explode(F.array(*[
        F.struct(F.lit(g).alias(_GROUP), bucket(key(g)).alias(_BUCKET)) for g in range(k)]))
    counts = (base.select(target, narrow.alias("p")).select(target, "p.*")
              .groupBy(_GROUP, target, _BUCKET).count().collect())
    off = spark.createDataFrame(_offsets(counts, target), schema=_offset_schema(df, target))

    # 2. "Long" rows: one per (input row, group), the group's columns in typed slots (a
    #    slot per type and position, so G groups share a few columns, not G x m).
    types = {c: df.schema[c].dataType for c in columns}
    slot_of, slot_type = _slots(grouping, types)
    parts = []
    for g, cols in enumerate(grouping.groups):
        mine = {slot_of[c]: F.col(c) for c in cols}
        parts.append(F.struct(
            F.lit(g).alias(_GROUP), key(g).alias(_KEY),
            *[mine.get(s, F.lit(None).cast(t)).alias(s) for s, t in slot_type.items()]))
    long = (base.select(target, _RID, F.explode(F.array(*parts)).alias("p"))
            .select(target, _RID, "p.*").withColumn(_BUCKET, bucket(F.col(_KEY))))
    # rank of the row within its class in group g's random order (key, then id)
    by_key = Window.partitionBy(_GROUP, target, _BUCKET).orderBy(_KEY, _RID)
    long = (long.join(F.broadcast(off), on=[_GROUP, target, _BUCKET])
            .withColumn(_RANK, F.col(_OFFSET) + F.row_number().over(by_key) - 1)
            .select(target, _RANK, _GROUP, *slot_type))

    # 3. Slot (class, rank) takes group g's columns from its group-g row.
    slot = Window.partitionBy(target, _RANK)
    check = F.assert_true(
        (F.count(F.lit(1)).over(slot) == k)
        & (F.size(F.collect_set(_GROUP).over(slot)) == k),
        F.lit(_SLOT_ERROR))
    group_of = {c: g for g, cols in enumerate(grouping.groups) for c in cols}
    picked = {c: F.first(F.when(F.col(_GROUP) == group_of[c], F.col(slot_of[c])),
                         ignorenulls=True).over(slot).alias(c)
              for c in columns if c != target}
    # the check feeds the filter, so column pruning cannot drop it
    out = long.select(target, F.when(check.isNull(), F.col(_GROUP)).alias(_GROUP),
                      *picked.values())
    return out.where(F.col(_GROUP) == 0).select(*columns)


def _spark_published(df: Any, recipe: Any, target: str, grouping: Grouping
                     ) -> tuple[Any, Any]:
    """``(df in the release's domain, Suppression)``: each group on the rung the local
    path picks (:func:`~astrid_airflow.release.release_domain`, the same functions),
    one counting job per rung tried."""
    from astrid_airflow.release import climb_rungs, mixed_suppression

    def suppressed(i: int, rung: Any) -> Any:
        return _spark_remedied(df, rung, target, grouping, count=True)[1]

    picks, tried = climb_rungs(recipe, suppressed)
    applied = recipe.mixed(picks, grouping.groups)
    return _spark_remedied(df, applied, target, grouping), \
        mixed_suppression(tried, picks, len(recipe.rungs))


def _spark_remedied(df: Any, recipe: Any, target: str, grouping: Grouping | None = None,
                    count: bool = False) -> Any:
    """``df`` with the recipe's steps applied partition by partition (the local code, in
    pandas), then, given the grouping, locally suppressed (:func:`_spark_suppressed`;
    ``count``: ``(df, Suppression)``)."""
    from astrid_airflow._errors import RecipeError
    from astrid_airflow.release import apply_recipe

    if any(s["method"] == "mdav" for s in recipe.steps):
        raise RecipeError("The release recipe has an MDAV step, which aggregates over the "
                          "whole batch: the Spark path applies row-wise steps only; "
                          "shuffle this batch with the local path (astrid shuffle).")
    _, Window, F = _pyspark()
    if grouping is not None:  # before the recipe: exact copies of a row are one person
        first = F.row_number().over(Window.partitionBy(*df.columns).orderBy(F.lit(1)))
        df = df.withColumn(_PERSON, (first == 1).cast("long"))
    schema = df.schema
    ranked = bool(recipe.synthesised_columns)
    if ranked:  # a synthesised group draws by each row's rank within its class
        df = df.withColumn(_RANK, F.row_number().over(Window.partitionBy(target).orderBy(
            F.monotonically_increasing_id())) - 1)

    def apply(frames: Any) -> Any:
        for frame in frames:
            if not ranked:
                yield apply_recipe(frame, recipe, target=target)
                continue
            ranks = frame.pop(_RANK).to_numpy()
            yield apply_recipe(frame, recipe, target=target, class_ranks=ranks)

    out = df.mapInPandas(apply, schema=schema)
    if grouping is None:
        return out
    return _spark_suppressed(out, grouping, target, recipe.k, count, recipe.attacker_model,
                             exempt=recipe.is_synthesised)


def _all_missing(F: Any, schema: Any, cols: Sequence[str]) -> Any:
    """Spark's condition of a row missing in every column of ``cols`` (NaN is missing,
    as the local codes read it)."""
    floating = {f.name for f in schema.fields
                if f.dataType.typeName() in ("double", "float")}
    out = F.lit(True)
    for c in cols:
        out = out & (F.col(c).isNull() | (F.isnan(c) if c in floating else F.lit(False)))
    return out


def _spark_suppressed(df: Any, grouping: Grouping, target: str, k: int,
                      count: bool = False, model: Any = None, exempt: Any = None) -> Any:
    """Local suppression of ``df``: the counts of every row's (group tuple, class) and of
    its tuple's classes of ``k`` rows or more come from windows over the whole
    DataFrame (nulls compare equal, as in the local codes); the rule and the nulling
    are the local path's (:func:`~astrid_airflow.release._suppression.suppress_counted`),
    on Arrow batches. ``count``: one more job counts what is suppressed (the same
    function), returned beside the DataFrame as a ``Suppression``. Under a declared
    attacker ``model`` the windows are over each group's quasi-identifier projection,
    and one more counts the distinct values of each declared sensitive column among the
    rows the first two keep. An ``exempt`` group (synthesised) keeps every row."""
    import pyarrow as pa

    from astrid_airflow.release import SENSITIVE_DIVERSITY, Suppression, suppress_counted

    _, Window, F = _pyspark()
    groups = [list(cols) for cols in grouping.groups]
    counts = [(f"__astrid_size{g}", f"__astrid_big{g}", f"__astrid_diverse{g}")
              for g in range(len(groups))]
    counted = df
    for cols, (size_c, big_c, diverse_c) in zip(groups, counts):
        if exempt is not None and exempt(cols):  # counts that keep every row
            counted = counted.withColumn(size_c, F.lit(k).cast("long")).withColumn(
                big_c, F.lit(2)).withColumn(diverse_c, F.lit(SENSITIVE_DIVERSITY))
            continue
        key = cols if model is None else model.key_columns(cols)
        # people, not rows: a row repeating an earlier one adds no one (_PERSON 0)
        counted = counted.withColumn(
            size_c, F.sum(F.col(_PERSON)).over(Window.partitionBy(*key, target)))
        counted = counted.withColumn(big_c, F.size(F.collect_set(
            F.when(F.col(size_c) >= k, F.col(target))).over(Window.partitionBy(*key))))
        published = ((F.col(size_c) >= k) & (F.col(big_c) >= 2)) | \
            _all_missing(F, df.schema, cols)
        fewest = F.lit(SENSITIVE_DIVERSITY)
        for s in [] if model is None else model.sensitive_columns(cols):
            fewest = F.least(fewest, F.size(F.collect_set(F.when(
                published, F.struct(F.col(s)))).over(Window.partitionBy(*key))))
        counted = counted.withColumn(diverse_c, fewest)

    helpers = [*counts, (_PERSON,)]  # every helper column is dropped with the counts

    def suppressed(batches: Any) -> Any:
        for b in batches:
            yield suppress_counted(b, groups, k, helpers)[0]

    def tally(batches: Any) -> Any:
        for b in batches:
            yield pa.record_batch({"g": pa.array(range(len(groups)), pa.int32()),
                                   "n": pa.array(suppress_counted(b, groups, k, helpers)[1],
                                                 pa.int64()),
                                   "rows": pa.array([b.num_rows] * len(groups), pa.int64())})

    from pyspark.sql.types import StructType

    out = counted.mapInArrow(suppressed, schema=StructType(
        [f for f in df.schema.fields if f.name != _PERSON]))
    if not count:
        return out
    sums = {r["g"]: (int(r["n"]), int(r["rows"])) for r in counted.mapInArrow(
        tally, "g int, n long, rows long").groupBy("g").agg(
        F.sum("n").alias("n"), F.sum("rows").alias("rows")).collect()}
    rows = max((r for _, r in sums.values()), default=0)
    return out, Suppression(k=int(k), rows=rows, groups=tuple(
        {"columns": cols, "suppressed_rows": sums.get(g, (0, 0))[0],
         "suppressed_share": sums.get(g, (0, 0))[0] / rows if rows else 0.0}
        for g, cols in enumerate(groups)))


def _slots(grouping: Grouping, types: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """Typed slots: column -> slot name, and slot name -> Spark type.

    The j-th column of type T within a group goes to slot (T, j); there are as many
    slots of type T as the largest count of T-columns in one group.
    """
    slot_of: dict[str, str] = {}
    slot_type: dict[str, Any] = {}
    names: dict[tuple[str, int], str] = {}
    for cols in grouping.groups:
        seen: dict[str, int] = {}
        for c in cols:
            t = types[c]
            j = seen.get(t.json(), 0)
            seen[t.json()] = j + 1
            name = names.setdefault((t.json(), j), f"__astrid_s{len(names)}")
            slot_of[c] = name
            slot_type[name] = t
    return slot_of, slot_type


def _offsets(counts: Sequence[Any], target: str) -> list[tuple]:
    """Rows ``(group, class, bucket, offset)``: rows of the class in lower buckets."""
    table: dict[tuple[int, Any], dict[int, int]] = {}
    for r in counts:
        table.setdefault((int(r[_GROUP]), r[target]), {})[int(r[_BUCKET])] = int(r["count"])
    out = []
    for (g, cls), by_bucket in table.items():
        running = 0
        for b in sorted(by_bucket):
            out.append((g, cls, b, running))
            running += by_bucket[b]
    return out


def _offset_schema(df: Any, target: str) -> Any:
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    field = df.schema[target]
    return StructType([StructField(_GROUP, IntegerType(), False),
                       StructField(target, field.dataType, False),
                       StructField(_BUCKET, LongType(), False),
                       StructField(_OFFSET, LongType(), False)])


def spark_intact_row_proportion(original: Any, surrogate: Any, *,
                                columns: Sequence[str] | None = None) -> float:
    """The paper's P_anon, in Spark: share of ``original``'s distinct rows found in
    ``surrogate``.

    ``|distinct(original) ∩ surrogate| / |distinct(original)|`` over ``columns``
    (default: every column of ``original``), computed with ``INTERSECT`` (exact; nulls
    compare equal and NaN equals NaN), the same statistic as
    :func:`~astrid_airflow.release._metrics.intact_row_proportion`.
    """
    DataFrame, _, _ = _pyspark()
    for what, d in (("original", original), ("surrogate", surrogate)):
        if not isinstance(d, DataFrame):
            raise DataError(f"Cannot compute P_anon of {type(d).__name__} ({what}); pass "
                            "a pyspark.sql.DataFrame.")
    cols = list(original.columns) if columns is None else [str(c) for c in columns]
    if not cols:
        raise ParameterError("Invalid columns: []. Must name at least one column.")
    for what, d in (("original table", original), ("surrogate", surrogate)):
        missing = [c for c in cols if c not in d.columns]
        if missing:
            raise DataError(f"The {what} lacks column(s) {missing}.")
    left = original.select(*cols)
    distinct = left.distinct().count()
    if distinct == 0:
        raise DataError("The original table is empty (0 rows).")
    return left.intersect(surrogate.select(*cols)).count() / distinct


@dataclass(frozen=True)
class SparkShuffleResult:
    """What :func:`spark_shuffle_parquet` wrote and measured."""

    out: str
    rows: int
    groups: int
    intact_row_proportion: float | None
    seed: int | None
    seconds: float
    #: What local suppression removed, per group (``Suppression.to_dict()``; None for
    #: a raw release).
    suppression: dict | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _HadoopFS:
    """Exists/rename/delete through the cluster's Hadoop FileSystem (HDFS, S3A, file:),
    so the temporary output and the destination are on the storage Spark writes to."""

    def __init__(self, spark: Any, path: str):
        jvm = spark.sparkContext._jvm
        self._path_cls = jvm.org.apache.hadoop.fs.Path
        self.fs = self._path_cls(path).getFileSystem(
            spark.sparkContext._jsc.hadoopConfiguration())

    def path(self, p: str) -> Any:
        return self._path_cls(p)

    def exists(self, p: str) -> bool:
        return bool(self.fs.exists(self.path(p)))

    def rename(self, src: str, dst: str) -> None:
        if not self.fs.rename(self.path(src), self.path(dst)):
            raise StoreError(f"Cannot move {src!r} to {dst!r}.")

    def delete(self, p: str) -> None:
        self.fs.delete(self.path(p), True)


def _qualify(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    if not isinstance(text, str) or not text.strip():
        raise ParameterError(f"Invalid path {path!r}: expected a non-empty path or URL.")
    return text if "://" in text or text.startswith("file:") else os.path.abspath(text)


def _sibling(path: str, tag: str) -> str:
    head, _, tail = path.rstrip("/").rpartition("/")
    # A leading dot hides it from readers of the parent directory (Spark, Hadoop, Arrow).
    return f"{head}/.{tail}.{uuid.uuid4().hex[:12]}.{tag}"


def spark_shuffle_parquet(src: str | os.PathLike, artefact: Any, out: str | os.PathLike, *,
                          target: str | None = None, random_state: object = None,
                          spark: Any = None, overwrite: bool = False, metrics: bool = True,
                          remedies: bool = True, max_suppressed_share: float | None = None
                          ) -> SparkShuffleResult:
    """Write a GoldenEye surrogate of a Parquet dataset with Spark, atomically.

    The surrogate goes to a hidden temporary directory beside ``out``, is checked against
    the source's per-class counts, then renamed to ``out`` (atomic on HDFS and POSIX, a copy
    on S3A: docs/scale-out.md); an error leaves ``out`` untouched.

    Parameters
    ----------
    src, out : str or path-like
        Source Parquet file or directory the cluster reads; output Parquet directory.
    artefact : GroupingArtefact, or Grouping / grouping text with ``target``
        With an artefact the dataset's schema is checked first.
    target, random_state, remedies, max_suppressed_share
        As :func:`spark_surrogate`; the same seed and files give the same surrogate.
    spark : SparkSession, optional
        Default: ``SparkSession.builder.getOrCreate()``.
    overwrite : bool, default False
        Replace an existing ``out``; otherwise it raises ``StoreError`` before any work.
    metrics : bool, default True
        Compute the intact-row proportion (in Spark) on the complete temporary output.

    Returns
    -------
    SparkShuffleResult
        ``out``, ``rows``, ``groups``, ``intact_row_proportion``, ``seed``, ``seconds``.
    """
    start = time.perf_counter()
    _pyspark()
    if spark is None:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
    src, dest = _qualify(src), _qualify(out)
    grouping, target, art = resolve_grouping(artefact, target)
    fs = _HadoopFS(spark, dest)
    if fs.exists(dest) and not overwrite:
        raise StoreError(f"Refusing to overwrite existing {dest!r} (pass overwrite=True to "
                         "replace it).")
    try:
        df = spark.read.parquet(src)
    except Exception as exc:  # AnalysisException for a missing path, many others
        raise DataError(f"Unreadable Parquet dataset {src!r}: {type(exc).__name__}: "
                        f"{str(exc).splitlines()[0]}") from None
    seed_root = check_seed_sequence(random_state)
    record: dict = {}
    surrogate = spark_surrogate(df, art if art is not None else grouping, target=target,
                                random_state=seed_root, remedies=remedies,
                                max_suppressed_share=max_suppressed_share, record=record)
    tmp = _sibling(dest, "tmp")
    try:
        try:
            surrogate.write.mode("errorifexists").parquet(tmp)
        except Exception as exc:
            if _SLOT_ERROR not in str(exc):
                raise
            raise DataError(f"Cannot shuffle {src!r}: {_SLOT_ERROR}.") from None
        written = spark.read.parquet(tmp)
        expected = _class_sizes(df, target)
        got = _class_sizes(written, target)
        if got != expected:
            raise DataError(f"The Spark surrogate's class counts {got} differ from the "
                            f"source's {expected}: the source was not deterministic "
                            "(persist or checkpoint it) or changed while being read.")
        recipe = release_recipe(art, remedies)
        # the source in the release's domain, with the rung the surrogate was made with
        published = df if recipe is None else _spark_remedied(df, recipe.mixed(
            [g.get("recipe_rung", 0) for g in record["suppression"]["groups"]],
            grouping.groups), target, grouping)
        p_anon = spark_intact_row_proportion(published, written) if metrics else None
        _publish(fs, tmp, dest, overwrite)
    except BaseException:
        fs.delete(tmp)
        raise
    return SparkShuffleResult(
        out=dest, rows=int(sum(expected.values())), groups=grouping.k,
        intact_row_proportion=p_anon,
        seed=random_state if isinstance(random_state, int) else
        seed_root.entropy if random_state is None else None,
        seconds=time.perf_counter() - start, suppression=record.get("suppression"))


def _publish(fs: _HadoopFS, tmp: str, dest: str, overwrite: bool) -> None:
    if not fs.exists(dest):
        fs.rename(tmp, dest)
        return
    if not overwrite:
        raise StoreError(f"Refusing to overwrite existing {dest!r} (pass overwrite=True to "
                         "replace it).")
    old = _sibling(dest, "old")
    fs.rename(dest, old)  # the old version stays whole until the new one is in place
    try:
        fs.rename(tmp, dest)
    except BaseException:
        fs.rename(old, dest)
        raise
    fs.delete(old)
