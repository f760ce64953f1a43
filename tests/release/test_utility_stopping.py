"""The utility check's sequential stop (``surrogate_utility(refuse_above=)``).

Scoring stops at a checkpoint once the mean drop over every planned split is certain to
exceed the threshold. What it may change is only how many of the same splits a refused
candidate is scored on: a result that stopped is the full scoring's on its first splits,
its drop is above the threshold, and a result that did not stop is the full one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import surrogate_utility
from astrid_airflow.release._utility import STOP_EVERY, drop_certainly_above

pytestmark = pytest.mark.filterwarnings("ignore::astrid_airflow.ProtectsNothingWarning")


def _table(n: int, seed: int) -> pd.DataFrame:
    """The class lives in the pair (a, b): splitting them loses accuracy."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 2, n), rng.integers(0, 2, n)
    return pd.DataFrame({"a": a, "b": b, "c": rng.normal(size=n),
                         "y": np.where(rng.random(n) < 0.9, a ^ b, 1 - (a ^ b))})


TABLE = _table(160, 0)
PLANNED = 4 * STOP_EVERY


def _score(grouping: str, seed: int, **kw):
    return surrogate_utility(TABLE, grouping, target="y", classifier="svm",
                             random_state=seed, n_repeats=PLANNED, **kw)


def test_a_candidate_far_over_the_threshold_is_scored_on_fewer_splits():
    full = _score("a;b;c", 0)
    assert full.accuracy_original - full.accuracy_surrogate > 0.25  # the pair split
    stopped = _score("a;b;c", 0, refuse_above=0.02)
    assert stopped.n_repeats < PLANNED
    assert stopped.accuracy_original - stopped.accuracy_surrogate > 0.02


@given(grouping=st.sampled_from(["a;b;c", "a,b;c", "a;b,c", "a,c;b"]),
       seed=st.integers(0, 2**16), threshold=st.floats(-0.2, 0.6))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_stop_is_the_full_scoring_on_its_first_splits_and_refuses(grouping, seed,
                                                                     threshold):
    full = _score(grouping, seed)
    got = _score(grouping, seed, refuse_above=threshold)
    if got.n_repeats == PLANNED:
        assert got == full
        return
    assert got.n_repeats % STOP_EVERY == 0
    assert got == surrogate_utility(TABLE, grouping, target="y", classifier="svm",
                                    random_state=seed, n_repeats=got.n_repeats)
    assert got.accuracy_original - got.accuracy_surrogate > threshold


@given(drops=st.lists(st.floats(-1, 1), min_size=2, max_size=20),
       planned_more=st.integers(0, 10), threshold=st.floats(-1, 1),
       lower=st.floats(0, 1), seed=st.integers(0, 100))
def test_the_rule_stops_only_above_the_threshold_and_more_readily_below_it(
        drops, planned_more, threshold, lower, seed):
    rng = np.random.default_rng(seed)
    rows = [rng.integers(-1, 2, 30).astype(float) for _ in drops]
    planned = len(drops) + planned_more
    stops = drop_certainly_above(np.array(drops), rows, planned, threshold)
    if stops:
        assert np.mean(drops) > threshold and len(drops) < planned
        # a lower bar is met as surely
        assert drop_certainly_above(np.array(drops), rows, planned, threshold - lower)
