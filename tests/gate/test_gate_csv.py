"""A CSV carries no types: a float column of whole numbers must not fail the gate.

pyarrow's CSV writer prints the float 4.0 as ``4``, so a published CSV of a table
whose float column happens to hold whole numbers reads back as integers. The values
are the same numbers; the gate must judge them as the original's type (found by the
end-to-end benchmark: every CSV release of such a table failed the schema check).
"""

from __future__ import annotations

import pandas as pd

from astrid_airflow import (
    GatePolicy,
    GroupingArtefact,
    make_synthetic,
    shuffle_file,
    validate_surrogate,
)
from astrid_airflow.engine._grouping import Grouping

SCHEMA = "expect_surrogate_schema_to_match_original"


def _artefact(table: pd.DataFrame) -> GroupingArtefact:
    g = Grouping.parse("a1,a2;a3;a4")
    result = {"grouping": g.to_list(), "k": g.k, "table": [], "target": "class",
              "classifier": "svm", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    return GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")


def _schema(result):
    (found,) = [e for e in result.expectations if e.name == SCHEMA]
    return found


def test_whole_number_floats_in_a_csv_release_keep_the_originals_type(tmp_path):
    data = make_synthetic(400, random_state=0)
    data["a3"] = data["a3"].round().astype("float64")  # floats that are whole numbers
    original = tmp_path / "original.parquet"
    data.to_parquet(original, index=False)
    artefact = _artefact(data)
    out = tmp_path / "surrogate.csv"
    shuffle_file(original, artefact, out, random_state=1, remedies=False)
    assert "." not in out.read_text().splitlines()[1].split(",")[
        list(data.columns).index("a3")]  # the writer really drops the ".0"
    r = validate_surrogate(original, out, artefact, random_state=0,
                           policy=GatePolicy.raw_release_demo(), remedies=False)
    assert _schema(r).success, _schema(r).details


def test_a_csv_column_of_another_kind_still_fails_the_schema_check(tmp_path):
    data = make_synthetic(400, random_state=0)
    data["a3"] = data["a3"].round().astype("float64")
    original = tmp_path / "original.parquet"
    data.to_parquet(original, index=False)
    artefact = _artefact(data)
    out = tmp_path / "surrogate.csv"
    shuffle_file(original, artefact, out, random_state=1, remedies=False)
    text = pd.read_csv(out)
    text["a3"] = text["a3"].map(lambda v: f"n{v:g}")  # numbers turned into text
    text.to_csv(out, index=False)
    r = validate_surrogate(original, out, artefact, random_state=0,
                           policy=GatePolicy.raw_release_demo(), remedies=False)
    assert not _schema(r).success
