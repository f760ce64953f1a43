"""GX expectation ``expect_surrogate_intact_row_proportion_to_be_at_most``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ._families import AtMost


class ExpectSurrogateIntactRowProportionToBeAtMost(AtMost):
    """Privacy: the proportion of the original's unique rows found unchanged in the
    surrogate (the paper's P_anon, Sec. 6.2) is at most ``threshold``. Under a declared
    attacker model (``k`` given) only the rows that disclose someone count: those whose
    quasi-identifiers and class fewer than ``k`` rows share, or rows of one class only;
    P_anon is reported beside."""

    category = "privacy"
    metric = "astrid.intact_row_proportion"
    parameter = "max_intact"
    kwarg_defaults: ClassVar[Mapping[str, Any]] = {**AtMost.kwarg_defaults, "k": 0}
    sentence = ("Intact-row proportion (share of the original's unique rows found unchanged "
                "in the surrogate; under a declared attacker model, of those that disclose "
                "someone) must be at most $threshold.")

    def _observe(self, value: Any) -> tuple[float, dict]:
        if isinstance(value, Mapping):  # a declared model: the disclosing rows counted
            return float(value["counted"]), {
                "counted": "rows whose quasi-identifiers and class fewer than k rows "
                           "share, or rows of one class only",
                "intact_row_proportion_all_rows": float(value["all_rows"])}
        return float(value), {}
