"""GX expectation ``expect_surrogate_synthetic_tuples_to_be_no_closer_than_real``."""

from __future__ import annotations

from typing import Any, ClassVar

from astrid_airflow.gate._checks import judge_closeness

from ._families import REQUIRED, GateExpectation


class ExpectSurrogateSyntheticTuplesToBeNoCloserThanReal(GateExpectation):
    """Privacy: in every synthesised group, synthetic tuples are no closer to the
    batch's real tuples than real tuples are to each other (distance to the closest
    record within class, at the 5 % quantile, beyond sampling error)."""

    category = "privacy"
    metric = "astrid.synthetic_closeness"
    kwarg_defaults: ClassVar[dict[str, Any]] = {"reference": REQUIRED, "grouping": REQUIRED}
    sentence = ("In every synthesised group, the share of synthetic tuples as close to a "
                "real one as the closest 5 % of real tuples are to each other must not "
                "exceed the real share beyond sampling error.")

    def _validate(self, metrics, runtime_configuration=None, execution_engine=None):
        ok, observed, details = judge_closeness(metrics[self.metric])
        return {"success": ok, "result": {"observed_value": observed,
                                          "details": details}}
