"""GX expectation ``expect_surrogate_class_column_to_be_unchanged``."""

from __future__ import annotations

from ._families import NoDifferences


class ExpectSurrogateClassColumnToBeUnchanged(NoDifferences):
    """Integrity: the class column equals the original's, row for row."""

    metric = "astrid.class_changes"
    sentence = ("The class column must equal the original's row for row (changed labels "
                "must be 0).")
