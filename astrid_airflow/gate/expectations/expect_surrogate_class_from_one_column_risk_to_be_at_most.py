"""GX expectation ``expect_surrogate_class_from_one_column_risk_to_be_at_most``."""

from __future__ import annotations

from typing import Any, ClassVar

from astrid_airflow.gate._checks import judge_class_from_column

from ._families import GroupingRisk


class ExpectSurrogateClassFromOneColumnRiskToBeAtMost(GroupingRisk):
    """Privacy: the risk of inferring the class from any single column (Giomi et al.'s
    inference attack with one known column, exact on the release: every row attacked
    in the release and left out of it) has its upper 95 % bound at most
    ``threshold``."""

    metric: ClassVar[str] = "astrid.class_from_column_risks"
    parameter = "max_class_from_one_column_risk"
    sentence = ("The risk of inferring the class from any single column (exact, every row "
                "in and left out of the release) must have its upper 95 % bound at most "
                "$threshold.")

    def _judge(self, values: Any, threshold: float) -> tuple[bool, float | None, dict]:
        return judge_class_from_column(values, threshold)
