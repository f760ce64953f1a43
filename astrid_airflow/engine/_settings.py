"""How ASTRID searches: one parameter object for :func:`~astrid_airflow.astrid`.

:class:`SearchSettings` holds every choice of a search apart from the data, the class
column and the seed: the classifier, the permutation budgets, the significance level,
parallelism, adaptive mode, the time budget, sampling and the pair screen. ``astrid``
takes it as ``settings=`` and still accepts each field as a keyword (a contract: the
keywords keep working and override the object's fields); the learn operator and the CLI
build one the same way.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import check_alpha, check_n_jobs, check_positive_int

from ._adaptive import ADAPTIVE_KEYWORDS, AdaptiveConfig
from ._sample import check_sample
from ._scoring import check_scoring


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """Every setting of an ASTRID search (:func:`~astrid_airflow.astrid`).

    :meth:`validated` checks every field and resolves ``adaptive`` to an
    :class:`AdaptiveConfig` or None (off).

    Attributes
    ----------
    classifier : {"svm", "rf", "nb", "hgb"} or scikit-learn classifier, default="svm"
    classifier_params : dict or None
        Parameters for the preset's model (e.g. ``{"n_estimators": 100}`` for ``rf``) or
        ``set_params`` names for a user pipeline.
    n_search : int, default=100
        R', permutations per evaluation of the reward T̂ (Eq. 5).
    n_test : int, default=250
        R, permutations per p-value (Eq. 3).
    alpha : float, default=0.05
        Significance level of the model selection.
    scoring : {"accuracy", "balanced_accuracy", "f1_macro"}, default="accuracy"
    n_jobs : int, default=1
    backend : str or None
        joblib backend; None uses joblib's default or an enclosing ``parallel_config``
        (e.g. a Dask cluster).
    progress : bool or None
        Progress bar on a terminal, log lines otherwise; None: only on a terminal.
    score_each_k : bool, default=True
        Also compute T̂ of every k's grouping on the search split (as the R package).
        Ignored in adaptive mode (not needed for the choice).
    adaptive : bool or AdaptiveConfig, default=False
        Racing in the search and sequential p-values (see the module docstring): far
        fewer fits, the same decisions up to a reported risk; ``n_search`` and ``n_test``
        become budgets. True uses the default :class:`AdaptiveConfig`; an
        ``AdaptiveConfig`` sets its risks, zones, batches and ``verify``. The stopping
        record is in ``result.adaptive``.
    adaptive_* keywords (of :meth:`of` and ``astrid``, not fields)
        The settings as keywords, as before ``AdaptiveConfig`` (a contract: they keep
        working): ``adaptive_risk``, ``adaptive_delta``, ``adaptive_delta_sd``,
        ``adaptive_batch``, ``adaptive_race_risk``, ``adaptive_race_batch``,
        ``adaptive_verify`` map to the fields ``risk``, ``delta``, ``delta_sd``,
        ``batch``, ``race_risk``, ``race_batch``, ``verify`` (applied over ``adaptive``
        when it is a config). Any other keyword is a ``TypeError``.
    max_seconds : float or None, default=None
        Budget in seconds, a bound from this call's start (see ``_budget``). Before the
        search a few fits are timed and the run is estimated (fits x seconds per fit /
        workers; adaptive mode: its expected count); the estimate is logged and recorded
        in the result (``estimate``, with the actual time). When the time already spent
        (sampling, calibration), the estimate and ``reserve_fits`` exceed the budget,
        ``over_budget`` decides. A search that still reaches the budget stops with
        ``BudgetError`` (nothing returned). None: no budget.
    over_budget : {"refuse", "sample"}, default="refuse"
        ``"refuse"``: raise ``BudgetError`` before the search, its one-line message
        saying what would fit (rows of a sample, the ``hgb`` preset, adaptive mode).
        ``"sample"``: learn on a stratified sample with as many rows as fit the budget
        (recorded in ``sample`` with ``rule = "budget"``).
    sample : int, "auto" or None, default=None
        Learn on a stratified sample of the table: an int is a number of rows; None
        uses every row. The sample is drawn from the run's seed (reproducible) and
        recorded in the result (``sample``). See docs/engine.md for what the p-values
        then mean.
    screen : {"auto", True, False}, default="auto"
        Before the sorting, test every pair of attributes for dependence given the class,
        then (up to 60 attributes) every triple for a three-way interaction no pair
        shows (no classifier fits); attributes dependent on none are detached first without
        evaluation, so the sorting's O(m²) fits run on the others only (see
        ``_screen``). "auto": for more than 40 attributes, or for a table of more than
        20,000 rows (the large-table path) with at least 4 attributes; the paper's
        tables (at most 36 attributes, 8,124 rows) are searched whole. Recorded in the
        result (``screen``). The p-values stay valid: the screen never sees the test
        split.
    reserve_fits : float, default=0
        Work after the search that ``max_seconds`` must also cover, in fits at the
        calibrated cost on one worker: the release choice's estimate
        (:func:`~astrid_airflow.release_choice_fits`). Counted in the budget check and
        in the time left of the progress lines; recorded as ``estimate.reserve_seconds``.
    """

    classifier: object = "svm"
    classifier_params: dict | None = None
    n_search: int = 100
    n_test: int = 250
    alpha: float = 0.05
    scoring: str = "accuracy"
    n_jobs: int = 1
    backend: str | None = None
    progress: bool | None = None
    score_each_k: bool = True
    adaptive: bool | AdaptiveConfig | None = False
    max_seconds: float | None = None
    over_budget: str = "refuse"
    sample: int | str | None = None
    screen: bool | str = "auto"
    reserve_fits: float = 0

    @classmethod
    def of(cls, settings: SearchSettings | Mapping[str, Any] | None = None,
           **options: Any) -> SearchSettings:
        """``settings`` (default settings if None) with ``options`` applied, validated.

        ``options`` are fields of this class or the ``adaptive_*`` keywords of
        :class:`AdaptiveConfig`; any other name is a ``TypeError``, as an unknown
        argument of ``astrid()`` always was.
        """
        base = settings if isinstance(settings, SearchSettings) else cls(**dict(settings or {}))
        names = {f.name for f in dataclasses.fields(cls)}
        adaptive_options = {k: v for k, v in options.items() if k not in names}
        fields = {k: v for k, v in options.items() if k in names}
        return dataclasses.replace(base, **fields).validated(adaptive_options)

    def validated(self, adaptive_options: Mapping[str, Any] | None = None) -> SearchSettings:
        """These settings checked (one ``ParameterError`` line per bad value, in the
        order ``astrid`` always checked them), with ``adaptive`` resolved to an
        :class:`AdaptiveConfig` or None (off)."""
        checked = dict(n_search=check_positive_int(self.n_search, "n_search"),
                       n_test=check_positive_int(self.n_test, "n_test"),
                       alpha=check_alpha(self.alpha), scoring=check_scoring(self.scoring),
                       n_jobs=check_n_jobs(self.n_jobs),
                       adaptive=_adaptive_config(self.adaptive, dict(adaptive_options or {})))
        if self.max_seconds is not None and not (_finite(self.max_seconds)
                                                 and self.max_seconds > 0):
            raise ParameterError(f"Invalid max_seconds: {self.max_seconds!r}. Must be a "
                                 "number > 0 or None.")
        if self.over_budget not in ("refuse", "sample"):
            raise ParameterError(f"Invalid over_budget: {self.over_budget!r}. Must be "
                                 "'refuse' or 'sample'.")
        checked["sample"] = check_sample(self.sample)
        if self.reserve_fits is not None and not (_finite(self.reserve_fits)
                                                  and self.reserve_fits >= 0):
            raise ParameterError(f"Invalid reserve_fits: {self.reserve_fits!r}. Must be a "
                                 "number >= 0.")
        if self.screen not in ("auto", True, False):
            raise ParameterError(f"Invalid screen: {self.screen!r}. Must be 'auto', True "
                                 "or False.")
        return dataclasses.replace(self, **checked)


def _finite(value: object) -> bool:
    """A finite real number (a bool is not one)."""
    return not isinstance(value, bool) and isinstance(value, numbers.Real) \
        and math.isfinite(value)


def _adaptive_config(adaptive: object, options: dict[str, Any]) -> AdaptiveConfig | None:
    """The run's :class:`AdaptiveConfig`, or None when adaptive mode is off.

    The ``adaptive_*`` keywords are mapped into the config (unknown keywords are a
    ``TypeError``); with adaptive mode off only the batch sizes are checked, as before.
    """
    if isinstance(adaptive, AdaptiveConfig):
        return AdaptiveConfig.from_keywords(adaptive, **options)
    if adaptive is None or isinstance(adaptive, (bool, np.bool_)) or (
            isinstance(adaptive, numbers.Integral) and adaptive in (0, 1)):
        if adaptive:
            return AdaptiveConfig.from_keywords(**options)
        checked = {k: v for k, v in options.items()
                   if k in ("adaptive_batch", "adaptive_race_batch")}
        AdaptiveConfig.from_keywords(**checked)
        unknown = sorted(set(options) - set(ADAPTIVE_KEYWORDS.values()))
        if unknown:
            raise TypeError(f"astrid() got unexpected keyword argument(s) {unknown}")
        return None
    raise ParameterError(f"Invalid adaptive: {adaptive!r}. Must be True, False or an "
                         "AdaptiveConfig.")
