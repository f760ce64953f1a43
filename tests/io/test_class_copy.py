"""An attribute that is the class under another name is named before learning.

A stray copy of the class (``class `` with a trailing space) was learned without a
word: a classifier then needs nothing else, and the grouping says nothing of the other
columns.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from astrid_airflow import make_synthetic
from astrid_airflow.io import check_attributes
from astrid_airflow.io._io import LinkageWarning


def _warnings(table, target="class"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_attributes(table, [c for c in table.columns if c != target], target)
    return [str(w.message) for w in caught if issubclass(w.category, LinkageWarning)]


@pytest.mark.parametrize("copy", [
    lambda y: y,  # the same values
    lambda y: y.map({0: "no", 1: "yes"}),  # relabelled one to one
    lambda y: 7 - y,  # recoded
])
def test_a_copy_of_the_class_under_another_name_is_named(copy):
    table = make_synthetic(300, random_state=0)
    table["class "] = copy(table["class"])
    found = _warnings(table)
    assert len(found) == 1 and "'class '" in found[0] and "under another name" in found[0]


def test_a_column_that_only_predicts_the_class_well_is_not_a_copy():
    table = make_synthetic(300, random_state=0)
    noisy = table["class"].copy()
    noisy.iloc[::17] = 1 - noisy.iloc[::17]  # right 16 times in 17: not one to one
    table["guess"] = noisy
    table["two_levels"] = np.arange(len(table)) % 2  # as many levels as classes, unrelated
    assert _warnings(table) == []
