"""GX expectation ``expect_surrogate_schema_to_match_original``."""

from __future__ import annotations

from ._families import NoDifferences


class ExpectSurrogateSchemaToMatchOriginal(NoDifferences):
    """Integrity: same columns, in the same order, of the same kinds."""

    metric = "astrid.schema_differences"
    sentence = ("Columns, their order and their types must match the original (differences "
                "must be 0).")
