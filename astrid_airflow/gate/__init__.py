"""The release gate: ``GatePolicy``, the Great Expectations suite (custom
expectations and metrics), Data Docs, the publishable-file shape checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._checks import judge_utility, same_multiset
    from ._datadocs import render_validation_html
    from ._frontier import FrontierPoint, frontier_points, nearest_candidates, nearest_text
    from ._gate import gate_utility, validate_surrogate
    from ._policy import GatePolicy, check_policy
    from ._presets import raw_release_demo_policy
    from ._result import GateResult, result_paths
    from ._suite import build_suite, gate_extra_files
    from ._weaker import check_weaker_policy, weaker_fields, weaker_note, weaker_record

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
