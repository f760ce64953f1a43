"""Data fusion by class and collection plans (issue 11; ASTRID paper, Sec. 6.3)."""

from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow._errors import DataError, ParameterError, SchemaMismatchError
from astrid_airflow.cli import main
from astrid_airflow.engine._grouping import Grouping
from astrid_airflow.release._artefact import GroupingArtefact
from astrid_airflow.scale._fusion import fuse_parts, fused_class_sizes
from astrid_airflow.scale._plan import collection_plan
from tests.release.test_artefact import reference_table, result_dict

GROUPS = (("a1", "a2"), ("a3",), ("a4",))


@pytest.fixture
def table() -> pd.DataFrame:
    return reference_table(40)


@pytest.fixture
def artefact(table) -> GroupingArtefact:
    return GroupingArtefact.from_result(result_dict(GROUPS), table,
                                        created_at="2026-01-01T00:00:00Z")


def split_parts(table: pd.DataFrame, groups=GROUPS, seed: int = 0) -> list[pd.DataFrame]:
    """One part per group, each from an independently shuffled copy of the rows."""
    rng = np.random.default_rng(seed)
    return [table.iloc[rng.permutation(len(table))][[*g, "class"]].reset_index(drop=True)
            for g in groups]


def per_class_multiset(frame: pd.DataFrame, columns) -> dict:
    """class -> Counter of the row tuples of ``columns``."""
    out: dict = {}
    for label, rows in frame.groupby("class", observed=True):
        out[label] = Counter(map(tuple, rows[list(columns)].astype(object).to_numpy()))
    return out


# ------------------------------------------------------------------------- the fusion

def test_full_size_without_replacement_keeps_every_parts_per_class_multiset(table, artefact):
    parts = split_parts(table)
    fused, report = fuse_parts(parts, artefact, random_state=3)
    assert list(fused.columns) == list(table.columns)  # the artefact's column order
    assert report.rows == len(fused) == len(table)
    assert report.rule == "largest-without-replacement" and not report.any_replacement
    assert report.rows_per_class == table["class"].value_counts().to_dict()
    for g, part in zip(GROUPS, parts):
        assert per_class_multiset(fused, g) == per_class_multiset(part, g)
    # Fusion really pairs rows afresh: the rows of the original table do not all survive.
    assert Counter(map(tuple, fused.astype(object).to_numpy())) != \
        Counter(map(tuple, table.astype(object).to_numpy()))
    # Column dtypes come from the parts.
    assert fused.dtypes.to_dict() == table.dtypes.to_dict()


@settings(max_examples=25, deadline=None)
@given(counts=st.lists(st.integers(1, 12), min_size=2, max_size=4),
       cuts=st.sets(st.integers(1, 3)), seed=st.integers(0, 2**32 - 1))
