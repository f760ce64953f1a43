"""The recipe fit judges a group's one-column steps on the columns as published, each
step applied once per group however many rungs of the bin ladder reuse it.

The invariant: for any table (integers, nullable integers, floats with missing values,
strings, categories), grouping, k, thresholds, method and bin cap, ``fit_recipe`` gives
the same recipe and the same report as when every judgement rebuilds the group's frame
through ``apply_recipe`` (the code the one-column path replaced).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow.pipeline import _fit_recipe
from astrid_airflow.pipeline._fit_recipe import fit_recipe


@st.composite
def tables(draw):
    n = draw(st.integers(8, 150))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = rng.integers(0, draw(st.integers(2, 3)), n)
    levels = draw(st.integers(1, 25))
    cols = {
        "age": rng.integers(18, 18 + draw(st.integers(2, 70)), n),
        "amount": np.where(rng.random(n) < draw(st.sampled_from([0.0, 0.1])), np.nan,
                           np.round(rng.lognormal(3, 1, n), draw(st.integers(0, 2)))),
        "visits": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 9, n)),
                           dtype="Int64"),
        "city": pd.Series([f"c{v}" if v < levels - 1 else None
                           for v in rng.integers(0, levels, n)], dtype="str"),
        "grade": pd.Categorical(rng.choice(list("abcdef"), n)),
    }
    table = pd.DataFrame(cols).assign(cls=np.where(y == 0, "no", "yes"))
    names = [c for c in table.columns if c != "cls"]
    order = draw(st.permutations(names))
    cut = sorted(draw(st.sets(st.integers(1, len(names) - 1), max_size=3)))
    groups = [list(order[a:b]) for a, b in zip([0, *cut], [*cut, len(names)])]
    return table, groups


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.sampled_from([0.02, 0.1, 0.3]),
       st.sampled_from([None, 0.5, 0.9]), st.sampled_from(["bins", "mdav", "partition"]),
       st.sampled_from([None, 4, 12]))
def test_the_fit_is_the_same_as_when_every_judgement_rebuilds_the_frame(
        case, k, share, column_risk, method, max_bins):
    table, groups = case
    kw = dict(target="cls", grouping=groups, k=k, max_share_below_k=share,
              max_class_disclosure_share=share, method=method,
              max_class_from_one_column_risk=column_risk, max_bins=max_bins)
    fast = fit_recipe(table, **kw)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_fit_recipe._PublishedColumns, "frame", lambda self, cols, steps: None)
        slow = fit_recipe(table, **kw)
    assert fast[0].to_json() == slow[0].to_json()
    assert fast[1] == slow[1]
