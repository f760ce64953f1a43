"""The HTML release report: the page, its matplotlib figures, HTML escaping.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from astrid_airflow._html import safe_href, text

    from ._report import load_metrics, report_dir_for, write_report

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
