"""The HTML release report: the page, its matplotlib figures, HTML escaping.

Public names, exported lazily (:mod:`astrid_airflow._lazy`); the modules that own them
are private to this package (``tests/test_public_imports.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# public name -> the module of this package that owns it
_EXPORTS: dict[str, str] = {
    "safe_href": "._html",
    "text": "._html",
    "load_metrics": "._report",
    "report_dir_for": "._report",
    "write_report": "._report",
}

if TYPE_CHECKING:
    from ._html import safe_href, text
    from ._report import load_metrics, report_dir_for, write_report

__all__ = [
    "load_metrics",
    "report_dir_for",
    "safe_href",
    "text",
    "write_report",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
