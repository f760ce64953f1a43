"""The encoder's categories are the strings of the values, whatever the column's dtype.

``_category_strings`` turns only the distinct values into strings; the invariant is that
each row still gets the string of its own value (missing values one category), as the
row-by-row conversion gave, so fitted encoders and the search's fits are unchanged.
"""

from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.engine._encoding import _MISSING, TableEncoder, _category_strings

_VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "1", "x y"]), st.integers(0, 3),
                    st.booleans(), st.sampled_from([1.0, 2.5, float("nan")]))


def _rowwise(col: pd.Series) -> list[str]:
    mask = col.isna().to_numpy()
    return [_MISSING if m else str(v) for v, m in zip(col.astype(object).to_numpy(), mask)]


@settings(max_examples=200, deadline=None)
@given(st.lists(_VALUES, max_size=40), st.sampled_from(["object", "str", "category"]))
def test_every_row_gets_the_string_of_its_own_value(values, dtype):
    col = pd.Series(values, dtype=object)
    if dtype == "str":
        col = pd.Series([None if pd.isna(v) else str(v) for v in values], dtype="str")
    elif dtype == "category":
        col = pd.Series([None if pd.isna(v) else str(v) for v in values], dtype="category")
    rows, names = _category_strings(col)
    assert [names[i] for i in rows] == _rowwise(col)


def test_an_unseen_category_encodes_as_no_column_and_1_differs_from_1_0():
    fit = pd.DataFrame({"c": pd.Series(["a", "b", None], dtype="str"),
                        "o": pd.Series([1, 1.0, "x"], dtype=object)})
    enc = TableEncoder().fit(fit)
    out = enc.transform(pd.DataFrame({"c": pd.Series(["b", "z", None], dtype="str"),
                                      "o": pd.Series([1.0, 1, "y"], dtype=object)}))
    # c: categories missing, a, b; o: "1", "1.0", "x" (one-hot, in sorted order)
    assert out.shape == (3, 6)
    assert out[:, :3].tolist() == [[0, 0, 1], [0, 0, 0], [1, 0, 0]]
    assert out[:, 3:].tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]
