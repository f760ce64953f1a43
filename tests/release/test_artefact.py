"""Grouping artefacts: construction, JSON round trip, strict loading, schema checks."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astrid_airflow
from astrid_airflow._errors import ArtefactError, ParameterError, SchemaMismatchError
from astrid_airflow.engine._grouping import Grouping
from astrid_airflow.release._artefact import GroupingArtefact
from astrid_airflow.release._artefact_format import SCHEMA_VERSION
from astrid_airflow.release._table_schema import fingerprint_table


class FakeResult:
    """Stands in for AstridResult: only ``to_dict()`` is used."""

    def __init__(self, d):
        self._d = d

    def to_dict(self):
        return json.loads(json.dumps(self._d))


def reference_table(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "a1": rng.integers(0, 5, n),
        "a2": rng.normal(size=n),
        "a3": pd.Categorical(rng.choice(["x", "y", "z"], n), categories=["x", "y", "z"]),
        "a4": rng.choice(["p", "q"], n),
        "class": rng.choice(["+", "-"], n),
    })


def result_dict(grouping=(("a1", "a2"), ("a3",), ("a4",))) -> dict:
    g = [list(x) for x in grouping]
    return {
        "grouping": g, "k": len(g),
        "table": [{"k": 1, "acc_ave": 0.8, "acc_min": 0.7, "acc_max": 0.9, "sd": 0.05,
                   "p": 1.0, "grouping": [["a1", "a2", "a3", "a4"]], "letters": "(A A A A)"},
                  {"k": len(g), "acc_ave": 0.78, "acc_min": 0.7, "acc_max": 0.85,
                   "sd": 0.04, "p": 0.2, "grouping": g, "letters": "(A A) (B) (C)"}],
        "baseline_accuracy": 0.81, "p_og": 0.004, "n_fits": 700, "seconds": 1.5,
        "order": ["a4", "a3", "a2", "a1"], "target": "class", "classes": ["+", "-"],
        "columns": ["a1", "a2", "a3", "a4"], "classifier": "svm", "scoring": "accuracy",
        "alpha": 0.05, "n_search": 100, "n_test": 250, "random_state": 7,
        "split": {"train": 0.5, "test": 0.25, "p": 0.25},
    }


@pytest.fixture
def artefact() -> GroupingArtefact:
    return GroupingArtefact.from_result(FakeResult(result_dict()), reference_table(),
                                        created_at="2026-01-02T03:04:05+00:00")


def test_from_result_records_everything(artefact):
    a = artefact
    assert a.schema_version == SCHEMA_VERSION == 1
    assert a.grouping == Grouping.parse("a1,a2;a3;a4") and a.k == 3
    assert a.target == "class" and a.classes == ("+", "-")
    assert a.columns == ("a1", "a2", "a3", "a4", "class")
    assert a.attributes == ("a1", "a2", "a3", "a4")
    a3 = a.column_schema("a3")
    assert a3["dtype"] == "category" and a3["categories"] == ["x", "y", "z"]
    assert a.column_schema("a1")["kind"] == "integer"
    assert a.column_schema("a4")["kind"] == "string"
    assert a.fingerprint == fingerprint_table(reference_table())
    assert a.fingerprint["rows"] == 40
    assert a.result["p_og"] == 0.004 and a.result["table"][1]["p"] == 0.2
    assert (a.classifier, a.scoring, a.alpha) == ("svm", "accuracy", 0.05)
    assert (a.n_search, a.n_test, a.random_state) == (100, 250, 7)
    assert a.library_version == astrid_airflow.__version__
    assert a.created_at == "2026-01-02T03:04:05.000000Z"


def test_from_result_accepts_dict_and_defaults_created_at():
    a = GroupingArtefact.from_result(result_dict(), reference_table())
    assert a.created_at.endswith("Z")


def test_json_round_trip(artefact):
    text = artefact.to_json()
    back = GroupingArtefact.from_json(text)
    assert back == artefact
    assert back.to_json() == text
    assert GroupingArtefact.from_json(text.encode()) == artefact
    assert list(json.loads(text)) == list(artefact.to_dict())  # stable key order


def test_from_result_rejects_table_that_does_not_fit():
    t = reference_table()
    with pytest.raises(ArtefactError, match=r"column\(s\) \['extra'\] in no group"):
        GroupingArtefact.from_result(result_dict(), t.assign(extra=1))
    with pytest.raises(ArtefactError, match=r"lacks grouped column\(s\) \['a4'\]"):
        GroupingArtefact.from_result(result_dict(), t.drop(columns="a4"))
    with pytest.raises(ArtefactError, match="lacks key"):
        GroupingArtefact.from_result({"grouping": [["a1"]]}, t)
    with pytest.raises(ParameterError, match="created_at"):
        GroupingArtefact.from_result(result_dict(), t, created_at="2026-01-01T00:00:00")


@pytest.mark.parametrize("cut", [1, 10, 100, -2])
def test_truncated_json_is_an_artefact_error(artefact, cut):
    text = artefact.to_json()
    with pytest.raises(ArtefactError, match="Corrupt or truncated"):
        GroupingArtefact.from_json(text[:cut] if cut > 0 else text[:cut - 5])


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("[1, 2]", "expected a JSON object"),
    ('{"schema_version": NaN}', "NaN is not valid JSON"),
    (b"\xff\xfe{", "not UTF-8"),
    ("{}", "no schema_version"),
    ('{"schema_version": "1"}', "must be an integer"),
    ('{"schema_version": 2, "library_version": "9.0"}', r"newer .*Upgrade"),
    ('{"schema_version": 0}', "Unknown artefact schema_version 0"),
])
def test_corrupt_artefacts(text, match):
    with pytest.raises(ArtefactError, match=match):
        GroupingArtefact.from_json(text)


def _mutated(artefact, **changes):
    d = artefact.to_dict()
    for key, value in changes.items():
        if value is KeyError:
            del d[key]
        else:
            d[key] = value
    return d


@pytest.mark.parametrize("changes, match", [
    ({"target": KeyError, "alpha": KeyError}, r"missing key\(s\) \['target', 'alpha'\]"),
    ({"surprise": 1}, r"unknown key\(s\) \['surprise'\]"),
    ({"alpha": "0.05"}, "alpha must be a number"),
    ({"alpha": 1.5, "n_test": 0}, "alpha must be .*n_test must be an integer >= 1"),
    ({"random_state": -1}, "random_state must be null"),
    ({"created_at": "yesterday"}, "not an ISO-8601"),
    ({"fingerprint": {"rows": 3, "sha256": "abc"}}, "fingerprint"),
    ({"classes": ["+", "+"]}, "duplicated class labels"),
    ({"classes": [None]}, "class label #0"),
    ({"grouping": [["a1", "a2"], ["a3"]]}, r"column\(s\) in no group \['a4'\]"),
    ({"grouping": [["a1", "a2", "class"], ["a3"], ["a4"]]}, r"unknown column\(s\) \['class'\]"),
    ({"grouping": [["a1", "a2"], ["a2", "a3"], ["a4"]]}, "more than one group"),
    ({"grouping": "not a list"}, "partition|grouping"),
    ({"target": "nope"}, "target 'nope' is not in the schema"),
    ({"schema": [{"name": "a1"}, {"name": "class"}]}, "schema entry #0"),
])
def test_invalid_fields_are_named(artefact, changes, match):
    d = _mutated(artefact, **changes)
    with pytest.raises(ArtefactError, match=match):
        GroupingArtefact.from_dict(d)
    with pytest.raises(ArtefactError, match=match):
        GroupingArtefact.from_json(json.dumps(d))


def test_result_grouping_must_agree(artefact):
    d = artefact.to_dict()
    d["result"]["grouping"] = [["a1"], ["a2"], ["a3"], ["a4"]]
    with pytest.raises(ArtefactError, match="result's grouping"):
        GroupingArtefact.from_dict(d)


# ----------------------------------------------------------------------- schema checks

def test_check_table_accepts_reference_and_batches(artefact):
    t = reference_table()
    found = artefact.check_table(t)
    assert found.notes == [] and not found.reordered
    # A batch read from CSV: categorical arrives as strings, int32 instead of int64.
    batch = t.astype({"a3": "str", "a1": "int32"})[["class", "a4", "a3", "a2", "a1"]]
    found = artefact.check_table(batch)
    assert found.reordered and found.unseen_classes == []
    # Integers where floats were recorded are fine (ARFF REAL -> CSV ints).
    artefact.check_table(t.assign(a2=np.arange(len(t))))


def test_check_table_names_every_difference(artefact):
    t = reference_table().drop(columns=["a2"]).assign(a1=lambda d: d["a1"].astype(str),
                                                      zz=1.0)
    with pytest.raises(SchemaMismatchError) as info:
        artefact.check_table(t)
    msg = str(info.value)
    assert "missing column(s) ['a2']" in msg
    assert "unexpected column(s) ['zz']" in msg
    assert "column 'a1' should be integer (int64) but is string (str)" in msg


def test_check_table_float_arriving_for_int_is_drift(artefact):
    t = reference_table().astype({"a1": float})
    with pytest.raises(SchemaMismatchError, match="'a1' should be integer"):
        artefact.check_table(t)


def test_check_table_target(artefact):
    t = reference_table()
    with pytest.raises(SchemaMismatchError, match=r"missing column\(s\) \['class'\]"):
        artefact.check_table(t.drop(columns="class"))
    assert artefact.check_table(t.drop(columns="class"), require_target=False).notes == []


def test_unseen_labels_and_categories_are_reported_not_rejected(artefact):
    t = reference_table()
    t.loc[0, "class"] = "?"
    t["a3"] = t["a3"].cat.add_categories(["w"])
    t.loc[1, "a3"] = "w"
    found = artefact.check_table(t)
    assert found.unseen_classes == ["?"]
    assert found.unseen_categories == {"a3": ["w"]}
    assert any("not seen at learning time" in n for n in found.notes)


def test_check_arrow_table_and_schema(artefact):
    pa = pytest.importorskip("pyarrow")
    table = pa.Table.from_pandas(reference_table(), preserve_index=False)
    assert artefact.check_table(table).notes == []
    assert artefact.check_table(table.schema).notes == []
    bad = table.set_column(0, "a1", pa.array([str(v) for v in table["a1"].to_pylist()]))
    with pytest.raises(SchemaMismatchError, match="'a1' should be integer"):
        artefact.check_table(bad.schema)
    with pytest.raises(ParameterError, match="Cannot check list"):
        artefact.check_table([1, 2])


# ------------------------------------------------------------------------- fingerprint

def test_fingerprint_is_content_sensitive():
    t = reference_table()
    fp = fingerprint_table(t)
    assert fp == fingerprint_table(t.copy())
    assert len(fp["sha256"]) == 64
    changed = t.copy()
    changed.loc[3, "a2"] += 1e-9
    assert fingerprint_table(changed)["sha256"] != fp["sha256"]
    assert fingerprint_table(t.iloc[::-1].reset_index(drop=True))["sha256"] != fp["sha256"]
    assert fingerprint_table(t.rename(columns={"a4": "b4"}))["sha256"] != fp["sha256"]
    assert fingerprint_table(t.astype({"a1": "int32"}))["sha256"] != fp["sha256"]
    # The index is not content.
    assert fingerprint_table(t.set_index(t.index + 100)) == fp


def test_fingerprint_is_stable_across_processes():
    code = ("import json, sys; sys.path.insert(0, 'tests/release');"
            "from test_artefact import reference_table;"
            "from astrid_airflow.release._table_schema import fingerprint_table;"
            "print(json.dumps(fingerprint_table(reference_table())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "123", "PATH": ""})
    assert json.loads(out.stdout) == fingerprint_table(reference_table())


# ----------------------------------------------------------------- property round trip

_names = st.text(alphabet="abcdefgh_xyzé", min_size=1, max_size=6)
_labels = st.one_of(st.text(max_size=5), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False))


@settings(max_examples=60, deadline=None)
@given(cols=st.lists(_names, min_size=1, max_size=7, unique=True),
       data=st.data(), classes=st.lists(_labels, min_size=1, max_size=4, unique=True),
       seed=st.one_of(st.none(), st.integers(0, 2**63 - 1)),
       alpha=st.floats(min_value=1e-6, max_value=0.999))
def test_property_json_round_trip(cols, data, classes, seed, alpha):
    target = "target__"
    cuts = data.draw(st.sets(st.integers(1, len(cols) - 1)) if len(cols) > 1
                     else st.just(set()))
    grouping = Grouping.from_cuts(cols, cuts)
    schema = [{"name": c, "dtype": "float64", "kind": "float"} for c in cols]
    schema.append({"name": target, "dtype": "category", "kind": "string",
                   "categories": [str(c) for c in classes], "ordered": False})
    a = GroupingArtefact(
        grouping=grouping, target=target, classes=tuple(classes), schema=tuple(schema),
        fingerprint={"rows": 5, "sha256": "0" * 64},
        result={"grouping": grouping.to_list(), "k": grouping.k, "table": [],
                "seconds": data.draw(st.floats(allow_nan=True))},
        classifier=data.draw(st.sampled_from(["svm", {"kind": "rf", "n_estimators": 10}])),
        scoring="accuracy", alpha=alpha, n_search=3, n_test=4, random_state=seed,
        library_version="0.1", created_at="2026-05-06T07:08:09.000001Z")
    back = GroupingArtefact.from_json(a.to_json())
    assert back == a
    assert back.grouping.groups == grouping.groups  # group order kept too


def test_from_real_astrid_result_round_trips():
    from astrid_airflow import AstridResult, astrid, make_synthetic

    table = make_synthetic(40, random_state=1)
    result = astrid(table, target="class", classifier="nb", n_search=2, n_test=3,
                    random_state=5, progress=False)
    a = GroupingArtefact.from_result(result, table)
    assert a.grouping == result.grouping and a.k == result.k
    assert a.classes == (0, 1) and a.target == "class"
    assert (a.n_search, a.n_test, a.random_state) == (2, 3, 5)
    back = GroupingArtefact.from_json(a.to_json())
    assert back == a
    # The stored result is complete: the engine can rebuild its result from it.
    assert AstridResult.from_dict(back.result).to_dict() == a.result
    assert back.check_table(table).notes == []
