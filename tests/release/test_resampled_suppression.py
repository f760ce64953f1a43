"""Bootstrap batches' suppression counted from the cells is the suppression of the batch.

The release choice checks a candidate on 100 bootstrap batches like the reference
(issue 28). ``resampled_suppressed_shares`` counts each batch's (tuple, class) cells
from the row multiplicities instead of building and suppressing the batch, so a table
of any size gets the 100 batches. It must give exactly what ``suppress_table`` finds on
the batch those multiplicities build.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.release import resampled_suppressed_shares, suppress_table


@st.composite
def _tables(draw):
    n = draw(st.integers(1, 60))
    n_cols = draw(st.integers(1, 4))
    cols = {f"c{i}": draw(st.lists(st.sampled_from([0, 1, 2, 3, None]), min_size=n,
                                   max_size=n)) for i in range(n_cols)}
    table = pd.DataFrame(cols, dtype=object)
    table["y"] = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    # a random partition of the columns into groups
    labels = draw(st.lists(st.integers(0, n_cols - 1), min_size=n_cols, max_size=n_cols))
    groups = [[f"c{i}" for i in range(n_cols) if labels[i] == g] for g in set(labels)]
    batches = draw(st.lists(st.lists(st.integers(0, 3), min_size=n, max_size=n)
                            .filter(lambda m: sum(m) > 0), min_size=1, max_size=4))
    return table, groups, [np.asarray(m) for m in batches], draw(st.integers(1, 6))


@settings(max_examples=300, deadline=None)
@given(_tables())
def test_counted_shares_are_the_built_batches_suppression(case):
    table, groups, batches, k = case
    counted = resampled_suppressed_shares(table, groups, "y", k, batches)
    for share, m in zip(counted, batches):
        built = table.iloc[np.repeat(np.arange(m.size), m)].reset_index(drop=True)
        found = suppress_table(built, groups, "y", k)[1].to_dict()["max_suppressed_share"]
        assert share == found


def test_a_rare_cell_of_a_batch_suppresses_its_tuple():
    """Two classes of one tuple, one of them rare: the batches that draw fewer than k
    of it lose the whole tuple (the distinct 2-diversity closure), the others nothing."""
    table = pd.DataFrame({"x": ["t"] * 20 + ["f"] * 20,
                          "y": ["+"] * 10 + ["-"] * 10 + ["+"] * 5 + ["-"] * 15})
    keep_all = np.ones(40, dtype=int)
    thin = keep_all.copy()
    thin[20] = 0  # the fifth ("f", "+") row left out: four, below k = 5
    thin[30] = 2  # an ("f", "-") row twice: the batch keeps its size
    shares = resampled_suppressed_shares(table, [["x"]], "y", 5, [keep_all, thin])
    assert shares == [0.0, 20 / 40]
