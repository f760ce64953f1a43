"""GX expectation ``expect_surrogate_column_values_to_match_original_per_class``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import NoDifferences

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateColumnValuesToMatchOriginalPerClass(NoDifferences, kit.BatchExpectation):
        """Integrity: within every class, every column has the original's multiset of
        values (what a GoldenEye shuffle guarantees)."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.multiset_differences",)
        _prescriptive_renderer = kit.prescriptive(
            "Within every class, every column must hold the original's multiset of values "
            "(differing class/column pairs must be 0).", [])

    return ExpectSurrogateColumnValuesToMatchOriginalPerClass
