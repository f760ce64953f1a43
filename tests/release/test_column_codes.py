"""Local suppression's column codes group exactly the rows with equal values.

``_pandas_codes`` factorizes a column in its own dtype; the invariant the suppression
counts rest on is that two rows share a code iff their values are equal as Python
objects (every missing value one value), whatever the dtype.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.release._suppression import _pandas_codes

_VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]), st.integers(0, 3),
                    st.sampled_from([0.5, 2.0, float("nan")]))


def _objects(col: pd.Series) -> list:
    return [None if pd.isna(v) else v for v in col.astype(object)]


@settings(max_examples=200, deadline=None)
@given(st.lists(_VALUES, max_size=40),
       st.sampled_from(["object", "str", "category", "float"]))
def test_rows_share_a_code_iff_their_values_are_equal(values, dtype):
    if dtype == "float":
        values = [v if isinstance(v, float) else None for v in values]
        col = pd.Series(values, dtype=float)
    elif dtype == "object":
        col = pd.Series(values, dtype=object)
    else:
        col = pd.Series([None if v is None or v != v else str(v) for v in values],
                        dtype=dtype)
    codes, missing = _pandas_codes(col)
    objs = _objects(col)
    assert missing.tolist() == [v is None for v in objs]
    for i in range(len(objs)):
        for j in range(len(objs)):
            assert (codes[i] == codes[j]) == (objs[i] == objs[j])
