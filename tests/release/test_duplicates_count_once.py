"""Exact copies of a source row count as one person for k-anonymity (issue 53).

A stager added 4 copies of a target's row: five identical rows met k = 5, no
within-class shuffle could separate them, and the gate passed. Now the local
suppression of the shuffle and the gate's per-group checks count people: a row that
repeats an earlier row in every column adds no one to its (tuple, class) class.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow import GroupingArtefact, make_surrogate, validate_surrogate
from astrid_airflow.release import (
    ReleaseRecipe,
    published_exposure,
    repeated_rows,
    suppress_table,
)

GROUPS = [["a", "b"], ["c"]]
BELOW_K = "expect_surrogate_group_share_below_k_to_be_at_most"
SAME_ACCURACY = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}


def _with_copies(table: pd.DataFrame, copies: list[int]) -> pd.DataFrame:
    """``table`` with ``copies[i]`` extra copies of row ``i``, placed at random."""
    extra = table.iloc[np.repeat(np.arange(len(copies)), copies)]
    out = pd.concat([table, extra], ignore_index=True)
    return out.sample(frac=1.0, random_state=0).reset_index(drop=True)


tables = st.integers(8, 60).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 2), min_size=n, max_size=n),
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.integers(0, 4), min_size=n, max_size=n)))


def _frame(cols) -> pd.DataFrame:
    a, b, c, y, _ = cols
    return pd.DataFrame({"a": a, "b": b, "c": c, "class": y})


@settings(max_examples=150, deadline=None)
@given(tables, st.integers(2, 5))
def test_property_copies_of_rows_never_change_what_is_kept_or_counted(cols, k):
    """Suppressing a batch with copies of its rows keeps a row exactly when its person
    is kept in the batch without copies, and the gate's counts with the copies given
    are the people's: the smallest published class and the exposed people are the
    same."""
    people = _frame(cols).drop_duplicates(ignore_index=True)
    copies = [m % 5 for m in cols[4][:len(people)]]
    batch = _with_copies(people, copies)
    repeated = repeated_rows(batch)
    assert int(repeated.sum()) == sum(copies)
    alone, _ = suppress_table(people, GROUPS, "class", k)
    with_copies, _ = suppress_table(batch, GROUPS, "class", k, repeated=repeated)
    key = ["a", "b", "c", "class"]
    for g in GROUPS:
        shown = dict(zip(map(tuple, people[key].to_numpy()),
                         alone[g].notna().all(axis=1)))
        mine = with_copies[g].notna().all(axis=1).tolist()
        assert mine == [shown[tuple(r)] for r in batch[key].to_numpy()]
    copies_frame = batch[repeated]
    for mine, theirs in zip(published_exposure(batch, GROUPS, "class", k,
                                               copies=copies_frame),
                            published_exposure(people, GROUPS, "class", k)):
        assert mine["k_min"] == theirs["k_min"]
        exposed_people = theirs["exposed_rows"]
        assert (mine["exposed_rows"] == 0) == (exposed_people == 0)


def test_repeated_rows_are_the_same_for_pandas_and_arrow():
    frame = pd.DataFrame({"x": [1.0, np.nan, 1.0, np.nan, 2.0], "s": ["a", "b", "a", "b", "a"],
                          "class": [0, 1, 0, 1, 0]})
    assert repeated_rows(frame).tolist() == [False, False, True, True, False]
    assert repeated_rows(pa.Table.from_pandas(frame)).tolist() == \
        repeated_rows(frame).tolist()


def _people(n: int = 400, seed: int = 0) -> pd.DataFrame:
    """Distinct people (``d``, a measurement, tells them apart) with common tuples."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n),
                         "c": rng.integers(0, 3, n), "d": rng.normal(size=n),
                         "class": rng.integers(0, 2, n)})


def _artefact(table: pd.DataFrame) -> GroupingArtefact:
    result = {"grouping": [*GROUPS, ["d"]], "k": 3, "table": [], "target": "class",
              "classifier": "nb", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    art = GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")
    recipe = ReleaseRecipe(k=5, steps=(), target="class")
    return dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict(),
                                             "policy": {"max_suppressed_share": 1.0}})


def _hostile(target_class: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """A batch where the target's (a, b) = (9, 9) is shared by five people of class 1
    and, in class 0, by the target alone, staged with 4 copies of the target's row."""
    batch = _people()
    others = pd.DataFrame({"a": [9] * 5, "b": [9] * 5, "c": [0, 1, 2, 0, 1],
                           "d": [0.1, 0.2, 0.3, 0.4, 0.5], "class": [1 - target_class] * 5})
    target = pd.DataFrame({"a": [9], "b": [9], "c": [2], "d": [0.7],
                           "class": [target_class]})
    return pd.concat([batch, others, *[target] * 5], ignore_index=True), target.iloc[0]


def test_a_target_copied_k_times_is_suppressed_by_the_shuffle():
    batch, _ = _hostile()
    art = _artefact(batch)
    s = make_surrogate(batch, art, random_state=1)
    # one person of class 0 holds (9, 9): not published in either class (in class 1 it
    # would give the class away); every other tuple is published
    assert not ((s["a"] == 9) & (s["b"] == 9)).any()
    assert s["a"].isna().sum() == 10 and s["c"].notna().all()
    gate = validate_surrogate(batch, s, art, random_state=0, metrics=SAME_ACCURACY)
    (below,) = [e for e in gate.expectations if e.name == BELOW_K]
    assert below.success


def test_the_gate_refuses_a_surrogate_that_publishes_the_copied_target():
    """A staged file made without the person count (as a stager would, or the shuffle
    before this change) publishes the target's tuple five times: the gate fails it."""
    batch, target = _hostile()
    art = _artefact(batch)
    honest = make_surrogate(batch, art, random_state=1)
    groups = [*GROUPS, ["d"]]
    # the same values with the target's tuple put back, as counting rows would publish
    forged, _ = suppress_table(batch, groups, "class", 5)
    forged = make_surrogate(forged, dataclasses.replace(art, release=None),
                            random_state=1)
    assert ((forged["a"] == 9) & (forged["b"] == 9) &
            (forged["class"] == target["class"])).sum() == 5
    gate = validate_surrogate(batch, forged, art, random_state=0, metrics=SAME_ACCURACY)
    (below,) = [e for e in gate.expectations if e.name == BELOW_K]
    assert not below.success and not gate.success
    assert below.details["groups"][0]["exposed_rows"] == 10  # (9, 9) in both classes
    gate = validate_surrogate(batch, honest, art, random_state=0, metrics=SAME_ACCURACY)
    (below,) = [e for e in gate.expectations if e.name == BELOW_K]
    assert below.success


def test_the_file_shuffle_counts_people_too(tmp_path):
    from astrid_airflow import shuffle_file

    batch, _ = _hostile()
    art = _artefact(batch)  # the test's coarse values leave most rows intact: allowed
    art = dataclasses.replace(art, release={**art.release, "policy": {
        "max_suppressed_share": 1.0, "max_intact": 1.0}})
    batch.to_parquet(tmp_path / "batch.parquet")
    shuffle_file(tmp_path / "batch.parquet", art, tmp_path / "s.parquet", random_state=1)
    s = pd.read_parquet(tmp_path / "s.parquet")
    assert not ((s["a"] == 9) & (s["b"] == 9)).any()
    assert s["a"].isna().sum() == 10
