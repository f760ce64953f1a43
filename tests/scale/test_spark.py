"""GoldenEye surrogates on Spark: PySpark in local mode (``local[2]``, 1 GB driver).

One Spark session for the module; tables are small. The module is marked slow: the JVM
start-up alone takes 10-20 s and each surrogate runs a handful of Spark jobs.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import shutil
import sys
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark", reason="needs the 'spark' extra")

from astrid_airflow._errors import (
    DataError,
    SchemaMismatchError,
    StoreError,
)
from astrid_airflow.release._artefact import GroupingArtefact
from astrid_airflow.release._metrics import intact_row_proportion
from astrid_airflow.release._surrogate import make_surrogate
from astrid_airflow.scale import _spark
from astrid_airflow.scale._spark import (
    spark_intact_row_proportion,
    spark_shuffle_parquet,
    spark_surrogate,
)

pytestmark = [
    pytest.mark.slow,
    # PySpark 4.3 warns that it does not fully support pandas 3 (see docs/scale-out.md)
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas"),
    pytest.mark.filterwarnings("ignore:The copy keyword is deprecated"),
]


@pytest.fixture(scope="module")
def spark():
    if shutil.which("java") is None:
        message = "PySpark needs a Java runtime (scripts/ci_system_deps.sh installs one)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from pyspark.sql import SparkSession

    # Python UDF workers (one test) must run this interpreter, not the first python3
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        session = (SparkSession.builder.master("local[2]").appName("astrid-tests")
                   .config("spark.driver.memory", "1g")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", "4")
                   .config("spark.sql.execution.arrow.pyspark.enabled", "true")

                   .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def categorical_table(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Few levels per column, so rows repeat and P_anon is far from 0 and 1."""
    rng = np.random.default_rng(seed)
    y = rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2])
    return pd.DataFrame({
        "a": rng.integers(0, 3, n),
        "b": (rng.random(n) < 0.4).astype(np.int64) + (y == "p"),
        "c": rng.choice(["u", "v"], n),
        "d": rng.integers(0, 2, n).astype(float),
        "e": np.where(rng.random(n) < 0.1, None, rng.choice(["s", "t"], n)),
        "y": y,
    })


GROUPS = [["a", "b"], ["c"], ["d", "e"]]
GROUPING = "a,b;c;d,e"


def rows_of(frame: pd.DataFrame, cols) -> collections.Counter:
    return collections.Counter(
        tuple("<NA>" if pd.isna(v) else v for v in row)
        for row in frame[cols].itertuples(index=False))


def assert_goldeneye(orig: pd.DataFrame, surr: pd.DataFrame, groups, target="y") -> None:
    assert list(surr.columns) == list(orig.columns)
    assert len(surr) == len(orig)
    assert collections.Counter(surr[target]) == collections.Counter(orig[target])
    for label in orig[target].unique():
        o, s = orig[orig[target] == label], surr[surr[target] == label]
        for c in orig.columns:
            assert rows_of(s, [c]) == rows_of(o, [c]), (label, c)
        for cols in groups:  # a group's values travel together: whole original parts
            assert rows_of(s, cols) == rows_of(o, cols), (label, cols)


@pytest.mark.parametrize("window_rows", [1 << 16, 8], ids=["one-bucket", "many-buckets"])
def test_surrogate_keeps_class_multisets_and_aligned_groups(spark, monkeypatch, window_rows):
    monkeypatch.setattr(_spark, "WINDOW_ROWS", window_rows)
    table = categorical_table()
    df = spark.createDataFrame(table)
    out = spark_surrogate(df, GROUPING, target="y", random_state=5)
    assert out.schema == df.schema
    surr = out.toPandas()
    assert_goldeneye(table, surr, GROUPS)
    # it did shuffle: some rows are broken up (identity would keep all of them)
    assert intact_row_proportion(table, surr) < 0.9


def test_same_seed_same_surrogate_other_seed_differs(spark):
    table = categorical_table(200, seed=1)
    df = spark.createDataFrame(table)

    def run(seed):
        frame = spark_surrogate(df, GROUPING, target="y", random_state=seed).toPandas()
        return sorted(map(repr, frame.itertuples(index=False)))

    first = run(3)
    assert run(3) == first
    assert run(4) != first


