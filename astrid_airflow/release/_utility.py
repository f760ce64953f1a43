"""Utility of a GoldenEye surrogate: train on the surrogate, test on real rows (Sec. 6.2).

:func:`surrogate_utility` splits the original into a training and a held-out part, makes
a surrogate of the *training part* only, and scores classifiers trained on the training
part and on its surrogate on the same held-out real rows, so rows a shuffle leaves
intact never leak into the score. :class:`UtilityResult` carries both accuracies and the
standard error of their difference for a new table of the same size (Nadeau and Bengio,
*Machine Learning* 52, 2003, for resampled splits).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow._validation import check_positive_int, check_seed_sequence
from astrid_airflow.engine import Grouping, as_grouping, pandas_class_codes, stratified_sample

from ._recipe import release_recipe
from ._surrogate import (
    ProtectsNothingWarning,
    applied_recipe,
    is_arrow_table,
    make_surrogate,
    remedied,
    resolve_grouping,
)


@dataclass(frozen=True)
class UtilityResult:
    """Train-on-surrogate / test-on-real accuracies (means over ``n_repeats`` splits)."""

    accuracy_original: float
    accuracy_surrogate: float
    difference: float
    n_train: int
    n_test: int
    n_repeats: int
    classifier: str
    #: Standard error of ``difference`` as an estimate for the population the table is
    #: drawn from (Nadeau-Bengio corrected, see ``_difference_se``): what the gate's
    #: accuracy check allows for before it calls a drop real.
    difference_se: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def classifier_preset(classifier: Any, artefact: Any) -> Any:
    if classifier is not None:
        return classifier
    spec = getattr(artefact, "classifier", None)
    if isinstance(spec, dict) and isinstance(spec.get("preset"), str):
        return spec["preset"]
    if isinstance(spec, str):
        return spec
    return "svm"


def surrogate_utility(table: Any, grouping_or_artefact: Any, *, target: str | None = None,
                      classifier: Any = None, test_size: float = 0.25,
                      random_state: object = None, n_repeats: int = 1,
                      remedies: bool = True, recipe: Any = None,
                      recipe_fitter: Callable[[pd.DataFrame], Any] | None = None,
                      suppression: bool = True, max_fit_rows: int | None = None,
                      refuse_above: float | None = None,
                      _original_hits: dict | None = None,
                      _domains: DomainMemo | None = None,
                      _scored: list[SplitScore] | None = None,
                      _upto: int | None = None) -> UtilityResult:
    # _original_hits: the release choice's memo of the original's classifier per split
    # (same table, classifier, random_state, n_repeats and test_size for every candidate:
    # the split and the original's fit do not depend on the grouping or the recipe);
    # _domains: its memo of each group's remedied columns per split part (DomainMemo);
    # _scored: the splits of this candidate scored so far, continued in place (the first
    # of the same splits: spawn's children do not depend on n_repeats); _upto: score no
    # more than this many splits now (n_repeats stays the plan the stop rule judges)
    """Accuracy of a classifier trained on a surrogate vs on the original (Sec. 6.2).

    The split comes first and the surrogate is made from the training part only: no
    held-out row can reappear intact in the data a scored classifier was trained on.

    Parameters
    ----------
    table : DataFrame or pyarrow.Table
        The reference table (attributes and class).
    grouping_or_artefact : GroupingArtefact, Grouping, str or list of lists
    target : str, optional
        Class column (required with a grouping).
    classifier : {"svm", "rf", "nb"} or scikit-learn classifier, optional
        Default: the artefact's preset, else ``"svm"``.
    test_size : float, default 0.25
        Held-out share of every class.
    random_state : None, int, SeedSequence or Generator
    n_repeats : int, default 1
        Independent splits (and surrogates) averaged.
    remedies : bool, default True
        Score the artefact's remedied release: the surrogate of the remedied training part,
        tested on held-out rows put in the release's domain. ``accuracy_original`` is
        always the raw table's, so the difference is the cost of shuffle plus remedies.
    recipe : ReleaseRecipe, optional
        A recipe to score instead of the artefact's.
    recipe_fitter : callable, optional
        ``fitter(train) -> ReleaseRecipe`` fitted on each training part, so the recipe is
        scored out of sample (in sample is optimistic); overrides ``recipe``.
    suppression : bool, default True
        Locally suppress the remedied training part as the shuffle does; False scores the
        recipe alone.
    max_fit_rows : int, optional
        Train the classifiers on a stratified sample of this many rows; the recipe,
        suppression and surrogate still use the whole training part (suppression depends
        on the counts).
    refuse_above : float, optional
        An accuracy drop the caller refuses: scoring stops at a checkpoint (every
        :data:`STOP_EVERY` splits) once the mean over all ``n_repeats`` splits is
        certain to exceed it (:func:`drop_certainly_above`); the result's ``n_repeats``
        is the splits scored, the first of the same splits.

    Returns
    -------
    UtilityResult
        ``accuracy_original``, ``accuracy_surrogate`` and ``difference`` (surrogate −
        original), both scored on the same held-out original rows.
    """
    from astrid_airflow.io import check_table

    grouping, target, artefact = resolve_grouping(grouping_or_artefact, target)
    if is_arrow_table(table):
        table = table.to_pandas()
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"surrogate_utility needs a DataFrame or pyarrow Table, got "
                        f"{type(table).__name__}.")
    if artefact is not None:
        table, _ = artefact.without_identifiers(table)
        artefact.check_table(table)
    check_table(table, target, min_rows_per_class=2)
    grouping.check_partition_of([c for c in table.columns if c != target])
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)) \
            or not 0.0 < test_size < 1.0:
        raise ParameterError(f"Invalid test_size: {test_size!r}. Must be a number in (0, 1).")
    n_repeats = check_positive_int(n_repeats, "n_repeats")
    classifier = classifier_preset(classifier, artefact)
    if recipe is None:
        recipe = release_recipe(artefact, remedies)
    if recipe_fitter is None and recipe is not None and recipe.fallbacks:
        # the rung the whole batch is published with, on every split (not each split's)
        recipe = applied_recipe(table, recipe, target, grouping)
    codes = pandas_class_codes(table[target], target)
    if not table.index.is_unique:  # the memo knows a part's rows by their labels
        _domains = None
    fit_rows = None
    if max_fit_rows is not None and len(table) > check_positive_int(max_fit_rows,
                                                                    "max_fit_rows"):
        held = int(np.ceil(test_size * max_fit_rows))  # as a max_fit_rows table's split
        fit_rows, test_size = max_fit_rows - held, held
    work = _Splits(table=table, codes=codes, test_size=test_size, target=target,
                   grouping=grouping, recipe=recipe, recipe_fitter=recipe_fitter,
                   suppression=suppression, fit_rows=fit_rows, classifier=classifier,
                   original_hits=_original_hits, domains=_domains)
    scored = [] if _scored is None else _scored
    upto = n_repeats if _upto is None else min(check_positive_int(_upto, "_upto"), n_repeats)
    for i, child in enumerate(check_seed_sequence(random_state).spawn(n_repeats)):
        if i >= upto:
            break
        if i < len(scored):  # scored by an earlier call on the same splits
            continue
        # a checkpoint before split i: stop once the drop is certainly refused
        if refuse_above is not None and i > 0 and i % STOP_EVERY == 0 and \
                splits_certainly_above(scored, n_repeats, refuse_above):
            break
        scored.append(work.score(i, child))
    done = scored[:upto]
    acc_o = [s.accuracy_original for s in done]
    acc_s = [s.accuracy_surrogate for s in done]
    a_o, a_s = float(np.mean(acc_o)), float(np.mean(acc_s))
    return UtilityResult(accuracy_original=a_o, accuracy_surrogate=a_s, difference=a_s - a_o,
                         n_train=done[-1].n_train, n_test=done[-1].n_test,
                         n_repeats=len(done),
                         classifier=classifier if isinstance(classifier, str) else
                         type(classifier).__name__,
                         difference_se=_difference_se(np.subtract(acc_s, acc_o),
                                                       [s.row_diffs for s in done],
                                                       done[-1].n_train, done[-1].n_test))


@dataclass(frozen=True)
class SplitScore:
    """One utility split's figures: both accuracies on its held-out rows, the paired
    per-row differences (surrogate minus original) and the parts' sizes."""

    accuracy_original: float
    accuracy_surrogate: float
    row_diffs: np.ndarray
    n_train: int
    n_test: int


