"""GoldenEye surrogate tables: invariants, determinism, files, atomicity, schema checks."""

from __future__ import annotations

import collections
import os
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from astrid_airflow import (
    DataError,
    GroupingError,
    ParameterError,
    SchemaMismatchError,
    StoreError,
    make_surrogate,
    shuffle_file,
)
from astrid_airflow.engine import group_permutations
from astrid_airflow.release import _surrogate
from astrid_airflow.release._artefact import GroupingArtefact
from astrid_airflow.release._surrogate import ProtectsNothingWarning, surrogate_paths

GROUPING = "num,cat;txt;flag;cnt"


def mixed_table(n: int = 120, seed: int = 0) -> pd.DataFrame:
    """Every dtype a surrogate must carry: float with NaN, categorical, string with
    missing values, bool, nullable integer; three unbalanced classes."""
    rng = np.random.default_rng(seed)
    num = rng.normal(size=n)
    num[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "num": num,
        "cat": pd.Categorical(rng.choice(["lo", "mid", "hi"], n),
                              categories=["lo", "mid", "hi", "unused"]),
        "txt": pd.Series(rng.choice(["p", "q", "r", None], n), dtype="str"),
        "flag": rng.random(n) < 0.3,
        "cnt": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 9, n)),
                        dtype="Int64"),
        "y": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
    })


def artefact_for(table: pd.DataFrame, grouping: list[list[str]], target: str = "y"
                 ) -> GroupingArtefact:
    result = {"grouping": grouping, "k": len(grouping), "table": [], "target": target,
              "classifier": {"preset": "svm"}, "scoring": "accuracy", "alpha": 0.05,
              "n_search": 10, "n_test": 20, "random_state": 0}
    return GroupingArtefact.from_result(result, table)


def multiset(values: pd.Series) -> collections.Counter:
    # NaN/NA/None all count as one "missing" key so multisets compare exactly.
    return collections.Counter("<NA>" if pd.isna(v) else v for v in values)


def assert_goldeneye(orig: pd.DataFrame, surr: pd.DataFrame, groups, target="y") -> None:
    assert list(surr.columns) == list(orig.columns)
    assert surr.dtypes.to_dict() == orig.dtypes.to_dict()
    assert surr.index.equals(orig.index)
    # The rows are published in a random order: the class keeps its multiset, not its
    # positions (tests/release/test_surrogate_row_order.py).
    assert multiset(surr[target]) == multiset(orig[target])
    for label in orig[target].unique():
        o, s = orig[orig[target] == label], surr[surr[target] == label]
        for c in orig.columns:
            assert multiset(s[c]) == multiset(o[c]), (label, c)
        for cols in groups:  # each group's rows are whole original rows of the class
            assert group_rows(s, cols) == group_rows(o, cols), (label, cols)


def group_rows(frame: pd.DataFrame, cols) -> collections.Counter:
    return collections.Counter(tuple("<NA>" if pd.isna(v) else v for v in row)
                               for row in frame[list(cols)].itertuples(index=False))


@pytest.mark.parametrize("n_copies", [1, 3])
def test_per_class_multisets_and_group_alignment_pandas(n_copies):
    t = mixed_table()
    out = make_surrogate(t, GROUPING, target="y", random_state=1, n_copies=n_copies)
    copies = out if n_copies > 1 else [out]
    assert len(copies) == n_copies
    groups = [g.split(",") for g in GROUPING.split(";")]
    for s in copies:
        assert_goldeneye(t, s, groups)
        assert not s["num"].equals(t["num"])  # something moved
    assert not copies[0].equals(copies[-1]) or n_copies == 1


def test_arrow_table_in_arrow_table_out_and_same_as_pandas():
    t = mixed_table()
    arrow = pa.Table.from_pandas(t, preserve_index=False)
    s_arrow = make_surrogate(arrow, GROUPING, target="y", random_state=7)
    s_pandas = make_surrogate(t, GROUPING, target="y", random_state=7)
    assert isinstance(s_arrow, pa.Table)
    assert s_arrow.schema == arrow.schema
    back = s_arrow.to_pandas()
    assert_goldeneye(t, back, [g.split(",") for g in GROUPING.split(";")])
    pd.testing.assert_frame_equal(back, s_pandas)


def test_grouped_columns_stay_aligned_and_groups_move_independently():
    rng = np.random.default_rng(3)
    n = 400
    a = rng.normal(size=n)
    t = pd.DataFrame({"a": a, "a2": a * 2 + 1, "b": rng.normal(size=n),
                      "y": rng.integers(0, 2, n)})
    s = make_surrogate(t, "a,a2;b", target="y", random_state=0)
    np.testing.assert_allclose(s["a2"], s["a"] * 2 + 1)
    # b moved independently of a: the original (a, b) pairs are mostly broken.
    pairs = set(zip(t["a"], t["b"]))
    assert sum((x, z) in pairs for x, z in zip(s["a"], s["b"])) < n * 0.05


