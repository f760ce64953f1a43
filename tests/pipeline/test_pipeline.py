"""The release pipeline's library steps (issue 20): one implementation for CLI and operators."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from astrid_airflow import (
    ArtefactStore,
    GroupingArtefact,
    learn_or_reuse,
    make_surrogate,
    make_synthetic,
    stage_surrogate,
)


@pytest.fixture(scope="module")
def table():
    return make_synthetic(40, random_state=3)


def _artefact(table, grouping):
    result = {"grouping": grouping, "k": len(grouping), "table": [], "target": "class",
              "classifier": {"preset": "nb"}, "scoring": "accuracy", "alpha": 0.05,
              "n_search": 5, "n_test": 10, "random_state": 0}
    return GroupingArtefact.from_result(result, table)


def test_stage_surrogate_measures_before_publishing_and_matches_make_surrogate(table, tmp_path):
    src, out = tmp_path / "t.csv", tmp_path / "s.csv"
    table.to_csv(src, index=False)
    art = _artefact(table, [["a1", "a2"], ["a3"], ["a4"]])
    staged = stage_surrogate(src, art, out, random_state=5, utility=False)
    assert staged.paths == [str(out)] and not staged.protects_nothing
    assert staged.metrics["rows"] == len(table) and staged.copies is None
    expected = make_surrogate(table, art, random_state=5)
    pd.testing.assert_frame_equal(pd.read_csv(out), expected, check_exact=False)


def test_stage_surrogate_reports_a_one_group_grouping(table, tmp_path):
    src = tmp_path / "t.parquet"
    table.to_parquet(src)
    art = _artefact(table, [["a1", "a2", "a3", "a4"]])
    staged = stage_surrogate(src, art, tmp_path / "s.parquet", random_state=1,
                             n_copies=2, utility=False)
    assert staged.protects_nothing and staged.copies == [1.0, 1.0]


def test_learn_or_reuse_keeps_a_version_learned_from_the_same_table(table, tmp_path):
    store = ArtefactStore(tmp_path / "store")
    settings = dict(target="class", classifier="nb", n_search=5, n_test=10, random_state=0,
                    progress=False)
    first = learn_or_reuse(table, store, "syn", settings)
    again = learn_or_reuse(table, store, "syn", settings)
    forced = learn_or_reuse(table, store, "syn", settings, force=True)
    assert first.learned and not again.learned and forced.learned
    assert again.version == first.version and forced.version != first.version
    assert (tmp_path / "store" / "syn" / first.version / "suite.json").exists()


def test_a_version_is_reused_only_by_the_same_learn(table, tmp_path):
    """The same table learned with another classifier or policy is another learn: a new
    version. Another seed is the same learn (an operator derives one per run)."""
    from astrid_airflow import LearnRequest, learn_release

    store = ArtefactStore(tmp_path / "store")
    settings = dict(classifier="nb", n_search=5, n_test=10, progress=False)

    def learn(**changes):
        request = LearnRequest(table=table, settings=settings, store=store, name="syn",
                               remedies=None, random_state=0)
        return learn_release(dataclasses.replace(request, **changes))

    first = learn()
    assert first.learned and first.version == "v0001" and first.rows == len(table)
    assert learn(random_state=1).reused  # another seed: the same learn
    other = learn(settings={**settings, "classifier": "svm"})
    assert other.learned and other.version == "v0002"
    stricter = learn(settings={**settings, "classifier": "svm"},
                     policy={"max_intact": 0.005})
    assert stricter.learned and stricter.version == "v0003"
    assert learn(settings={**settings, "classifier": "svm"},
                 policy={"max_intact": 0.005}).version == "v0003"  # kept
    # the old entry point decides the same way
    again = learn_or_reuse(table, store, "syn", {**settings, "target": "class"})
    assert again.learned and again.version == "v0004"
