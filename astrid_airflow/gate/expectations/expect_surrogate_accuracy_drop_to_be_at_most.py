"""GX expectation ``expect_surrogate_accuracy_drop_to_be_at_most``."""

from __future__ import annotations

from astrid_airflow.gate._checks import judge_utility

from ._families import Thresholded


class ExpectSurrogateAccuracyDropToBeAtMost(Thresholded):
    """Utility: accuracy of the classifier trained on a surrogate is at least the
    accuracy of the one trained on the original minus ``threshold``, both scored on
    the same held-out original rows, allowing for the estimate's sampling noise
    (``UTILITY_Z`` standard errors: an honest release is refused by chance at most 1 %
    of the time)."""

    category = "utility"
    metric = "astrid.surrogate_utility"
    parameter = "max_accuracy_drop"
    sentence = ("Surrogate accuracy must be at least the original accuracy minus $threshold "
                "(train on surrogate, test on the same held-out real rows; beyond 2.33 "
                "standard errors of the estimate).")

    def _judge(self, value, threshold):  # the drop, both accuracies and the allowance
        return judge_utility(value, threshold)