@pytest.mark.parametrize("window_rows", [1 << 16, 1], ids=["one-bucket", "four-buckets"])
def test_permutations_are_uniform_and_independent(spark, monkeypatch, window_rows):
    # 600 classes of 3 rows; a and b both hold the row number within the class. In the
    # surrogate, the pairing of a's and b's values in a class is the permutation
    # pi_b o pi_a^-1, uniform over the 6 permutations if the two are uniform and
    # independent. One Spark run gives 600 independent draws.
    monkeypatch.setattr(_spark, "WINDOW_ROWS", window_rows)
    n_classes = 600
    table = pd.DataFrame({"a": np.tile([0, 1, 2], n_classes),
                          "b": np.tile([0, 1, 2], n_classes),
                          "y": np.repeat(np.arange(n_classes), 3)})
    surr = spark_surrogate(spark.createDataFrame(table), "a;b", target="y",
                           random_state=17).toPandas()
    perms = collections.Counter(
        tuple(g.sort_values("a")["b"]) for _, g in surr.groupby("y"))
    assert set(perms) <= set(itertools.permutations(range(3)))
    assert sum(perms.values()) == n_classes
    expected = n_classes / 6
    chi2 = sum((perms.get(p, 0) - expected) ** 2 / expected
               for p in itertools.permutations(range(3)))
    assert chi2 < 20.5, perms  # chi-square, 5 df: P(chi2 > 20.5) = 0.001


def test_intact_row_proportion_in_spark_matches_local(spark):
    table = categorical_table(600, seed=2)
    df = spark.createDataFrame(table)
    # local reference distribution of P_anon under the same grouping
    local = np.array([intact_row_proportion(table, s) for s in
                      make_surrogate(table, GROUPING, target="y", random_state=0,
                                     n_copies=200)])
    measured = []
    for seed in (1, 2, 3):
        out = spark_surrogate(df, GROUPING, target="y", random_state=seed)
        p_spark = spark_intact_row_proportion(df, out)
        # the Spark statistic equals the local one on the same surrogate, exactly
        assert p_spark == pytest.approx(intact_row_proportion(table, out.toPandas()),
                                        abs=1e-12)
        measured.append(p_spark)
    se = local.std(ddof=1) / math.sqrt(len(measured))
    assert 0.05 < local.mean() < 0.95
    assert abs(np.mean(measured) - local.mean()) < 4 * se, (measured, local.mean(), se)


def test_intact_row_proportion_edge_values(spark):
    table = categorical_table(100, seed=4)
    df = spark.createDataFrame(table)
    assert spark_intact_row_proportion(df, df) == 1.0
    other = spark.createDataFrame(table.assign(y="zz"))
    assert spark_intact_row_proportion(df, other) == 0.0
    with pytest.raises(DataError, match="lacks column"):
        spark_intact_row_proportion(df, df.drop("c"))


def artefact_for(table: pd.DataFrame, groups, target: str = "y") -> GroupingArtefact:
    result = {"grouping": groups, "k": len(groups), "table": [], "target": target,
              "classifier": {"preset": "svm"}, "scoring": "accuracy", "alpha": 0.05,
              "n_search": 10, "n_test": 20, "random_state": 0}
    return GroupingArtefact.from_result(result, table)


def test_shuffle_parquet_writes_atomically_and_measures(spark, tmp_path):
    import pyarrow.parquet as pq

    table = categorical_table(300, seed=3)
    src = tmp_path / "batch.parquet"
    table.to_parquet(src, index=False)
    art = artefact_for(table, GROUPS)
    out = tmp_path / "out" / "surrogate.parquet"
    res = spark_shuffle_parquet(src, art, out, random_state=9, spark=spark)
    assert res.out == str(out) and res.rows == 300 and res.groups == 3 and res.seed == 9
    surr = pq.read_table(out).to_pandas()
    assert_goldeneye(table, surr[table.columns], GROUPS)
    assert res.intact_row_proportion == pytest.approx(intact_row_proportion(table, surr))
    assert set(res.to_dict()) == {"out", "rows", "groups", "intact_row_proportion", "seed",
                                  "seconds", "suppression"}  # suppression: issue 28
    assert sorted(os.listdir(out.parent)) == ["surrogate.parquet"]  # no temporary left
    # same seed and files: the same surrogate
    again = spark_shuffle_parquet(src, art, tmp_path / "again", random_state=9,
                                  spark=spark, metrics=False)
    assert again.intact_row_proportion is None
    assert rows_of(pq.read_table(tmp_path / "again").to_pandas(), list(table.columns)) == \
        rows_of(surr, list(table.columns))
    # an existing output is refused before any work, and replaced on request
    with pytest.raises(StoreError, match="Refusing to overwrite"):
        spark_shuffle_parquet(src, art, out, random_state=1, spark=spark)
    spark_shuffle_parquet(src, art, out, random_state=1, spark=spark, overwrite=True,
                          metrics=False)
    assert sorted(os.listdir(out.parent)) == ["surrogate.parquet"]
    assert rows_of(pq.read_table(out).to_pandas(), list(table.columns)) != \
        rows_of(surr, list(table.columns))


