"""GX expectation ``expect_surrogate_row_count_to_match_original``."""

from __future__ import annotations

from typing import Any, ClassVar

from ._families import REQUIRED, GateExpectation


class ExpectSurrogateRowCountToMatchOriginal(GateExpectation):
    """Integrity: the surrogate has exactly as many rows as the original."""

    category = "integrity"
    metric = "astrid.reference_row_count"
    gx_metrics = ("table.row_count",)
    kwarg_defaults: ClassVar[dict[str, Any]] = {"reference": REQUIRED}
    sentence = "Must have exactly as many rows as the original."

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        rows, expected = int(metrics["table.row_count"]), int(metrics[self.metric])
        return {"success": rows == expected,
                "result": {"observed_value": rows, "details": {"threshold": expected}}}
