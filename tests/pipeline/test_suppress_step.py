"""The suppression of a column's rare categories, counted on its (category, class) table.

``_suppress_step`` once rebuilt the suppressed column and cross-tabulated it for every
category it dropped (a third of the release choice on a 30-column table); it now counts
on the contingency table. The invariant: for any column, classes, k and thresholds it
keeps exactly the categories the frame-rebuilding reference below keeps, in the same
order (the reference is the code it replaced).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from astrid_airflow.pipeline._fit_recipe import _suppress_step, column_class_risk, group_risk
from astrid_airflow.release import suppressed_share


def _reference(series, labels, k, column, ptype, max_below, max_disclosure,
               max_column_risk=math.inf):
    counts = series.value_counts(dropna=True)
    keep = [v for v, c in counts.items() if c >= k]
    while True:
        remedied = series.where(series.isin(keep) | series.isna())
        below, disclosure, _ = group_risk(remedied.to_frame(), labels, k)
        if not keep:
            break
        if below <= max_below and disclosure <= max_disclosure and suppressed_share(
                remedied.to_frame(), labels, k) <= min(max_below, max_disclosure):
            if max_column_risk == math.inf or \
                    column_class_risk(remedied, labels) <= max_column_risk:
                break
            keep = [v for v in keep if v != min(keep, key=lambda v: (counts[v], keep.index(v)))]
            continue
        by = pd.crosstab(remedied, pd.Series(np.asarray(labels), index=series.index))
        present = (by > 0).sum(axis=1)
        big = (by >= k).sum(axis=1)
        single = by[(present == 1) | (big < 2)]
        worst = single.sum(axis=1).idxmin() if len(single) else \
            by.where(by > 0).min(axis=1).idxmin()
        keep = [v for v in keep if v != worst]
    if len(keep) == len(counts):
        return None
    return {"method": "suppress", "column": column,
            "keep": [v.item() if hasattr(v, "item") else v for v in keep],
            "published_type": ptype}


@st.composite
def columns(draw):
    n = draw(st.integers(0, 120))
    levels = draw(st.integers(1, 12))
    skew = draw(st.floats(0.0, 3.0))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = np.exp(-skew * np.arange(levels))
    values = rng.choice(levels, n, p=p / p.sum())
    kind = draw(st.sampled_from(["str", "object", "int", "category"]))
    if kind == "int":
        series = pd.Series(values * 7 - 3)
    else:
        series = pd.Series([f"v{v}" for v in values], dtype="str" if kind == "str" else object)
        if kind == "category":
            series = series.astype("category")
    if n and draw(st.booleans()):  # some missing values
        series = series.mask(rng.random(n) < draw(st.floats(0.0, 0.4)))
    n_classes = draw(st.integers(1, 4))
    labels = rng.choice([f"c{c}" for c in range(n_classes)], n)
    return series, labels


#: A share exactly at the budget (1 of 20 rows): suppressed_share's rounding decides.
_AT_THE_BUDGET = (pd.Series(list("11010101010110100000"), dtype="str").radd("v"),
                  np.array(["c0", "c2", "c0", "c0", "c1", "c1", "c0", "c2", "c2", "c2", "c0",
                            "c2", "c0", "c1", "c2", "c0", "c2", "c0", "c0", "c2"]))


@settings(max_examples=300, deadline=None)
@given(columns(), st.integers(1, 8), st.sampled_from([0.0, 0.02, 0.05, 0.2, 1.0]),
       st.sampled_from([0.0, 0.05, 0.3, 1.0]), st.sampled_from([math.inf, 0.9, 0.6]))
@example(_AT_THE_BUDGET, 2, 0.05, 0.05, math.inf)
def test_the_counted_suppression_keeps_what_the_rebuilt_frames_keep(
        column, k, max_below, max_disclosure, max_column_risk):
    series, labels = column
    got = _suppress_step(series, labels, k, "x", "string", max_below, max_disclosure,
                         max_column_risk)
    want = _reference(series, labels, k, "x", "string", max_below, max_disclosure,
                      max_column_risk)
    assert got == want


@st.composite
def numeric_columns(draw):
    n = draw(st.integers(1, 400))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["normal", "integers", "ties"]))
    values = {"normal": lambda: rng.normal(size=n),
              "integers": lambda: rng.integers(0, 60, n).astype(float),
              "ties": lambda: rng.choice([0.5, 1.0, 2.5, 7.0], n)}[kind]()
    if draw(st.booleans()):
        values[rng.random(n) < 0.1] = np.nan
    n_classes = draw(st.integers(1, 3))
    # the class leans on the value, so some cuts are informative
    signal = np.nan_to_num(values) + rng.normal(scale=draw(st.floats(0.1, 5.0)), size=n)
    labels = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return values, labels


@settings(max_examples=200, deadline=None)
@given(numeric_columns(), st.integers(1, 10))
def test_every_bin_count_of_the_ladder_is_binned_as_on_its_own(column, k):
    # a column sorted and cut once for the ladder's largest count gives each smaller
    # count the bins a binning for that count alone gives: its cuts are a prefix
    from astrid_airflow.pipeline._fit_bins import ColumnBins
    from astrid_airflow.release import BIN_LADDER

    values, labels = column
    once = ColumnBins(values, labels, k, max(BIN_LADDER))
    for n_bins in BIN_LADDER:
        alone = ColumnBins(values, labels, k, n_bins)
        assert once.step(n_bins, "x", "float") == alone.step(n_bins, "x", "float")
        assert len(alone.cuts) <= n_bins - 1
