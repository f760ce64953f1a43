"""GX expectation ``expect_surrogate_row_count_to_match_original``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateRowCountToMatchOriginal(kit.BatchExpectation):
        """Integrity: the surrogate has exactly as many rows as the original."""

        reference: Reference
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("reference",)
        metric_dependencies: ClassVar[tuple[str, ...]] = (
            "table.row_count", "astrid.reference_row_count")
        _prescriptive_renderer = kit.prescriptive(
            "Must have exactly as many rows as the original.", [])

        def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
            rows, expected = int(metrics["table.row_count"]), \
                int(metrics["astrid.reference_row_count"])
            return {"success": rows == expected,
                    "result": {"observed_value": rows, "details": {"threshold": expected}}}

    return ExpectSurrogateRowCountToMatchOriginal