def splits_certainly_above(scored: list[SplitScore], planned: int, threshold: float
                           ) -> bool:
    """:func:`drop_certainly_above` of the splits scored so far."""
    return drop_certainly_above(
        np.array([s.accuracy_original - s.accuracy_surrogate for s in scored]),
        [s.row_diffs for s in scored], planned, threshold)


@dataclass(frozen=True)
class _Splits:
    """What every split of one ``surrogate_utility`` call is scored with."""

    table: pd.DataFrame
    codes: np.ndarray
    test_size: float | int
    target: str
    grouping: Any
    recipe: Any
    recipe_fitter: Callable[[pd.DataFrame], Any] | None
    suppression: bool
    fit_rows: int | None
    classifier: Any
    original_hits: dict | None
    domains: Any

    def score(self, i: int, child: np.random.SeedSequence) -> SplitScore:
        """Split ``i``: the surrogate made from its training part alone, both classifiers
        scored on its held-out rows (the original's from the memo when kept)."""
        from sklearn.model_selection import train_test_split

        target, grouping = self.target, self.grouping
        # (a fourth stream for the samples: spawn keeps the first three as they were)
        split_seed, shuffle_seed, model_seed, sample_seed = child.spawn(4)
        try:
            train, test = train_test_split(
                self.table, test_size=self.test_size, stratify=self.codes,
                random_state=int(split_seed.generate_state(1)[0] >> 1))
        except ValueError as exc:  # a class too small for the held-out share
            raise DataError(f"Cannot split the table for the utility check: {exc}") from None
        recipe = self.recipe if self.recipe_fitter is None else self.recipe_fitter(train)
        train_seed, surrogate_seed = sample_seed.spawn(2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ProtectsNothingWarning)
            published = _remedied(train, recipe, target, grouping, self.suppression,
                                  self.domains)
            if self.fit_rows is None:
                surrogate = make_surrogate(published, grouping, target=target,
                                           random_state=shuffle_seed)
            else:  # each classifier on a sample of its training data
                train = _sample(train, target, self.fit_rows, train_seed)
                surrogate = _sampled_surrogate(published, grouping, target, shuffle_seed,
                                               self.fit_rows, surrogate_seed)
            del published
        seed = int(model_seed.generate_state(1)[0] >> 1)
        y_test = test[target].to_numpy()
        memo = self.original_hits
        original = memo.get(i) if memo is not None else None
        if original is None:
            original = _hits(self.classifier, seed, len(grouping.columns), train, test,
                             target) == y_test
            if memo is not None:
                memo[i] = original
        # held-out rows as a new person meets the model: real values where a group is
        # synthesised (its draws by their own class would hand the classifier the label)
        held_part = _remedied(test, None if recipe is None else recipe.without_synthesis(),
                              target, grouping, False, self.domains)
        hits = _hits(self.classifier, seed, len(grouping.columns), surrogate, held_part,
                     target) == y_test
        return SplitScore(accuracy_original=float(np.mean(original)),
                          accuracy_surrogate=float(np.mean(hits)),
                          row_diffs=hits.astype(float) - original.astype(float),
                          n_train=len(train), n_test=len(test))


