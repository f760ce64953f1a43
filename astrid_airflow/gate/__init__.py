"""The release gate: ``GatePolicy``, the Great Expectations suite (custom
expectations and metrics), Data Docs, the publishable-file shape checks.

Public names, exported lazily (:mod:`astrid_airflow._lazy`); the modules that own them
are private to this package (``tests/test_public_imports.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# public name -> the module of this package that owns it
_EXPORTS: dict[str, str] = {
    "render_validation_html": "._datadocs",
    "same_multiset": "._checks",
    "build_suite": "._gate",
    "gate_extra_files": "._gate",
    "GatePolicy": "._gate",
    "GateResult": "._gate",
    "result_paths": "._gate",
    "validate_surrogate": "._gate",
    "raw_release_demo_policy": "._presets",
}

if TYPE_CHECKING:
    from ._checks import same_multiset
    from ._datadocs import render_validation_html
    from ._gate import (
        GatePolicy,
        GateResult,
        build_suite,
        gate_extra_files,
        result_paths,
        validate_surrogate,
    )
    from ._presets import raw_release_demo_policy

__all__ = [
    "GatePolicy",
    "GateResult",
    "build_suite",
    "gate_extra_files",
    "raw_release_demo_policy",
    "render_validation_html",
    "result_paths",
    "same_multiset",
    "validate_surrogate",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
