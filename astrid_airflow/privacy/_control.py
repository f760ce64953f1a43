"""Control rows that overlap the original: detected and refused.

The attacks compare their success on the released rows with their success on *control*
rows, rows of the same population that did not go into the release (Giomi et al.
2023). Control rows that are in fact original rows succeed as often as the released
ones, so the measured risk (the difference) falls towards zero: an overlapping
``--control`` understates every attack risk. A privacy officer would rather be told no
than given a low number, so an overlap beyond chance is refused (``DataError``).

"Beyond chance": in a table of coarse values two people can share a whole row, so a
genuine control sample shares some rows with the original too. The chance of that is
estimated on the original itself: the share of its rows whose values occur in another
of its rows. An overlap above that share by more than three binomial standard errors
is refused; with no duplicated row in the original (continuous values), one shared row
is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError


def control_overlap(original: pd.DataFrame, control: pd.DataFrame,
                    columns: Sequence[str]) -> dict[str, Any]:
    """How many ``control`` rows equal a row of ``original`` on ``columns``, against chance.

    Returns
    -------
    dict
        ``shared_rows`` (control rows whose values occur in the original),
        ``control_rows``, ``share`` (their share), ``expected_share`` (the share of
        original rows whose values occur in another original row: what a disjoint sample
        of the same population shares by chance), ``limit`` (expected share plus three
        standard errors) and ``refused`` (``share > limit``).

    Examples
    --------
    >>> o = pd.DataFrame({"a": [1.5, 2.5, 3.5, 4.5], "y": [0, 1, 0, 1]})
    >>> control_overlap(o, o.iloc[:2], ["a", "y"])["refused"]
    True
    >>> control_overlap(o, o.assign(a=o["a"] + 10), ["a", "y"])["shared_rows"]
    0
    """
    from astrid_airflow.release import row_hashes

    cols = list(columns)
    ho, hc = row_hashes(original, cols), row_hashes(control, cols)
    shared = int(np.isin(hc, ho).sum())
    _, inverse, counts = np.unique(ho, return_inverse=True, return_counts=True)
    expected = float((counts[inverse] > 1).mean()) if ho.size else 0.0
    n = int(hc.size)
    limit = expected + 3.0 * math.sqrt(expected * (1.0 - expected) / n) if n else 1.0
    share = shared / n if n else 0.0
    return {"shared_rows": shared, "control_rows": n, "share": share,
            "expected_share": expected, "limit": min(1.0, limit), "refused": share > limit}


def check_control(original: pd.DataFrame, control: pd.DataFrame,
                  columns: Sequence[str], *, shown: str = "--control") -> dict[str, Any]:
    """:func:`control_overlap`, raising ``DataError`` when it is refused."""
    found = control_overlap(original, control, columns)
    if found["refused"]:
        raise DataError(
            f"{shown} shares {found['shared_rows']} of its {found['control_rows']} rows "
            f"with the original ({found['share']:.3f}; rows of this population coincide "
            f"by chance {found['expected_share']:.3f} of the time): control rows must not "
            "be in the release, or every attack risk is understated. Give rows that did "
            "not go into the surrogate, or no --control (a shadow release).")
    return found
