"""The ASTRID engine: groupings, the GoldenEye permutation, the test (Problem 1)
and the search (Problem 2) with its classifiers, fits, adaptive mode, cost
estimate and synthetic tables.

Public names, exported lazily (:mod:`astrid_airflow._lazy`); the modules that own them
are private to this package (``tests/test_public_imports.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# public name -> the module of this package that owns it
_EXPORTS: dict[str, str] = {
    "AdaptiveConfig": "._adaptive",
    "make_classifier": "._classifiers",
    "is_numeric_column": "._encoding",
    "FitData": "._fits",
    "prepare_fit_data": "._fits",
    "run_one": "._fits",
    "Task": "._fits",
    "onedal_available": "._forest",
    "as_grouping": "._grouping",
    "group_letter": "._grouping",
    "Grouping": "._grouping",
    "letters": "._grouping",
    "class_codes": "._permutation",
    "goldeneye_indices": "._permutation",
    "goldeneye_permute": "._permutation",
    "group_permutations": "._permutation",
    "n_threads": "._permutation",
    "pandas_class_codes": "._permutation",
    "run_threaded": "._permutation",
    "seed_of_copies": "._permutation",
    "shuffle_frame": "._permutation",
    "small_codes": "._permutation",
    "AstridResult": "._result",
    "GroupingTestResult": "._result",
    "astrid": "._search",
    "large_table_defaults": "._sample",
    "prepare": "._split",
    "stratified_split": "._split",
    "make_planted": "._synthetic",
    "make_synthetic": "._synthetic",
    "test_grouping": "._test",
    "SHUFFLE_CHUNK_ROWS": "astrid_airflow.release:CHUNK_ROWS",
}

if TYPE_CHECKING:
    from astrid_airflow.release import CHUNK_ROWS as SHUFFLE_CHUNK_ROWS

    from ._adaptive import AdaptiveConfig
    from ._classifiers import make_classifier
    from ._encoding import is_numeric_column
    from ._fits import FitData, Task, prepare_fit_data, run_one
    from ._forest import onedal_available
    from ._grouping import Grouping, as_grouping, group_letter, letters
    from ._permutation import (
        class_codes,
        goldeneye_indices,
        goldeneye_permute,
        group_permutations,
        n_threads,
        pandas_class_codes,
        run_threaded,
        seed_of_copies,
        shuffle_frame,
        small_codes,
    )
    from ._result import AstridResult, GroupingTestResult
    from ._sample import large_table_defaults
    from ._search import astrid
    from ._split import prepare, stratified_split
    from ._synthetic import make_planted, make_synthetic
    from ._test import test_grouping

__all__ = [
    "AdaptiveConfig",
    "AstridResult",
    "FitData",
    "Grouping",
    "GroupingTestResult",
    "SHUFFLE_CHUNK_ROWS",
    "Task",
    "as_grouping",
    "astrid",
    "class_codes",
    "goldeneye_indices",
    "goldeneye_permute",
    "group_letter",
    "group_permutations",
    "is_numeric_column",
    "large_table_defaults",
    "letters",
    "make_classifier",
    "make_planted",
    "make_synthetic",
    "n_threads",
    "onedal_available",
    "pandas_class_codes",
    "prepare",
    "prepare_fit_data",
    "run_one",
    "run_threaded",
    "seed_of_copies",
    "shuffle_frame",
    "small_codes",
    "stratified_split",
    "test_grouping",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
