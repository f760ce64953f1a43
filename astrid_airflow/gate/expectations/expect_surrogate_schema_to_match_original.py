"""GX expectation ``expect_surrogate_schema_to_match_original``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import NoDifferences

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateSchemaToMatchOriginal(NoDifferences, kit.BatchExpectation):
        """Integrity: same columns, in the same order, of the same kinds."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.schema_differences",)
        _prescriptive_renderer = kit.prescriptive(
            "Columns, their order and their types must match the original (differences "
            "must be 0).", [])

    return ExpectSurrogateSchemaToMatchOriginal
