"""GX expectation ``expect_surrogate_groups_to_match_original_per_class``."""

from __future__ import annotations

from typing import Any, ClassVar

from ._families import REQUIRED, NoDifferences


class ExpectSurrogateGroupsToMatchOriginalPerClass(NoDifferences):
    """Integrity: within every class, the value tuples of every group of the
    artefact's grouping have the original's multiset, i.e. the surrogate was
    shuffled with this grouping (or a coarser one), not a finer one."""

    metric = "astrid.multiset_differences"
    kwarg_defaults: ClassVar[dict[str, Any]] = {"reference": REQUIRED, "groups": REQUIRED}
    sentence = ("Within every class, the columns of each group $groups must move together: "
                "each group's value tuples must keep the original's multiset (differing "
                "class/group pairs must be 0).")