def test_shuffle_parquet_rejects_bad_input_and_publishes_nothing(spark, tmp_path):
    table = categorical_table(60, seed=6)
    art = artefact_for(table, GROUPS)
    src = tmp_path / "renamed.parquet"
    table.rename(columns={"c": "c2"}).to_parquet(src, index=False)
    with pytest.raises(SchemaMismatchError, match="missing column"):
        spark_shuffle_parquet(src, art, tmp_path / "o1", random_state=0, spark=spark)
    with pytest.raises(DataError, match="Unreadable Parquet"):
        spark_shuffle_parquet(tmp_path / "nope.parquet", art, tmp_path / "o2",
                              random_state=0, spark=spark)
    missing = tmp_path / "missing_class.parquet"
    table.assign(y=table["y"].where(table.index % 7 != 0, None)).to_parquet(missing,
                                                                            index=False)
    with pytest.raises(DataError, match="missing value"):
        spark_shuffle_parquet(missing, GROUPING, tmp_path / "o3", target="y",
                              random_state=0, spark=spark)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "missing_class.parquet", "renamed.parquet"]


def test_spark_surrogate_bad_input(spark):
    table = categorical_table(30)
    df = spark.createDataFrame(table)
    with pytest.raises(DataError, match=r"pyspark\.sql\.DataFrame"):
        spark_surrogate(table, GROUPING, target="y", random_state=0)
    with pytest.raises(DataError, match="reserved"):
        spark_surrogate(df.withColumnRenamed("c", "__astrid_rid"), "a,b;__astrid_rid;d,e",
                        target="y", random_state=0)
    with pytest.raises(DataError, match="not in the table"):
        spark_surrogate(df.drop("y"), GROUPING, target="y", random_state=0)


def test_a_changing_input_fails_loudly_instead_of_corrupting(spark):
    import random

    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    # the class column is redrawn on every evaluation: the counting job and the
    # surrogate job see different classes, so slots cannot be filled one part per group
    draw = F.udf(lambda _: random.choice("pq"), StringType()).asNondeterministic()
    df = spark.range(400).select(F.col("id").alias("a"), (F.col("id") * 2).alias("b"),
                                 draw("id").alias("y"))
    out = spark_surrogate(df, "a;b", target="y", random_state=0)
    with pytest.raises(Exception, match="without exactly one part per group"):
        out.collect()


@pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")
def test_shuffle_operator_targets_spark(spark, tmp_path):
    """The shuffle operator's ``engine="spark"`` stages a Spark surrogate of a Parquet
    dataset and reports Spark's intact-row proportion."""
    import types

    import pyarrow.parquet as pq
    from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

    from astrid_airflow.release._store import ArtefactStore

    table = categorical_table(300, seed=4)
    src = tmp_path / "batch.parquet"
    table.to_parquet(src, index=False)
    ArtefactStore(tmp_path / "store").save("m", artefact_for(table, GROUPS))
    ti = types.SimpleNamespace(dag_id="d", run_id="r1", task_id="shuffle", map_index=-1)
    out = tmp_path / "staging" / "surrogate.parquet"
    xcom = GoldenEyeShuffleOperator(
        task_id="shuffle", table=str(src), store=str(tmp_path / "store"), artefact="m@v0001",
        out=str(out), engine="spark").execute({"ti": ti, "run_id": "r1"})
    assert xcom["engine"] == "spark" and xcom["rows"] == 300
    surr = pq.read_table(out).to_pandas()
    assert_goldeneye(table, surr[table.columns], GROUPS)
    assert xcom["metrics"]["intact_row_proportion"] == pytest.approx(
        intact_row_proportion(table, surr))


