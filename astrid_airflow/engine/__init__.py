"""The ASTRID engine: groupings, the GoldenEye permutation, the test (Problem 1)
and the search (Problem 2) with its classifiers, fits, adaptive mode, cost
estimate and synthetic tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from astrid_airflow._lazy import lazy_exports

# ruff: noqa: F401 - the public names, served lazily by astrid_airflow._lazy
if TYPE_CHECKING:
    from ._adaptive import AdaptiveConfig
    from ._budget import Deadline
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
        release_permutations,
        row_order,
        run_threaded,
        seed_of_copies,
        shuffle_frame,
        small_codes,
    )
    from ._progress import RunProgress, StageProgress, StageRate, format_seconds, stage_progress
    from ._result import AstridResult, GroupingTestResult
    from ._sample import large_table_defaults, stratified_sample
    from ._screen import blocks_of, screen_pairs, screen_triples
    from ._search import astrid
    from ._settings import SearchSettings
    from ._split import prepare, stratified_split
    from ._synthetic import make_mixed_table, make_planted, make_synthetic
    from ._test import test_grouping

__getattr__, __dir__, __all__, _EXPORTS = lazy_exports(__name__)
