"""GX expectation ``expect_surrogate_column_values_to_match_original_per_class``."""

from __future__ import annotations

from ._families import NoDifferences


class ExpectSurrogateColumnValuesToMatchOriginalPerClass(NoDifferences):
    """Integrity: within every class, every column has the original's multiset of
    values (what a GoldenEye shuffle guarantees)."""

    metric = "astrid.multiset_differences"
    sentence = ("Within every class, every column must hold the original's multiset of "
                "values (differing class/column pairs must be 0).")
