"""GX expectation ``expect_surrogate_accuracy_drop_to_be_at_most``."""

from __future__ import annotations

from astrid_airflow.gate._checks import utility_observation

from ._families import AtMost


class ExpectSurrogateAccuracyDropToBeAtMost(AtMost):
    """Utility: accuracy of the classifier trained on a surrogate is at least the
    accuracy of the one trained on the original minus ``threshold``, both scored on
    the same held-out original rows."""

    category = "utility"
    metric = "astrid.surrogate_utility"
    parameter = "max_accuracy_drop"
    sentence = ("Surrogate accuracy must be at least the original accuracy minus $threshold "
                "(train on surrogate, test on the same held-out real rows).")

    def _observe(self, value):  # the drop, with both accuracies in the details
        return utility_observation(value)
