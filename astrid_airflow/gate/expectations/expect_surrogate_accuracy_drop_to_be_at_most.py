"""GX expectation ``expect_surrogate_accuracy_drop_to_be_at_most``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar

from astrid_airflow.gate._checks import utility_observation

from ._mixins import AtMost

if TYPE_CHECKING:  # the field types; the real ones come from gx_kit() (see _registry)
    from astrid_airflow.gate._kit import Reference, Threshold


def define(kit: SimpleNamespace) -> type:
    class ExpectSurrogateAccuracyDropToBeAtMost(AtMost, kit.BatchExpectation):
        """Utility: accuracy of the classifier trained on a surrogate is at least the
        accuracy of the one trained on the original minus ``threshold``, both scored on
        the same held-out original rows."""

        threshold: Threshold
        reference: Reference = ""
        domain_keys: ClassVar[tuple[str, ...]] = ("batch_id",)
        success_keys: ClassVar[tuple[str, ...]] = ("threshold", "reference")
        metric_dependencies: ClassVar[tuple[str, ...]] = ("astrid.surrogate_utility",)
        _prescriptive_renderer = kit.prescriptive(
            "Surrogate accuracy must be at least the original accuracy minus $threshold "
            "(train on surrogate, test on the same held-out real rows).", ["threshold"])

        def _observe(self, metrics: dict) -> tuple[float, dict]:
            return utility_observation(metrics["astrid.surrogate_utility"])

    return ExpectSurrogateAccuracyDropToBeAtMost