def test_property_per_class_multisets(counts, cuts, seed):
    # Classes of different sizes, any grouping of four attributes whose values encode the
    # row's class: a pairing across classes would show up in the multisets.
    labels = np.repeat(np.arange(len(counts)), counts)
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"a{j}": labels * 100 + rng.integers(0, 3, labels.size)
                          for j in range(1, 5)})
    frame["class"] = labels
    grouping = Grouping.from_cuts(["a1", "a2", "a3", "a4"], cuts)
    d = result_dict(grouping.to_list())
    d["classes"] = list(range(len(counts)))
    art = GroupingArtefact.from_result(d, frame, created_at="2026-01-01T00:00:00Z")
    parts = split_parts(frame, grouping.groups, seed % 1000)
    fused, report = fuse_parts(parts, art, random_state=seed)
    assert not report.any_replacement and len(fused) == len(frame)
    for g, part in zip(grouping.groups, parts):
        assert per_class_multiset(fused, g) == per_class_multiset(part, g)
    assert ((fused[["a1", "a2", "a3", "a4"]] // 100).to_numpy() ==
            fused[["class"]].to_numpy()).all()


def test_smaller_parts_default_rule_and_within_class_rows(table, artefact):
    # Part sizes differ: the default is the largest size that repeats no row, with the
    # pooled class shares; each part's draw is a sub-multiset of its rows of that class.
    rng = np.random.default_rng(1)
    parts = [table.iloc[rng.choice(len(table), n, replace=False)][[*g, "class"]]
             for g, n in zip(GROUPS, (40, 25, 31))]
    counts = [[int((p["class"] == c).sum()) for c in ("+", "-")] for p in parts]
    expected = fused_class_sizes(counts)
    fused, report = fuse_parts(parts, artefact, random_state=0)
    assert [report.rows_per_class[c] for c in ("+", "-")] == expected
    assert all(n <= min(col) for n, col in zip(expected, zip(*counts)))
    assert not report.any_replacement
    for g, part in zip(GROUPS, parts):
        have, got = per_class_multiset(part, g), per_class_multiset(fused, g)
        for c in got:
            assert not got[c] - have[c]  # sub-multiset of the part's rows of class c


def test_fused_class_sizes_rule():
    # Pooled shares 150:250; the fewest rows per class are 50 and 100 -> N = 133.
    assert fused_class_sizes([[100, 100], [50, 150]]) == [50, 83]
    # Equal parts: everything.
    assert fused_class_sizes([[7, 3], [7, 3]]) == [7, 3]
    # A requested total is split by the pooled shares (largest remainders).
    assert fused_class_sizes([[100, 100], [50, 150]], 10) == [4, 6]
    assert fused_class_sizes([[1, 1], [1, 1]], 3) == [2, 1]
    assert sum(fused_class_sizes([[13, 29, 5], [8, 40, 2]], 1000)) == 1000


def test_n_rows_and_replacement(table, artefact):
    parts = split_parts(table)
    parts[1] = parts[1].iloc[:12]  # group 2 is now short of rows
    fused, report = fuse_parts(parts, artefact, n_rows=40, random_state=5)
    assert report.rule == "n_rows" and report.rows == 40 == len(fused)
    need = report.rows_per_class
    for part in report.parts:  # automatic: with replacement exactly where rows are short
        assert part["replace"] == {c: need[c] > part["rows_per_class"][c] for c in need}
    assert all(report.parts[1]["replace"].values()) and report.any_replacement
    too_few = r"part \d \(group \d\) has \d+ row\(s\) of class '.' but \d+ are needed"
    with pytest.raises(ParameterError, match=too_few + " and replace=False"):
        fuse_parts(parts, artefact, n_rows=40, replace=False, random_state=5)
    # replace=True is a bootstrap even where a part has enough rows.
    fused, report = fuse_parts(split_parts(table), artefact, replace=True, random_state=5)
    assert all(all(p["replace"].values()) for p in report.parts)
    assert fused[["a1", "a2"]].duplicated().any()
    json.dumps(report.to_dict())


def test_seeds_streams_and_part_order(table, artefact):
    parts = split_parts(table)
    a, _ = fuse_parts(parts, artefact, random_state=11)
    b, _ = fuse_parts(parts[::-1], artefact, random_state=11)
    c, report = fuse_parts({3: parts[2], 1: parts[0], 2: parts[1]}, artefact,
                           random_state=np.int64(11))
    assert json.loads(json.dumps(report.to_dict()))["random_state"] == 11
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)
    assert not a.equals(fuse_parts(parts, artefact, random_state=12).table)
    # One stream per part: other parts' contents do not change what group 1 draws.
    other = parts.copy()
    other[2] = other[2].assign(a4=other[2]["a4"].map({"p": "q", "q": "p"}))
    d, _ = fuse_parts(other, artefact, random_state=11)
    pd.testing.assert_frame_equal(a[["a1", "a2", "a3", "class"]],
                                  d[["a1", "a2", "a3", "class"]])
    assert not a["a4"].equals(d["a4"])


def test_unseen_class_and_category_are_noted(table, artefact):
    parts = split_parts(table)
    extra = {"a1": 1, "a2": 0.5, "a3": "x", "a4": "p", "class": "?"}
    parts = [pd.concat([p, pd.DataFrame([{c: extra[c] for c in p.columns}])],
                       ignore_index=True) for p in parts]
    parts[1]["a3"] = parts[1]["a3"].astype(object)
    parts[1].loc[0, "a3"] = "w"
    _, report = fuse_parts(parts, artefact, random_state=0)
    assert report.rows_per_class["?"] == 1
    assert any("not seen at learning time" in n for n in report.notes)
    assert any("'a3'" in n and "'w'" in n for n in report.notes)


# --------------------------------------------------------------------------- bad input

