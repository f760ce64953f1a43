"""Integers of any width hash and count without overflow, and never merge by rounding.

uint64 columns and int64 values near 2^63 once crashed learn and the metrics (Arrow's
cast to float64 refuses integers beyond 2^53); rounding them to floats would also have
merged distinct IDs into one value, which makes equivalence classes look larger than
they are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.release import intact_row_proportion, largest_group_unique_share, row_hashes
from astrid_airflow.release._hashing import _Column, _hash_array

_INT64 = st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
_NEAR_EDGE = st.one_of(_INT64, st.integers(2 ** 53 - 4, 2 ** 53 + 4),
                       st.integers(-(2 ** 53) - 4, -(2 ** 53) + 4),
                       st.integers(2 ** 63 - 8, 2 ** 63 - 1))


@settings(max_examples=200, deadline=None)
@given(st.lists(_NEAR_EDGE, min_size=1, max_size=30))
def test_int64_hashes_equal_exactly_where_values_are_equal(values):
    h = _hash_array(pa.array(values, pa.int64()))
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            assert (h[i] == h[j]) == (a == b)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=30))
def test_uint64_hashes_equal_exactly_where_values_are_equal(values):
    h = _hash_array(pa.array(values, pa.uint64()))
    assert len({*h.tolist()}) == len(set(values))
    for i, a in enumerate(values):
        assert h[i] == h[values.index(a)]


@settings(max_examples=100, deadline=None)
@given(st.lists(_NEAR_EDGE, min_size=1, max_size=20))
def test_an_integer_that_is_exactly_a_float_hashes_as_that_float(values):
    exact = [v for v in values if int(float(v)) == v and float(v) < 2.0 ** 63]
    if not exact:
        return
    as_int = _hash_array(pa.array(exact, pa.int64()))
    as_float = _hash_array(pa.array([float(v) for v in exact], pa.float64()))
    assert (as_int == as_float).all()


def test_wide_integer_columns_have_no_codes_and_the_same_hashes():
    column = _Column(pa.chunked_array([pa.array([2 ** 62 + 1, 2 ** 62 + 1, 7], pa.int64())]),
                     codes=True)
    assert column.codes is None
    assert (column.hashes() == _hash_array(pa.array([2 ** 62 + 1, 2 ** 62 + 1, 7]))).all()


def test_metrics_of_a_table_with_a_uint64_id_and_values_near_two_to_the_63():
    ids = np.array([2 ** 64 - 1 - i for i in range(6)], dtype=np.uint64)
    big = np.array([2 ** 63 - 1, 2 ** 63 - 2, 2 ** 53 + 1, 2 ** 53, 5, 5], dtype=np.int64)
    table = pd.DataFrame({"id": ids, "big": big, "class": ["a", "a", "a", "b", "b", "b"]})
    hashes = row_hashes(table, ["big"])
    assert len(set(hashes.tolist())) == 5  # 2^53 + 1 and 2^53 stay apart
    assert intact_row_proportion(table, table, columns=["id", "big", "class"]) == 1.0
    assert largest_group_unique_share(table, "id,big", target="class") == 1.0