def test_permutations_are_within_class_and_int32():
    codes = np.repeat(np.array([0, 1, 2], dtype=np.int8), [5, 7, 1])
    perms = group_permutations(codes, 3, np.random.SeedSequence(0))
    assert perms.shape == (3, 13) and perms.dtype == np.int32
    for p in perms:
        assert sorted(p) == list(range(13))
        np.testing.assert_array_equal(codes[p], codes)


def test_unseen_class_is_shuffled_within_its_own_class():
    t = mixed_table(90, seed=1)
    art = artefact_for(t, [["num", "cat"], ["txt"], ["flag"], ["cnt"]])
    batch = mixed_table(150, seed=2)
    batch.loc[batch.index[::3], "y"] = "new"
    assert "new" not in art.classes
    s = make_surrogate(batch, art, random_state=5)
    assert_goldeneye(batch, s, [list(g) for g in art.grouping.groups])
    assert not s.loc[s["y"] == "new", "num"].reset_index(drop=True).equals(
        batch.loc[batch["y"] == "new", "num"].reset_index(drop=True))


def test_seed_determinism_and_copy_consistency():
    t = mixed_table()
    a = make_surrogate(t, GROUPING, target="y", random_state=11)
    b = make_surrogate(t, GROUPING, target="y", random_state=11)
    c = make_surrogate(t, GROUPING, target="y", random_state=12)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    three = make_surrogate(t, GROUPING, target="y", random_state=11, n_copies=3)
    pd.testing.assert_frame_equal(three[0], a)  # copy 0 == the single copy
    assert not three[1].equals(three[2])


def test_one_group_grouping_warns_and_keeps_rows():
    t = mixed_table(40)
    attrs = ",".join(c for c in t.columns if c != "y")
    with pytest.warns(ProtectsNothingWarning, match="protects nothing"):
        s = make_surrogate(t, attrs, target="y", random_state=0)
    rows = lambda f: collections.Counter(map(str, f.itertuples(index=False)))  # noqa: E731
    assert rows(s) == rows(t)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_shuffle_file_matches_make_surrogate_and_is_byte_identical(tmp_path, fmt):
    t = mixed_table()
    src = tmp_path / "in.parquet"
    t.to_parquet(src)
    one, two, other = (tmp_path / f"{n}.{fmt}" for n in ("one", "two", "other"))
    assert shuffle_file(src, GROUPING, one, target="y", random_state=4) == str(one)
    shuffle_file(src, GROUPING, two, target="y", random_state=4)
    shuffle_file(src, GROUPING, other, target="y", random_state=5)
    assert one.read_bytes() == two.read_bytes()
    assert one.read_bytes() != other.read_bytes()
    expected = make_surrogate(t, GROUPING, target="y", random_state=4)
    got = pd.read_parquet(one) if fmt == "parquet" else pd.read_csv(one)
    if fmt == "parquet":
        pd.testing.assert_frame_equal(got, expected)
    else:
        np.testing.assert_allclose(got["num"], expected["num"])
        assert list(got["cat"]) == list(expected["cat"].astype(str))


def test_shuffle_file_streams_in_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(_surrogate, "CHUNK_ROWS", 7)
    t = mixed_table(100)
    src = tmp_path / "in.csv"
    t.to_csv(src, index=False)
    out = tmp_path / "out.parquet"
    shuffle_file(src, GROUPING, out, target="y", random_state=2)
    assert pq.ParquetFile(out).metadata.num_row_groups == 15  # ceil(100 / 7)
    arrow_in = _surrogate.read_arrow(src)
    expected = make_surrogate(arrow_in, GROUPING, target="y", random_state=2)
    assert pq.read_table(out).equals(expected)


def test_shuffle_file_copies(tmp_path):
    t = mixed_table()
    src = tmp_path / "in.parquet"
    t.to_parquet(src)
    outs = shuffle_file(src, GROUPING, tmp_path / "s.parquet", target="y", random_state=0,
                        n_copies=2)
    assert outs == surrogate_paths(tmp_path / "s.parquet", 2)
    assert [os.path.basename(p) for p in outs] == ["s-1.parquet", "s-2.parquet"]
    copies = make_surrogate(t, GROUPING, target="y", random_state=0, n_copies=2)
    for path, expected in zip(outs, copies):
        pd.testing.assert_frame_equal(pd.read_parquet(path), expected)


def test_exception_mid_write_leaves_no_file(tmp_path, monkeypatch):
    t = mixed_table()
    src = tmp_path / "in.parquet"
    t.to_parquet(src)
    real = _surrogate._write_shuffled
    calls = []

    def failing(table, grouping, perms, target, kind, path):
        calls.append(path)
        if len(calls) == 2:  # first copy written completely, second dies half-way
            with open(path, "wb") as fh:
                fh.write(b"PAR1 partial")
            raise RuntimeError("disk on fire")
        real(table, grouping, perms, target, kind, path)

    monkeypatch.setattr(_surrogate, "_write_shuffled", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        shuffle_file(src, GROUPING, tmp_path / "s.parquet", target="y", n_copies=2)
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]  # no output, no temp file


