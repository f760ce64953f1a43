"""GX expectation ``expect_surrogate_intact_row_proportion_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from ._mixins import AtMost

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateIntactRowProportionToBeAtMost(AtMost, kit.BatchExpectation):
        """Privacy: the proportion of the original's unique rows found unchanged in the
        surrogate (the paper's P_anon, Sec. 6.2) is at most ``threshold``."""

        threshold: Threshold
        reference: Reference = ""
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.intact_row_proportion",)
        _prescriptive_renderer = kit.prescriptive(
            "Intact-row proportion (share of the original's unique rows found unchanged "
            "in the surrogate) must be at most $threshold.", ["threshold"])

    return ExpectSurrogateIntactRowProportionToBeAtMost
