"""The utility check's sampled surrogate is the whole surrogate's sample (issue 33).

Above ``max_fit_rows`` the classifiers train on a stratified sample of the surrogate of
the training part. The sample is built from its rows only (a 1M-row surrogate is never
held); these tests state that it is the same frame as sampling the whole surrogate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow import make_surrogate
from astrid_airflow.engine import as_grouping
from astrid_airflow.release._utility import _sample, _sampled_surrogate


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "a": rng.normal(size=n), "b": rng.integers(0, 4, n),
        "c": pd.array(rng.choice(["u", "v", "w"], n), dtype="str"),
        "d": rng.choice([1.5, np.nan, 2.5], n),
        "y": rng.choice(["n", "p", "q"], n, p=[0.6, 0.3, 0.1]),
    }, index=pd.RangeIndex(n) * 2 + 5)


@pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(12, 200),
       share=st.floats(0.05, 0.95), groups=st.sampled_from(["a,b;c;d", "a;b;c;d", "a,b,c,d"]))
def test_the_sampled_surrogate_is_the_whole_surrogates_sample(seed, n, share, groups):
    table = _table(n, seed)
    grouping = as_grouping(groups)
    rows = max(6, int(n * share))

    def seeds():  # fresh each time: spawning from a SeedSequence advances it
        return np.random.SeedSequence(seed).spawn(2)

    shuffle_seed, sample_seed = seeds()
    whole = _sample(make_surrogate(table, grouping, target="y", random_state=shuffle_seed),
                    "y", rows, sample_seed)
    shuffle_seed, sample_seed = seeds()
    part = _sampled_surrogate(table, grouping, "y", shuffle_seed, rows, sample_seed)
    pd.testing.assert_frame_equal(part, whole)