class DomainMemo:
    """The release choice's memo of each group's remedied columns on each utility split's
    parts: a group's remedy and its local suppression depend on its own columns and the
    class alone, and the candidates share most groups and their fits. Holds at most
    ``max_cells`` values (then stops adding: the results are the same either way)."""

    def __init__(self, max_cells: int = 10_000_000) -> None:
        self.blocks: dict[tuple, pd.DataFrame] = {}
        self.cells, self.max_cells = 0, max_cells

    def keep(self, key: tuple, block: pd.DataFrame) -> None:
        if self.cells + block.size <= self.max_cells:
            self.blocks[key] = block
            self.cells += block.size


def rows_key(part: pd.DataFrame) -> tuple[int, str]:
    """Which rows of a table ``part`` holds, by their labels (a utility split's parts are
    drawn anew, identically, for every candidate): the key of the choice's memos."""
    import hashlib

    return len(part), hashlib.sha1(pd.util.hash_array(part.index.to_numpy()).tobytes()
                                   ).hexdigest()


def _remedied(part: pd.DataFrame, recipe: Any, target: str, grouping: Any,
              suppress: bool, memo: DomainMemo | None) -> pd.DataFrame:
    """``remedied(part, recipe, target, grouping if suppress else None)``, each group's
    columns from ``memo`` when the same group was remedied with the same steps on the
    same rows of the table (the part's index) before. Without a memo, a recipe with
    fallbacks (its rung depends on every group) or a declared attacker model (a group's
    suppression may keep another's sensitive column diverse): ``remedied`` itself."""
    import json

    from ._recipe import ReleaseRecipe

    if memo is None or recipe is None or recipe.fallbacks or (
            recipe.attacker_model is not None and recipe.attacker_model.declared):
        return remedied(part, recipe, target, grouping if suppress else None)
    groups = as_grouping(grouping).groups
    steps: dict[tuple, list] = {tuple(g): [] for g in groups}
    owner = {c: tuple(g) for g in groups for c in g}
    for s in recipe.steps:
        owners = {owner.get(c) for c in (s.get("columns") or [s.get("column")])}
        if len(owners) != 1 or None in owners:  # a step across groups: no blocks
            return remedied(part, recipe, target, grouping if suppress else None)
        steps[owners.pop()].append(s)
    where = rows_key(part)
    keys = {cols: (where, cols, json.dumps(own, sort_keys=True, default=str), recipe.k,
                   suppress) for cols, own in steps.items() if own or suppress}
    missing = [cols for cols, key in keys.items() if key not in memo.blocks]
    fresh: dict[tuple, pd.DataFrame] = {}
    if missing:  # remedied together: one pass, each group as it would be alone
        columns = [c for cols in missing for c in cols]
        done = remedied(part[[*columns, target]], ReleaseRecipe(
            k=recipe.k, steps=tuple(s for cols in missing for s in steps[cols]),
            target=target, attacker_model=recipe.attacker_model), target,
            Grouping([list(cols) for cols in missing]) if suppress else None)
        fresh = {cols: done[list(cols)] for cols in missing}
        for cols in missing:
            memo.keep(keys[cols], fresh[cols])
    out = part.copy(deep=False)
    for cols, key in keys.items():
        block = fresh[cols] if cols in fresh else memo.blocks[key]
        for c in cols:
            out[c] = block[c].array
    return out


