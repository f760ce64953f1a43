"""GX expectation ``expect_surrogate_cross_group_linkage_to_be_at_most_expected``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from astrid_airflow.gate._checks import judge_linkage

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateCrossGroupLinkageToBeAtMostExpected(kit.BatchExpectation):
        """Privacy: for every pair of groups, the share of rows whose two group tuples
        still sit together as in an original row of the same class exceeds its
        expectation under independent within-class shuffles by at most
        ``max(threshold, 6 sd)``: the groups really were shuffled independently."""

        threshold: Threshold
        reference: Reference = ""
        grouping: list
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference", "grouping")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.cross_group_linkage",)
        _prescriptive_renderer = kit.prescriptive(
            "For every pair of groups, the share of rows still linked as in the original "
            "must exceed its expectation under independent shuffles by at most "
            "$threshold (or 6 standard deviations, if larger).", ["threshold"])

        def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
            threshold = float(self.configuration.kwargs["threshold"])
            ok, observed, details = judge_linkage(metrics["astrid.cross_group_linkage"],
                                                  threshold)
            return {"success": ok, "result": {"observed_value": observed,
                                              "details": {"threshold": threshold, **details}}}

    return ExpectSurrogateCrossGroupLinkageToBeAtMostExpected
