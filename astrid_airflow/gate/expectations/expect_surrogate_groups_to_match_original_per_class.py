"""GX expectation ``expect_surrogate_groups_to_match_original_per_class``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import NoDifferences

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateGroupsToMatchOriginalPerClass(NoDifferences, kit.BatchExpectation):
        """Integrity: within every class, the value tuples of every group of the
        artefact's grouping have the original's multiset, i.e. the surrogate was
        shuffled with this grouping (or a coarser one), not a finer one."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        groups: list
        success_keys: ClassVar[tuple[str, ...]] = ("reference", "groups")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.multiset_differences",)
        _prescriptive_renderer = kit.prescriptive(
            "Within every class, the columns of each group $groups must move together: "
            "each group's value tuples must keep the original's multiset (differing "
            "class/group pairs must be 0).", ["groups"])

    return ExpectSurrogateGroupsToMatchOriginalPerClass
