"""The one stratified sampler: the search's rule and the release layer's subsample rule.

``release.stratified_subsample`` was a second implementation with its own rounding; it
is now ``engine.stratified_sample(rounding="half_up", min_per_class=2)``. The digests
were taken from the two implementations before they were one function: a change to
either rule changes every sample drawn with it (the search's rows, the choice's and the
metrics' utility rows).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from astrid_airflow import ParameterError
from astrid_airflow.engine import stratified_sample
from astrid_airflow.release import stratified_subsample


def _cases():
    rng = np.random.default_rng(48)
    codes = rng.choice(5, size=1001, p=[0.5, 0.25, 0.15, 0.07, 0.03]).astype(np.int8)
    for size in (7, 50, 333, 1000, 5000):
        for seed in (0, 1):
            yield codes, size, np.random.SeedSequence(seed)


def _digest(sample) -> str:
    h = hashlib.sha256()
    for codes, size, seed in _cases():
        h.update(np.asarray(sample(codes, size, seed), dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def test_the_searchs_rule_draws_the_rows_it_drew():
    assert _digest(stratified_sample) == "5cfdc6c83ef252ff"


def test_the_subsample_rule_draws_the_rows_it_drew():
    assert _digest(stratified_subsample) == "e1e6335eadb56fda"


def test_the_two_roundings_differ_where_the_shares_are_halves():
    """Four classes of 3 rows, 6 wanted: 1.5 rows each. Half up gives every class 2;
    largest remainders give 6 rows in all, the extra ones to the earlier classes."""
    codes = np.repeat(np.arange(4), 3)
    seed = np.random.SeedSequence(0)
    half_up = stratified_sample(codes, 6, seed, min_per_class=1, rounding="half_up")
    largest = stratified_sample(codes, 6, seed, min_per_class=1)
    assert np.bincount(codes[half_up]).tolist() == [2, 2, 2, 2]
    assert np.bincount(codes[largest]).tolist() == [2, 2, 1, 1]
    assert np.bincount(codes[stratified_subsample(codes, 6, seed)]).tolist() == [2] * 4


def test_every_class_keeps_at_least_min_per_class_rows():
    codes = np.array([0] * 200 + [1] * 5)
    rows = stratified_sample(codes, 20, np.random.SeedSequence(1), min_per_class=4)
    assert np.bincount(codes[rows])[1] == 4
    assert stratified_sample(codes, 20, np.random.SeedSequence(1))[-5:].tolist() == \
        list(range(200, 205))  # the default 8 takes all of a 5-row class


def test_an_unknown_rounding_is_refused():
    with pytest.raises(ParameterError, match="rounding"):
        stratified_sample(np.zeros(10, dtype=int), 5, np.random.SeedSequence(0),
                          rounding="nearest")
