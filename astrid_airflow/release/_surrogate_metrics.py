"""Every metric of one surrogate in one call: :func:`surrogate_metrics` ->
:class:`SurrogateMetrics` (the measured and expected intact-row proportion, the largest
group's unique share, and the utility), as ``astrid shuffle --json`` records them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError
from astrid_airflow._validation import check_seed_sequence
from astrid_airflow.engine import pandas_class_codes
from astrid_airflow.io import read_arrow

from ._hashing import row_hashes
from ._metrics import prepared_source, privacy_metrics
from ._recipe import release_recipe
from ._surrogate import release_domain
from ._table_source import TableSource, table_source
from ._utility import stratified_subsample, surrogate_utility


@dataclass(frozen=True)
class SurrogateMetrics:
    """The metrics reported with every surrogate (``to_dict()`` is JSON-able).

    ``accuracy_*`` are None when utility was not computed; ``utility_rows`` is the number
    of reference rows the utility check used (a stratified subsample of large tables).
    """

    intact_row_proportion: float
    expected_intact_row_proportion: float
    largest_group_unique_share: float
    accuracy_original: float | None
    accuracy_surrogate: float | None
    accuracy_difference: float | None
    rows: int
    protects_nothing: bool
    groups: int
    largest_group: tuple[str, ...]
    utility_rows: int | None = None
    utility_note: str | None = None
    #: :attr:`UtilityResult.difference_se` (what the gate allows for as noise).
    accuracy_difference_se: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["largest_group"] = list(self.largest_group)
        return d


def surrogate_metrics(original: Any, surrogate: Any, grouping_or_artefact: Any, *,
                      target: str | None = None, utility: bool = True,
                      classifier: Any = None, random_state: object = None,
                      utility_max_rows: int = 20_000, n_repeats: int = 1,
                      remedies: bool = True) -> SurrogateMetrics:
    """All metrics of one surrogate of ``original``.

    Parameters
    ----------
    original, surrogate : DataFrame, pyarrow.Table or Parquet/CSV path
    grouping_or_artefact : GroupingArtefact, Grouping, str or list of lists
    target : str, optional
    utility : bool, default True
        Compute :func:`surrogate_utility` on ``original`` (its own split and
        surrogate; the ``surrogate`` argument is only used for the privacy metrics).
        If the data cannot support it (a class with fewer than 2 rows, a single class)
        the accuracies are None and ``utility_note`` gives the reason.
    classifier, random_state, n_repeats
        Passed to :func:`surrogate_utility`.
    utility_max_rows : int, default 20000
        Larger tables use a stratified subsample of this many rows for the utility
        check (classifier training cost grows faster than linearly); ``utility_note`` says
        so.
    remedies : bool, default True
        The surrogate is the artefact's remedied release (its recipe applied): the
        privacy metrics compare it with the original in the release's domain (the
        recipe applied to it) and the utility scores the remedied release.
    """
    src, grouping, target_name, artefact = prepared_source(original, grouping_or_artefact, target)
    recipe = release_recipe(artefact, remedies)
    published = src
    if recipe is not None:
        domain, found = release_domain(
            _as_frame(src) if src.path is None else read_arrow(src.path), recipe,
            target_name, grouping)
        published = table_source(domain, "original")
        # the utility scores the batch with the groups' rungs found here (not again)
        recipe = recipe.mixed(found.recipe_rungs, grouping.groups)
    intact, expected, unique_share = privacy_metrics(published, surrogate, grouping,
                                                      target_name)
    del published  # not held through the utility check's copies (peak memory)
    acc_o = acc_s = diff = diff_se = None
    utility_rows = note = None
    if utility:
        seed = check_seed_sequence(random_state)
        sub_seed, util_seed = seed.spawn(2)
        fit_rows = None
        if src.num_rows > utility_max_rows and recipe is not None:
            # a remedied release is suppressed on the batch's own counts: the whole
            # table, the classifiers on samples (surrogate_utility's max_fit_rows)
            frame, fit_rows = _as_frame(src), utility_max_rows
            note = (f"the classifiers trained on stratified samples of the {src.num_rows}"
                    f" rows' training part as a {utility_max_rows}-row table's split would"
                    " be; the recipe, local suppression and shuffle on all of it")
        elif src.num_rows > utility_max_rows:
            codes = pandas_class_codes(pd.Series(row_hashes(src, [target_name])), target_name)
            rows = stratified_subsample(codes, utility_max_rows, sub_seed)
            frame = _take_rows(src, rows)
            note = (f"utility computed on a stratified random subsample of {len(rows)} of "
                    f"{src.num_rows} rows")
        else:
            frame = _as_frame(src)
        try:
            res = surrogate_utility(frame, artefact if artefact is not None else grouping,
                                    target=target_name, classifier=classifier,
                                    random_state=util_seed, n_repeats=n_repeats,
                                    remedies=remedies, max_fit_rows=fit_rows,
                                    recipe=recipe)
        except DataError as exc:  # e.g. a one-class batch: the surrogate is still valid
            note = f"utility not computed: {exc}"
        else:
            acc_o, acc_s, diff = res.accuracy_original, res.accuracy_surrogate, res.difference
            diff_se = res.difference_se
            utility_rows = fit_rows or len(frame)  # the rows the classifiers saw
    else:
        note = "utility not computed"
    return SurrogateMetrics(
        intact_row_proportion=intact, expected_intact_row_proportion=expected,
        largest_group_unique_share=unique_share, accuracy_original=acc_o,
        accuracy_surrogate=acc_s, accuracy_difference=diff, rows=src.num_rows,
        protects_nothing=grouping.k == 1, groups=grouping.k,
        largest_group=tuple(max(grouping.groups, key=len)), utility_rows=utility_rows,
        utility_note=note, accuracy_difference_se=diff_se)


def _as_frame(src: TableSource) -> pd.DataFrame:
    if isinstance(src.table, pd.DataFrame):
        return src.table
    table = src.table if src.table is not None else read_arrow(src.path)
    return table.to_pandas()


def _take_rows(src: TableSource, rows: np.ndarray) -> pd.DataFrame:
    if isinstance(src.table, pd.DataFrame):
        return src.table.iloc[rows].reset_index(drop=True)
    table = src.table if src.table is not None else read_arrow(src.path)
    return table.take(rows).to_pandas()