def _assert_same_multisets(spark, table, recipe, df):
    """The artefact of ``GROUPS`` with ``recipe``; its local and Spark surrogates (seed 4)
    hold the same multiset of each group's tuples within each class."""
    import dataclasses

    from astrid_airflow import GroupingArtefact, make_surrogate

    result = {"grouping": GROUPS, "k": 3, "table": [], "target": "y", "classifier": "nb",
              "scoring": "accuracy", "alpha": 0.05, "n_search": 20, "n_test": 40,
              "random_state": 0}
    art = dataclasses.replace(
        GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z"),
        release={"status": "given", "recipe": recipe.to_dict()})
    local = make_surrogate(table, art, random_state=4)
    remote = spark_surrogate(df, art, random_state=4).toPandas()
    for label in table["y"].unique():
        lo, re = local[local["y"] == label], remote[remote["y"] == label]
        for cols in GROUPS:
            assert rows_of(lo, cols) == rows_of(re, cols), (label, cols)
    return art, remote


def test_remedied_surrogate_spark_and_local_give_identical_class_multisets(spark, tmp_path):
    """Issue 17: the recipe is applied identically on the Spark and the local path."""
    from astrid_airflow import fit_recipe

    rng = np.random.default_rng(3)
    table = categorical_table(400, 3).assign(
        a=rng.integers(0, 1000, 400), d=rng.normal(size=400).round(3))
    recipe, _ = fit_recipe(table, target="y", grouping=GROUPING, k=5)
    assert {s["method"] for s in recipe.steps} >= {"bins"}
    art = _assert_same_multisets(spark, table, recipe, spark.createDataFrame(table))[0]
    raw = spark_surrogate(spark.createDataFrame(table), art, random_state=4,
                          remedies=False).toPandas()
    assert sorted(raw["a"]) == sorted(table["a"])


def test_local_suppression_is_the_same_on_spark_and_locally(spark):
    """Issue 28: one rule, two counters: the Spark path suppresses exactly the rows the
    local path does (a rare (a, b) pair and a rare (d, e) pair planted), and records it."""

    from astrid_airflow import ReleaseRecipe
    from astrid_airflow.release import repeated_rows
    from astrid_airflow.release._surrogate import release_domain

    table = categorical_table(400, 5)
    table.loc[3, ["a", "b"]] = [7, 0]
    table.loc[9, ["d", "e"]] = [5.0, None]
    recipe = ReleaseRecipe(k=5, steps=(), target="y")
    art = _given_release(table, recipe)
    # as the local shuffle counts: exact copies of a row are one person, on both paths
    assert repeated_rows(table).any()
    _, local_report = release_domain(table, recipe, "y", art.grouping,
                                     repeated=repeated_rows(table))
    assert local_report.groups[0]["suppressed_rows"] >= 1
    remote = _same_suppression_as_local(spark, table, art, local_report)
    assert not (remote["a"] == 7).any()


def _given_release(table: pd.DataFrame, recipe: Any) -> Any:
    """An artefact of ``GROUPS`` releasing ``recipe`` (a suppression budget of 0.5)."""
    import dataclasses

    from astrid_airflow import GroupingArtefact

    result = {"grouping": GROUPS, "k": 3, "table": [], "target": "y", "classifier": "nb",
              "scoring": "accuracy", "alpha": 0.05, "n_search": 20, "n_test": 40,
              "random_state": 0}
    return dataclasses.replace(
        GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z"),
        release={"status": "given", "recipe": recipe.to_dict(),
                 "policy": {"max_suppressed_share": 0.5}})


def _same_suppression_as_local(spark: Any, table: pd.DataFrame, art: Any,
                               local_report: Any) -> pd.DataFrame:
    """The Spark surrogate, after checking that it records the local report and has the
    local surrogate's per-class multisets of every group."""
    from astrid_airflow import make_surrogate

    record: dict = {}
    remote = spark_surrogate(spark.createDataFrame(table), art, random_state=4,
                             record=record).toPandas()
    assert record["suppression"] == local_report.to_dict()
    local = make_surrogate(table, art, random_state=4)
    for label in table["y"].unique():
        lo, re = local[local["y"] == label], remote[remote["y"] == label]
        for cols in GROUPS:
            assert rows_of(lo, cols) == rows_of(re, cols), (label, cols)
    return remote