def _bad(table):
    p = split_parts(table)
    return {
        "missing column": ([p[0].drop(columns="a2"), p[1], p[2]], DataError,
                           r"part 1 \(group 1\) misses column\(s\) \['a2'\]"),
        "column of another group": (
            [p[0].assign(a3=p[1]["a3"]), p[1], p[2]], DataError,
            r"part 1 has columns of 2 groups: group 1 \['a1', 'a2'\]; group 2 \['a3'\]"),
        "class labels others lack": (
            [p[0], p[1][p[1]["class"] == "+"], p[2]], DataError,
            r"part 2 \(group 2\) has no rows of class\(es\) \['-'\] that part 1"),
        "incompatible type": (
            [p[0].assign(a2=p[0]["a2"].map("{:.2f}".format)), p[1], p[2]],
            SchemaMismatchError, r"column 'a2' should be float \(float64\) but is string"),
        "incompatible class type": (
            [p[0], p[1], p[2].assign(**{"class": (p[2]["class"] == "+").astype(int)})],
            SchemaMismatchError, r"part 3 does not match.*column 'class' should be string"),
        "no class column": ([p[0], p[1].drop(columns="class"), p[2]], DataError,
                            r"part 2 has no class column 'class'"),
        "unknown column": ([p[0].assign(respondent=1), p[1], p[2]], SchemaMismatchError,
                           r"part 1 has column\(s\) \['respondent'\] that are not in"),
        "group twice": ([p[0], p[1], p[1], p[2]], DataError,
                        r"Group 2 \['a3'\] is given by several parts: part 2, part 3"),
        "group missing": ([p[0], p[2]], DataError, r"No part for group 2 \['a3'\]"),
        "empty part": ([p[0], p[1].iloc[:0], p[2]], DataError, r"part 2 \(group 2\) has no rows"),
        "missing class label": (
            [p[0], p[1], p[2].assign(**{"class": p[2]["class"].where(p[2].index > 0)})],
            DataError, r"part 3 has 1 missing value\(s\) in the class column"),
        "only class column": ([p[0], p[1], p[2], p[2][["class"]]], DataError,
                              r"part 4 has only the class column"),
        "mapping: foreign column": (
            {1: p[0], 2: p[2], 3: p[1]}, DataError,
            r"given for group 2 \['a3'\] but has column\(s\) \['a4'\] of another group"),
        "mapping: bad number": ({0: p[0], 1: p[1], 2: p[2]}, ParameterError,
                                r"Invalid group number 0: the grouping has groups 1\.\.3"),
        "single table": (p[0], ParameterError, r"not a single table"),
        "no parts": ([], ParameterError, r"No parts given"),
        "not a table": ([p[0], p[1], 3], ParameterError, r"part 3 is a int"),
        "unreadable file": ([p[0], p[1], "/nonexistent/p.csv"], DataError, r"no such file"),
    }


