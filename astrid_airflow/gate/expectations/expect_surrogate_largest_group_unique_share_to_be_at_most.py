"""GX expectation ``expect_surrogate_largest_group_unique_share_to_be_at_most``."""

from __future__ import annotations

from typing import Any, ClassVar

from ._families import REQUIRED, AtMost


class ExpectSurrogateLargestGroupUniqueShareToBeAtMost(AtMost):
    """Privacy: for the grouping's largest group, the share of rows whose values on
    that group's columns are unique in the table is at most ``threshold``."""

    category = "privacy"
    metric = "astrid.largest_group_unique_share"
    parameter = "max_largest_group_unique_share"
    kwarg_defaults: ClassVar[dict[str, Any]] = {"threshold": REQUIRED, "grouping": REQUIRED,
                                                 "reference": None}
    sentence = ("Share of rows unique on the largest group's columns (linkage risk) must be "
                "at most $threshold.")