def test_recipe_fallbacks_are_the_same_on_spark_and_locally(spark):
    """Issue 28: a group the recipe over-suppresses falls back to the same coarser rung
    on both paths (the same climb_rungs), with the same figures and multisets."""

    from astrid_airflow import ReleaseRecipe
    from astrid_airflow.release._surrogate import release_domain

    rng = np.random.default_rng(8)
    table = categorical_table(400, 6).assign(a=rng.integers(0, 60, 400))
    coarse = ReleaseRecipe(k=5, target="y", steps=(
        {"method": "round", "column": "a", "step": 30, "low": None, "high": None,
         "published_type": "integer"},))
    recipe = ReleaseRecipe(k=5, steps=(), target="y", fallbacks=(coarse,),
                           fallback_share=0.05)
    art = _given_release(table, recipe)
    _, local_report = release_domain(table, recipe, "y", art.grouping)
    assert local_report.recipe_rungs == [1, 0, 0]  # only (a, b) falls back
    remote = _same_suppression_as_local(spark, table, art, local_report)
    assert set(remote["a"].dropna()) <= {0, 30, 60}


def test_partitioned_groups_spark_and_local_give_identical_multisets(spark):
    """Issue 32: the partition's tree of cuts routes rows the same on both paths."""
    from astrid_airflow import ReleaseRecipe
    from astrid_airflow.pipeline._fit_partition import fit_partition

    rng = np.random.default_rng(5)
    table = categorical_table(400, 5).assign(
        a=rng.normal(size=400).round(3), b=rng.integers(0, 1000, 400))
    recipe = ReleaseRecipe(k=5, target="y", steps=(
        fit_partition(table[["a", "b"]], table["y"].to_numpy(), 5),
        fit_partition(table[["d", "e"]], table["y"].to_numpy(), 5)))
    remote = _assert_same_multisets(spark, table, recipe,
                                    spark.createDataFrame(table).repartition(3))[1]
    cells = {tuple("<NA>" if v is None else v for v in c) for s in recipe.steps
             for c in s["cells"]}
    assert set(rows_of(remote, ["a", "b"])) <= cells
    assert set(rows_of(remote, ["d", "e"])) <= cells


def test_suppression_under_an_attacker_model_is_the_same_on_spark_and_locally(spark):
    """Issue 49: with b and e insensitive and d sensitive, the windows count the
    quasi-identifier projections (a), (c), (e-less d, e group: none) and d's diversity,
    and suppress exactly the rows the local path does."""
    from astrid_airflow import ReleaseRecipe
    from astrid_airflow.release import AttackerModel
    from astrid_airflow.release._surrogate import release_domain

    table = categorical_table(400, 5)
    table.loc[3, ["a", "b"]] = [7, 0]  # a rare a: suppressed with its group
    table.loc[:40, "d"] = 1.0  # a sensitive value shown alone next to e
    model = AttackerModel(quasi_identifiers=("a", "c", "e"), sensitive=("d",))
    recipe = ReleaseRecipe(k=5, steps=(), target="y", attacker_model=model)
    art = _given_release(table, recipe)
    _, local_report = release_domain(table, recipe, "y", art.grouping)
    plain = release_domain(table, ReleaseRecipe(k=5, steps=(), target="y"), "y",
                           art.grouping)[1]
    assert local_report.to_dict() != plain.to_dict()  # the model changes what is kept
    assert local_report.groups[0]["suppressed_rows"] >= 1
    remote = _same_suppression_as_local(spark, table, art, local_report)
    assert not (remote["a"] == 7).any()


def test_synthesised_groups_spark_and_local_give_identical_multisets(spark):
    """Issue 51: a synthesised group draws by (class, rank within class), so the Spark
    path, which applies the recipe partition by partition, publishes the same per-class
    multiset of synthetic tuples as the local path; no row of it is suppressed."""
    from astrid_airflow import ReleaseRecipe
    from astrid_airflow.release import fit_synthesis

    rng = np.random.default_rng(6)
    table = categorical_table(400, 6).assign(
        a=rng.normal(size=400), b=rng.integers(0, 1000, 400))
    step = fit_synthesis(table[["a", "b"]], table["y"], ["a", "b"], ["float", "integer"],
                         min_count=5, random_state=np.random.SeedSequence(2))
    recipe = ReleaseRecipe(k=5, target="y", steps=(step,))
    remote = _assert_same_multisets(spark, table, recipe,
                                    spark.createDataFrame(table).repartition(3))[1]
    assert remote["a"].notna().all() and remote["b"].notna().all()
    assert not set(remote["a"]) & set(table["a"])  # no real value drawn