@pytest.mark.parametrize("case", list(_bad(reference_table(40))))
def test_bad_parts_are_named(table, artefact, case):
    parts, error, match = _bad(table)[case]
    with pytest.raises(error, match=match):
        fuse_parts(parts, artefact, random_state=0)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_rows": 0}, r"Invalid n_rows: 0"),
    ({"n_rows": 1}, r"n_rows=1 leaves class\(es\) \['.'\] without rows"),
    ({"replace": "yes"}, r"Invalid replace: 'yes'"),
    ({"random_state": -1}, r"Invalid random_state"),
])
def test_bad_parameters(table, artefact, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        fuse_parts(split_parts(table), artefact, **kwargs)


# ---------------------------------------------------------------------- collection plan

def test_collection_plan(artefact):
    plan = collection_plan(artefact)
    assert plan.groups == [["a1", "a2"], ["a3"], ["a4"]]
    assert plan.together == [["a1", "a2"]] and plan.separately == ["a3", "a4"]
    assert (plan.k, plan.p_value, plan.alpha) == (3, 0.2, 0.05)
    assert plan.baseline_accuracy == 0.81 and plan.accuracy == 0.78
    assert plan.accuracy_cost == pytest.approx(0.03)
    assert [r["k"] for r in plan.table] == [1, 3]
    assert plan.table[1]["accuracy_cost"] == pytest.approx(0.03)
    d = plan.to_dict()
    assert d["groups"][0] == {"group": 1, "columns": ["a1", "a2"]}
    json.dumps(d)
    text = plan.format()
    assert "group 1: a1, a2  (collect together)" in text
    assert "group 3: a4  (may be collected alone)" in text and "0.200" in text


def test_collection_plan_single_group(table):
    d = result_dict([["a1", "a2", "a3", "a4"]])
    d["table"] = d["table"][:1]
    d["table"][0]["acc_ave"] = d["baseline_accuracy"]
    art = GroupingArtefact.from_result(d, table, created_at="2026-01-01T00:00:00Z")
    plan = collection_plan(art)
    assert plan.k == 1 and plan.p_value is None and plan.separately == []
    assert plan.accuracy_cost == 0.0
    assert "collected together" in plan.format()


# ----------------------------------------------------------------------------------- CLI

@pytest.fixture
def files(tmp_path, table, artefact):
    ref = tmp_path / "artefact.json"
    ref.write_text(artefact.to_json())
    paths = []
    for i, part in enumerate(split_parts(table)):
        path = tmp_path / (f"part{i + 1}.parquet" if i == 0 else f"part{i + 1}.csv")
        if i == 0:
            part.to_parquet(path)
        else:
            part.to_csv(path, index=False)
        paths.append(str(path))
    return ref, paths


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_cli_fuse(files, tmp_path, capsys, table, suffix):
    ref, paths = files
    out = tmp_path / f"fused.{suffix}"
    argv = ["fuse", "--artefact", str(ref), "--part", paths[2], paths[0], "--part",
            paths[1], "--out", str(out), "--seed", "4", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("out", "rows", "rows_per_class", "rule", "replace", "with_replacement",
                "parts", "notes", "seed", "artefact"):
        assert key in d
    assert d["rows"] == 40 and d["seed"] == 4 and d["replace"] == "auto"
    assert [p["group"] for p in d["parts"]] == [1, 2, 3]
    assert d["parts"][0]["source"] == paths[0]
    fused = pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
    assert list(fused.columns) == list(table.columns) and len(fused) == 40
    assert per_class_multiset(fused, ["a1", "a2"]) == per_class_multiset(table, ["a1", "a2"])
    # GROUP=FILE gives the same result as matching by columns; --overwrite is needed.
    assert main(argv[:-1]) == 2
    assert "Refusing to overwrite" in capsys.readouterr().err
    other = tmp_path / f"fused2.{suffix}"
    assert main(["fuse", "--artefact", str(ref), "--part", f"3={paths[2]}", f"1={paths[0]}",
                 f"2={paths[1]}", "--out", str(other), "--seed", "4"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert other.read_bytes() == out.read_bytes()


def test_cli_fuse_rows_and_replacement(files, tmp_path, capsys):
    ref, paths = files
    out = tmp_path / "big.csv"
    assert main(["fuse", "--artefact", str(ref), "--part", *paths, "--out", str(out),
                 "--rows", "100", "--seed", "1"]) == 0
    text = capsys.readouterr().out
    assert "100 rows" in text and "WITH replacement" in text
    assert len(pd.read_csv(out)) == 100


@pytest.mark.parametrize("change, match", [
    (lambda p: [p[0], p[1]], r"No part for group 3"),
    (lambda p: [p[0], p[1], p[1], p[2]], r"given by several parts"),
    (lambda p: ["1=" + p[0], "2=" + p[1], p[2]], r"Mixing GROUP=FILE and plain FILE"),
    (lambda p: ["1=" + p[0], "1=" + p[1]], r"Group 1 is given twice"),
    (lambda p: ["1=" + p[0], "3=" + p[1], "2=" + p[2]], r"of another group"),
    (lambda p: [p[0], p[1], p[2] + ".missing.csv"], r"no such file"),
])
def test_cli_fuse_bad_input_writes_nothing(files, tmp_path, capsys, change, match):
    ref, paths = files
    out = tmp_path / "out" / "fused.parquet"
    assert main(["fuse", "--artefact", str(ref), "--part", *change(paths),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("astrid fuse: error:")
    assert re.search(match, err)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, match", [
    (["--out", "x.txt"], r"expected a \.parquet, \.pq or \.csv"),
    (["--out", "x.csv", "--rows", "0"], r"Invalid --rows: 0"),
    (["--out", "x.csv", "--seed", "-1"], r"Invalid --seed: -1"),
])
def test_cli_fuse_bad_options(files, tmp_path, capsys, monkeypatch, argv, match):
    ref, paths = files
    monkeypatch.chdir(tmp_path)
    assert main(["fuse", "--artefact", str(ref), "--part", *paths, *argv]) == 2
    assert re.search(match, capsys.readouterr().err)
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.txt").exists()


def test_cli_plan_collection(files, capsys):
    ref, _ = files
    assert main(["plan-collection", str(ref)]) == 0
    text = capsys.readouterr().out
    assert "group 1: a1, a2  (collect together)" in text and "cost +0.030" in text
    assert main(["plan-collection", str(ref), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("groups", "together", "separately", "k", "p_value", "alpha",
                "baseline_accuracy", "accuracy", "accuracy_cost", "table", "artefact"):
        assert key in d
    assert d["separately"] == ["a3", "a4"] and d["p_value"] == 0.2
    assert main(["plan-collection", str(ref) + ".missing"]) == 2
    assert capsys.readouterr().err.startswith("astrid plan-collection: error:")


# The paper's credit-a comparison of fused and original training rows (Sec. 6.3) is a
# sweep over ten splits: benchmarks/bench_fusion.py (results/fusion.md), smoke-run by
# tests/project/test_bench_smoke.py.
