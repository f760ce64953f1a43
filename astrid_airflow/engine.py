"""Public building blocks of the ASTRID engine, for benchmarks and experiments.

``astrid`` and ``test_grouping`` (exported from :mod:`astrid_airflow`) are the engine's
entry points; the pieces here let a benchmark time or reproduce one step (the class
codes, the stratified splits, the encoded fit data, the forest backend). The owning
modules are private; in the layout move this module becomes the ``engine``
subpackage's ``__init__``.
"""

from __future__ import annotations

from ._encoding import is_numeric_column
from ._fits import Task, prepare_fit_data, run_one
from ._forest import onedal_available
from ._permutation import class_codes
from ._split import prepare, stratified_split
from ._surrogate import CHUNK_ROWS as SHUFFLE_CHUNK_ROWS

__all__ = [
    "SHUFFLE_CHUNK_ROWS",
    "Task",
    "class_codes",
    "is_numeric_column",
    "onedal_available",
    "prepare",
    "prepare_fit_data",
    "run_one",
    "stratified_split",
]