def test_before_publish_failure_publishes_nothing(tmp_path):
    t = mixed_table()
    src = tmp_path / "in.parquet"
    t.to_parquet(src)
    seen = []

    def gate(tmps):
        seen.extend(tmps)
        assert all(os.path.getsize(f.path) > 0 for f in tmps)
        raise DataError("gate failed")

    with pytest.raises(DataError, match="gate failed"):
        shuffle_file(src, GROUPING, tmp_path / "s.csv", target="y", before_publish=gate)
    assert len(seen) == 1 and seen[0].kind == "csv"
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


def test_existing_output_is_refused_unless_overwrite(tmp_path):
    t = mixed_table()
    src = tmp_path / "in.parquet"
    t.to_parquet(src)
    out = tmp_path / "s.parquet"
    out.write_bytes(b"keep me")
    with pytest.raises(StoreError, match="overwrite"):
        shuffle_file(src, GROUPING, out, target="y", random_state=0)
    assert out.read_bytes() == b"keep me"
    shuffle_file(src, GROUPING, out, target="y", random_state=0, overwrite=True)
    assert len(pd.read_parquet(out)) == len(t)


def test_schema_mismatch_is_an_error_for_tables_and_files(tmp_path):
    t = mixed_table()
    art = artefact_for(t, [["num", "cat"], ["txt"], ["flag"], ["cnt"]])
    with pytest.raises(SchemaMismatchError, match="unexpected column"):
        make_surrogate(t.assign(extra=1), art, random_state=0)
    with pytest.raises(SchemaMismatchError, match="missing column"):
        make_surrogate(t.drop(columns=["txt"]), art, random_state=0)
    drifted = t.assign(num=t["num"].astype(str))
    with pytest.raises(SchemaMismatchError, match="'num'"):
        make_surrogate(pa.Table.from_pandas(drifted, preserve_index=False), art)
    src = tmp_path / "bad.parquet"
    drifted.to_parquet(src)
    with pytest.raises(SchemaMismatchError, match="'num'"):
        shuffle_file(src, art, tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()


def test_bad_input_errors(tmp_path):
    t = mixed_table()
    with pytest.raises(ParameterError, match="target"):
        make_surrogate(t, GROUPING)
    with pytest.raises(GroupingError, match="no group"):
        make_surrogate(t, "num,cat;txt", target="y")
    with pytest.raises(DataError, match="not in the table"):
        make_surrogate(t, GROUPING, target="nope")
    with pytest.raises(ParameterError, match="n_copies"):
        make_surrogate(t, GROUPING, target="y", n_copies=0)
    with pytest.raises(DataError, match="missing value"):
        make_surrogate(t.assign(y=t["y"].where(t.index > 0)), GROUPING, target="y")
    with pytest.raises(DataError, match="missing value"):
        make_surrogate(pa.table({"a": [1, 2], "b": [3, 4], "y": [0.0, float("nan")]}),
                       "a;b", target="y")
    with pytest.raises(DataError, match="DataFrame"):
        make_surrogate(t.to_numpy(), GROUPING, target="y")
    # inputs are what `astrid learn` reads (issue 18: ARFF too); outputs Parquet or CSV
    with pytest.raises(DataError, match=r"expected a \.csv, \.parquet or \.arff"):
        shuffle_file(tmp_path / "in.json", GROUPING, tmp_path / "o.parquet", target="y")
    t.to_parquet(tmp_path / "in.parquet")
    with pytest.raises(DataError, match=r"expected a \.parquet"):
        shuffle_file(tmp_path / "in.parquet", GROUPING, tmp_path / "o.xlsx", target="y")
    with pytest.raises(DataError, match="no such file"):
        shuffle_file(tmp_path / "missing.parquet", GROUPING, tmp_path / "o.parquet",
                     target="y")
    assert sorted(os.listdir(tmp_path)) == ["in.parquet"]


def test_fsspec_memory_output():
    fsspec = pytest.importorskip("fsspec")
    t = mixed_table(30)
    fs = fsspec.filesystem("memory")
    with fs.open("/surr-test/in.parquet", "wb") as fh:
        t.to_parquet(fh)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shuffle_file("memory://surr-test/in.parquet", GROUPING, "memory://surr-test/out.parquet",
                     target="y", random_state=0)
    with fs.open("/surr-test/out.parquet", "rb") as fh:
        got = pd.read_parquet(fh)
    pd.testing.assert_frame_equal(got, make_surrogate(t, GROUPING, target="y", random_state=0))