def _hits(classifier: Any, seed: int, n_attributes: int, train: pd.DataFrame,
          held: pd.DataFrame, target: str) -> np.ndarray:
    """The predictions on ``held`` of a classifier fitted on ``train``, with one
    BLAS/OpenMP thread as every fit of the engine: a check runs beside other tasks of a
    worker, where OpenMP's spinning threads oversubscribe the cores and slow a
    histogram-boosting fit many times over (docs/performance.md)."""
    from threadpoolctl import threadpool_limits

    from astrid_airflow.engine import make_classifier

    with threadpool_limits(limits=1):
        model = make_classifier(classifier, random_state=seed, n_attributes=n_attributes)
        model.fit(train.drop(columns=[target]), train[target].to_numpy())
        return np.asarray(model.predict(held.drop(columns=[target])))


#: Splits between the checkpoints of ``refuse_above`` (three looks at most on 12 splits).
STOP_EVERY = 3
#: One-sided normal quantile of those looks: a drop is certain above the threshold when
#: the unscored splits would need to fall this many standard deviations below what the
#: scored ones show (1e-4 each look).
STOP_Z = 3.72


def drop_certainly_above(drops: np.ndarray, row_diffs: list[np.ndarray], planned: int,
                         threshold: float) -> bool:
    """Whether the mean accuracy drop over ``planned`` splits will exceed ``threshold``,
    from the ``j = len(drops)`` scored: the unscored splits' mean must fall to
    ``(planned * threshold - j * mean) / (planned - j)`` to keep it, while it differs
    from the scored mean by about ``s * sqrt(1/j + 1/(planned - j))`` (``s``: one
    split's spread, between splits and never below the per-row figure, as
    ``_difference_se``). Certain means :data:`STOP_Z` of those apart."""
    j = len(drops)
    if j < 2 or j >= planned:
        return False
    mean = float(np.mean(drops))
    rows = np.concatenate(row_diffs)
    s = max(float(np.std(drops, ddof=1)),
            float(np.std(rows, ddof=1) / np.sqrt(len(row_diffs[0]))))
    gap = planned * (mean - threshold) / (planned - j)  # scored mean minus needed rest
    return gap > STOP_Z * s * float(np.sqrt(1.0 / j + 1.0 / (planned - j)))


