"""The release choice's memo of each group's remedied columns per utility split.

A group's remedy and its local suppression depend on its own columns and the class
alone, so the choice keeps each group's remedied columns on each split's training and
held-out parts and reuses them for every candidate with that group and those steps
(``DomainMemo``). The invariant: for any table, candidates sharing a memo in any order,
in or out of sample, with or without suppression, with unique row labels or not, every
utility result is the one scored without the memo.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow.pipeline._fit_recipe import fit_recipe
from astrid_airflow.release import DomainMemo, surrogate_utility
from tests.pipeline.test_judge_columns import tables

pytestmark = pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")


def _groupings(names, draw):
    out = []
    for _ in range(draw(st.integers(1, 3))):
        order = draw(st.permutations(names))
        cut = sorted(draw(st.sets(st.integers(1, len(names) - 1), max_size=3)))
        out.append([list(order[a:b]) for a, b in zip([0, *cut], [*cut, len(names)])])
    return out


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables(), st.data())
def test_every_result_is_the_one_scored_without_the_memo(case, data):
    table, _ = case
    if table["cls"].value_counts().min() < 4:  # the split needs two rows of each class
        return
    names = [c for c in table.columns if c != "cls"]
    if data.draw(st.booleans()):  # one label for every row: any two parts look alike
        table.index = [0] * len(table)
    memo = DomainMemo()
    for grouping in _groupings(names, data.draw):
        method = data.draw(st.sampled_from(["bins", "mdav", "partition"]))
        kw = dict(target="cls", grouping=grouping, k=2, max_share_below_k=0.1,
                  max_class_disclosure_share=0.1, method=method)
        recipe, _ = fit_recipe(table, **kw)
        scoring = dict(target="cls", classifier="nb", random_state=data.draw(
            st.integers(0, 3)), n_repeats=2, recipe=recipe,
            suppression=data.draw(st.booleans()))
        if data.draw(st.booleans()):
            scoring["recipe_fitter"] = lambda train, kw=kw: fit_recipe(train, **kw)[0]
        plain = surrogate_utility(table, grouping, **scoring)
        assert surrogate_utility(table, grouping, **scoring, _domains=memo) == plain
