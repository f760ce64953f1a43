"""GX expectation ``expect_surrogate_class_column_to_be_unchanged``."""

from __future__ import annotations

from ._families import NoDifferences


class ExpectSurrogateClassColumnToBeUnchanged(NoDifferences):
    """Integrity: the class column holds the original's labels, as a multiset.

    Not row for row: a release publishes its rows in a random order (the name is kept,
    a contract of the gate's results).
    """

    metric = "astrid.class_changes"
    sentence = ("The class column must hold the original's labels, each as often (changed "
                "labels must be 0).")
