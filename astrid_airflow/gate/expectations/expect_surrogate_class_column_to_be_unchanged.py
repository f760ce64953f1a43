"""GX expectation ``expect_surrogate_class_column_to_be_unchanged``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import NoDifferences

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateClassColumnToBeUnchanged(NoDifferences, kit.BatchExpectation):
        """Integrity: the class column equals the original's, row for row."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.class_changes",)
        _prescriptive_renderer = kit.prescriptive(
            "The class column must equal the original's row for row (changed labels "
            "must be 0).", [])

    return ExpectSurrogateClassColumnToBeUnchanged