def stratified_subsample(codes: np.ndarray, size: int, seed: np.random.SeedSequence
                         ) -> np.ndarray:
    """Sorted row indices of a stratified random subsample of about ``size`` rows.

    Every class keeps its share, rounded half up (at least 2 rows, or all of a smaller
    class).
    """
    return stratified_sample(codes, size, seed, min_per_class=2, rounding="half_up")


def _sample(table: pd.DataFrame, target: str, rows: int, seed: Any) -> pd.DataFrame:
    codes = pandas_class_codes(table[target], target)
    return table.iloc[stratified_subsample(codes, rows, seed)]


def _sampled_surrogate(published: pd.DataFrame, grouping: Any, target: str,
                       shuffle_seed: Any, rows: int, sample_seed: Any) -> pd.DataFrame:
    """``_sample(make_surrogate(published, grouping, ...), target, rows, sample_seed)``,
    the same frame, with only the sampled surrogate rows gathered: a whole surrogate of a
    1M-row training part is never held (peak memory)."""
    from astrid_airflow import engine

    codes = pandas_class_codes(published[target], target)
    order, perms = engine.release_permutations(
        codes, grouping.k, engine.seed_of_copies(shuffle_seed, 1)[0])
    labels = published[target].iloc[order]  # the surrogate's class column's values
    picked = stratified_subsample(pandas_class_codes(labels, target), rows, sample_seed)
    return engine.shuffle_frame(published, grouping, perms, target, order, positions=picked)


def _difference_se(split_diffs: np.ndarray, row_diffs: list[np.ndarray],
                   n_train: int, n_test: int) -> float:
    """Standard error of the mean accuracy difference, for a new table of this size.

    Nadeau and Bengio's corrected resampled variance (*Inference for the Generalization
    Error*, Machine Learning 52, 2003): ``J`` random splits of one table share their
    rows, so their mean varies from table to table by ``s² (1/J + n_test/n_train)``,
    not ``s²/J``. ``s`` is the spread of one split's difference: between splits when
    there are two or more, never below the paired per-row figure of one split (the
    only one a single split has).
    """
    rows = np.concatenate(row_diffs)
    s = float(np.std(rows, ddof=1) / np.sqrt(n_test)) if len(rows) > 1 else 0.0
    if len(split_diffs) > 1:
        s = max(s, float(np.std(split_diffs, ddof=1)))
    return s * float(np.sqrt(1.0 / len(split_diffs) + n_test / n_train))
