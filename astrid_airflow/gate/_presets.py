"""Named gate-policy presets as plain dicts (cheap: the example DAGs read them at parse time).

Kept apart from ``_gate`` so a DAG file can name a preset without importing pandas, numpy
or Great Expectations; ``GatePolicy`` validates the dict when the task runs.
"""

from __future__ import annotations

from typing import Any

#: Fields :meth:`GatePolicy.raw_release_demo` sets to 1.0 (report only): the per-group
#: disclosure checks, the largest-group unique share and the attack checks.
RAW_RELEASE_RELAXED: dict[str, float] = {
    "max_share_below_k": 1.0, "max_class_disclosure_share": 1.0,
    "max_largest_group_unique_share": 1.0,
    # the attack checks: report only (a small demo table also gives too few attacks to
    # bound a risk below its default threshold)
    "max_singling_out_risk": 1.0, "max_linkability_risk": 1.0, "max_inference_risk": 1.0,
    # a raw column publishes every (value, class) pair: the class from one value
    "max_class_from_one_column_risk": 1.0,
    # nothing is suppressed in a raw release; the budget does not apply
    "max_suppressed_share": 1.0,
}


def raw_release_demo_policy(**overrides: Any) -> dict[str, Any]:
    """``GatePolicy.raw_release_demo(**overrides).to_dict()`` without importing the gate.

    Only the fields it sets (plus ``overrides``); every other field keeps its default
    when the operator builds the ``GatePolicy``. **A release passed with it is NOT
    protected against singling out, class disclosure or linkage through a large group.**

    Examples
    --------
    >>> raw_release_demo_policy(max_intact=0.01)["max_class_disclosure_share"]
    1.0
    """
    return {**RAW_RELEASE_RELAXED, **overrides}
