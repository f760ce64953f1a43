"""``AstridLearnOperator(classifier="auto", n_search=None, n_test=None)``: the library's
defaults for the table's size, as ``astrid learn`` without flags (issue 33: the publishing
DAG triggered on a large table). The settings only; no search runs."""

from __future__ import annotations

import pytest
from astrid_airflow.operators._compat import AirflowFailException
from astrid_airflow.operators.learn import AstridLearnOperator

from astrid_airflow.pipeline import resolve_table_defaults


def _settings(n_rows: int, **kwargs) -> dict:
    """What the learn stage runs: the operator's settings, the table's size deciding
    what they leave out (as it does for ``astrid learn``'s flags not given)."""
    op = AstridLearnOperator(task_id="learn", reference="t.csv", store="s", name="n",
                             **kwargs)
    return resolve_table_defaults(op._search_settings("class", 0), n_rows)


@pytest.mark.parametrize("auto", ["auto", None, "None", " AUTO "])
def test_auto_takes_the_large_table_defaults_above_20000_rows(auto):
    s = _settings(100_000, classifier=auto, n_search=None, n_test="None")
    assert (s["classifier"], s["adaptive"], s["n_search"], s["n_test"]) == \
        ("hgb", True, 100, 250)
    assert s["sample"] == "auto"  # the operator's default: the learning-curve rule


def test_auto_keeps_the_papers_run_on_a_small_table():
    s = _settings(768, classifier="auto", n_search="20", n_test=50)
    assert (s["classifier"], s["adaptive"], s["n_search"], s["n_test"]) == \
        ("svm", False, 20, 50)
    assert _settings(768, classifier="auto", adaptive=True)["adaptive"] is True


def test_an_explicit_classifier_is_kept_whatever_the_size():
    s = _settings(100_000, classifier="svm", n_search="30")
    assert (s["classifier"], s["adaptive"], s["n_search"], s["n_test"]) == \
        ("svm", False, 30, 250)


@pytest.mark.parametrize("bad", ["0", "many", 2.5])
def test_a_bad_budget_still_fails_naming_it(bad):
    with pytest.raises(AirflowFailException, match="n_search"):
        _settings(100, classifier="auto", n_search=bad)
