"""Problem 2: ASTRID, the automatic search for a significant grouping (Alg. 1).

The table is split by class into three parts as in the paper's experiments: 50 % to
train every classifier (D0 and its permutations), 25 % to score the search (the reward
T̂ of Eq. 5, a mean over R' permutations), 25 % to compute the p-values.

1. Sorting: starting from one group of all attributes, detach singletons greedily,
   each time the attribute whose detachment keeps T̂ highest (argmax; the last
   attribute needs no evaluation). This yields the order a_1..a_m.
2. Grouping: t_i = T̂({a_1..a_i}, {a_{i+1}..a_m}) for every cut i; for each k the
   grouping cuts the order at the k−1 cuts with the largest t_i (ties: earliest cut).
3. Testing: p_k for every k ≥ 2 from R permutations on the third split (k = 1 is the
   unpermuted table and needs no test); the chosen grouping is the highest k with
   p_k ≥ alpha. p_m, the all-singletons grouping, is Ojala–Garriga's Test 2, p_OG.

Following the R package, T̂ of every k's grouping is also computed on the search
split (``acc_search``), which the table reports beside the p-value statistics.

Adaptive mode (``adaptive=True``, opt-in) runs the same algorithm with fewer fits: the
sorting steps and the 2-split scores are raced with common random numbers
(``_racing``), ``acc_search`` is skipped, and the p-values are sequential Monte Carlo
tests (``_sequential``) run from k = m downwards until the first k that is not rejected,
which is the chosen k (rows below it are not tested). The p-value draws are those of the
exact mode with the same seed, in the same order, so each tested k reaches the exact
test's decision except with probability at most ``adaptive["p_risk_bound"]``.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
import time
from typing import Any

import numpy as np

from astrid_airflow._errors import BudgetError, DataError, ParameterError
from astrid_airflow._validation import (
    check_alpha,
    check_n_jobs,
    check_positive_int,
    check_seed_sequence,
)

from ._adaptive import ADAPTIVE_KEYWORDS, AdaptiveConfig
from ._budget import Deadline
from ._classifiers import BlockwiseClassifier, classifier_spec
from ._clustering import best_cuts, free_cuts, sort_attributes, split_scores
from ._cost import (
    CostEstimate,
    calibrate,
    calibrate_run,
    effective_workers,
    estimate,
    fits_planned,
    growth_exponent,
    rows_that_fit,
)
from ._fits import FitData, Task, prepare_fit_data, run_tasks, shared_fit_data
from ._grouping import Grouping, letters
from ._progress import RunProgress, format_seconds
from ._racing import race_argmax, race_ranking
from ._result import AstridResult, KRow
from ._sample import MIN_PER_CLASS, auto_sample_size, check_sample, stratified_sample
from ._scoring import check_scoring
from ._screen import ALPHA as SCREEN_ALPHA
from ._screen import MAX_ROWS as SCREEN_MAX_ROWS
from ._screen import MIN_ATTRIBUTES as SCREEN_MIN_ATTRIBUTES
from ._screen import blocks_of, screen_pairs
from ._sequential import plan, run_sequential
from ._split import Prepared, prepare, stratified_split
from ._test import empirical_p_value

log = logging.getLogger("astrid_airflow")


def astrid(
    data: object,
    *,
    target: str,
    classifier: object = "svm",
    classifier_params: dict | None = None,
    n_search: int = 100,
    n_test: int = 250,
    alpha: float = 0.05,
    scoring: str = "accuracy",
    random_state: object = None,
    n_jobs: int = 1,
    backend: str | None = None,
    progress: bool | None = None,
    score_each_k: bool = True,
    adaptive: bool | AdaptiveConfig = False,
    max_seconds: float | None = None,
    over_budget: str = "refuse",
    sample: int | str | None = None,
    screen: bool | str = "auto",
    reserve_fits: float = 0,
    _search_seed: int | None = None,
    **adaptive_options: Any,
) -> AstridResult:
    """Find the highest-cardinality grouping not rejected at level ``alpha``.

    Parameters
    ----------
    data : DataFrame or path
        The reference table (attributes plus the class column); CSV, Parquet or ARFF.
    target : str
        The class column.
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
    random_state : None, int, SeedSequence or Generator
        Root seed; the split and every fit get streams spawned from it in the parent,
        so results do not depend on ``n_jobs`` or the joblib backend.
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
    **adaptive_options
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
        Before the sorting, test every pair of attributes for dependence given the class
        (no classifier fits); attributes dependent on none are detached first without
        evaluation, so the sorting's O(m²) fits run on the others only (see
        ``_screen``). "auto": only for more than 40 attributes (the paper's tables have
        at most 36). Recorded in the result (``screen``). The p-values stay valid: the
        screen never sees the test split.
    reserve_fits : float, default=0
        Work after the search that ``max_seconds`` must also cover, in fits at the
        calibrated cost on one worker: the release choice's estimate
        (:func:`~astrid_airflow.release_choice_fits`). Counted in the budget check and
        in the time left of the progress lines; recorded as ``estimate.reserve_seconds``.

    Returns
    -------
    AstridResult

    References
    ----------
    Henelius, Puolamäki, Ukkonen. Finding Statistically Significant Attribute
    Interactions. Alg. 1, Eqs. 3 and 5, Sec. 5 (experimental setup).
    """
    start = time.perf_counter()
    n_search = check_positive_int(n_search, "n_search")
    n_test = check_positive_int(n_test, "n_test")
    alpha = check_alpha(alpha)
    scoring = check_scoring(scoring)
    n_jobs = check_n_jobs(n_jobs)
    root = check_seed_sequence(random_state)
    config = _adaptive_config(adaptive, adaptive_options)
    adaptive = config is not None
    if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(
            max_seconds, numbers.Real) or not 0 < max_seconds < math.inf):
        raise ParameterError(f"Invalid max_seconds: {max_seconds!r}. Must be a number > 0 "
                             "or None.")
    if over_budget not in ("refuse", "sample"):
        raise ParameterError(f"Invalid over_budget: {over_budget!r}. Must be 'refuse' or "
                             "'sample'.")
    sample = check_sample(sample)
    if isinstance(reserve_fits, bool) or not isinstance(reserve_fits, numbers.Real) \
            or not 0 <= reserve_fits < math.inf:
        raise ParameterError(f"Invalid reserve_fits: {reserve_fits!r}. Must be a number "
                             ">= 0.")
    if screen not in ("auto", True, False):
        raise ParameterError(f"Invalid screen: {screen!r}. Must be 'auto', True or False.")
    prep = prepare(data, target, min_rows_per_class=4)
    attrs, m = prep.attributes, len(prep.attributes)
    if m < 2:
        raise DataError("ASTRID needs at least two attribute columns besides the target.")

    split_ss, split2_ss, base_ss, sort_ss, halve_ss, k_ss, p_ss = root.spawn(7)
    # Spawned after the seven above, so runs without sampling keep their draws.
    sample_ss, calib_ss, screen_ss = root.spawn(3)
    if _search_seed is not None:
        # Benchmark hook: other search draws on the same split and p-value draws, to
        # measure how much the chosen k depends on the search's Monte Carlo noise alone.
        sort_ss, halve_ss, k_ss = np.random.SeedSequence(int(_search_seed)).spawn(3)
    full = prep
    sample_record = None
    draw_ss, curve_ss = sample_ss.spawn(2)
    if sample == "auto":
        rows, auto = auto_sample_size(
            full.codes, full.table[attrs], classifier=classifier, params=classifier_params,
            scoring=scoring, n_classes=len(full.classes), seed=curve_ss)
        prep, sample_record = _sampled(full, rows, draw_ss, rule="auto")
        sample_record.update(auto)
    elif sample is not None:
        prep, sample_record = _sampled(full, sample, draw_ss, rule="fixed")

    def setup(prep: Prepared, clf: object = classifier) -> tuple[FitData, dict, np.ndarray]:
        train, rest = stratified_split(prep.codes, 0.5, split_ss)
        search_pos, valid_pos = stratified_split(prep.codes[rest], 0.5, split2_ss)
        search, valid = rest[search_pos], rest[valid_pos]
        X = prep.table[attrs]
        fit_data = prepare_fit_data(
            clf, X.iloc[train], prep.codes[train],
            {"search": (X.iloc[search], prep.codes[search]),
             "valid": (X.iloc[valid], prep.codes[valid])},
            scoring=scoring, n_classes=len(prep.classes),
            params=classifier_params if clf is classifier else None)
        return fit_data, {"train": int(train.size), "search": int(search.size),
                          "test": int(valid.size)}, np.concatenate([train, search])

    screening = screen is True or (screen == "auto" and m > SCREEN_MIN_ATTRIBUTES)

    def screened(prep: Prepared, rows: np.ndarray
                 ) -> tuple[list[int], list[list[int]] | None, dict | None]:
        # Free attributes (dependent on none given the class) skip the sorting's
        # evaluations, the blocks are sorted one after another; only the training and
        # search rows are looked at.
        if not screening:
            return [], None, None
        if rows.size > SCREEN_MAX_ROWS:
            rows = rows[stratified_sample(prep.codes[rows], SCREEN_MAX_ROWS, screen_ss)]
        t0 = time.perf_counter()
        p = screen_pairs(prep.table[attrs].iloc[rows], prep.codes[rows])
        blocks = blocks_of(p)
        first = [b[0] for b in blocks if len(b) == 1]
        pairs = sorted(((float(p[i, j]), attrs[i], attrs[j]) for i, j in
                        zip(*np.nonzero(np.triu(p < SCREEN_ALPHA, 1)))))
        record = {"rule": "pairwise G-test of dependence given the class", "rows": int(
            rows.size), "alpha": SCREEN_ALPHA, "free": [attrs[i] for i in first],
            "blocks": [[attrs[i] for i in b] for b in blocks if len(b) > 1],
            "dependent_pairs": [[a, b, q] for q, a, b in pairs[:200]],
            "n_dependent_pairs": len(pairs),
            "seconds": round(time.perf_counter() - t0, 3)}
        log.info("astrid screen: %d of %d attributes depend on none given the class; the "
                 "sorting evaluates the other %d (blocks: %s)", len(first), m, m - len(first),
                 record["blocks"])
        return first, [list(b) for b in blocks if len(b) > 1], record

    def factorised(fit_data: FitData, first: list[int], blocks: list[list[int]] | None,
                   record: dict | None) -> FitData:
        # hgb fits factorised over the screen's blocks (BlockwiseClassifier: greedy trees
        # among many attributes miss pure interactions, e.g. the planted triple)
        cols = fit_data.columns_of_attribute
        if classifier != "hgb" or not blocks or cols is None or record is None:
            return fit_data
        record["classifier"] = ("hgb factorised: one fit on the blocks (a tree branch within "
                                "one block) and one on the free attributes, class "
                                "log-probabilities summed")
        return dataclasses.replace(fit_data, model=BlockwiseClassifier(
            base=fit_data.model,
            blocks=tuple(tuple(int(c) for a in b for c in cols[a]) for b in blocks),
            free=tuple(int(c) for a in first for c in cols[a])))

    fit_data, split, rows = setup(prep)
    first, blocks, screen_record = screened(prep, rows)
    fit_data = factorised(fit_data, first, blocks, screen_record)
    workers = effective_workers(n_jobs, backend)
    counts = fits_planned(m, n_search, n_test, score_each_k=score_each_k, adaptive=adaptive,
                          m_sorted=m - len(first), blocks=_sizes(blocks))

    def cost(fit_data: FitData) -> CostEstimate:
        spf, n_cal, s_cal = calibrate_run(fit_data, calib_ss, m, n_jobs=n_jobs,
                                          backend=backend, workers=workers)
        est = estimate(spf, counts, workers, (n_cal, s_cal))
        log.info("astrid estimate (%s rows): %s", f"{prep.codes.size:,}", est.describe())
        return est

    est = cost(fit_data)

    def search_budget(est: CostEstimate) -> float:
        """What the search may spend: the budget less the time spent before it and the
        reserve (the release choice after it)."""
        return max_seconds - (time.perf_counter() - start) \
            - reserve_fits * est.seconds_per_fit

    if max_seconds is not None and est.seconds > search_budget(est):
        exponent = growth_exponent(fit_data, calib_ss, m)
        budget = search_budget(est)
        rows = rows_that_fit(prep.codes.size, est.seconds, budget, exponent) \
            if budget > 0 else 0
        if over_budget == "sample" and rows >= MIN_PER_CLASS * len(prep.classes):
            log.info("astrid: over the budget of %s; learning on a stratified sample of "
                     "%s rows (fit cost grows as rows^%.1f).", format_seconds(max_seconds),
                     f"{rows:,}", exponent)
            prep, sample_record = _sampled(full, rows, draw_ss, rule="budget")
            sample_record["max_seconds"] = float(max_seconds)
            fit_data, split, rows = setup(prep)
            first, blocks, screen_record = screened(prep, rows)
            fit_data = factorised(fit_data, first, blocks, screen_record)
            counts = fits_planned(m, n_search, n_test, score_each_k=score_each_k,
                                  adaptive=adaptive, m_sorted=m - len(first), blocks=_sizes(blocks))
            est = cost(fit_data)
        else:
            fast = None
            if classifier != "hgb":  # what the scalable preset would cost here
                spf, n_cal, s_cal = calibrate(setup(prep, "hgb")[0], calib_ss, m,
                                              max_fits=3, max_seconds=1.0)
                fast = estimate(spf, counts, workers, (n_cal, s_cal))
            expected = None if adaptive else fits_planned(
                m, n_search, n_test, score_each_k=score_each_k, adaptive=True,
                m_sorted=m - len(first), blocks=_sizes(blocks))[0]
            raise BudgetError(_advice(est, budget, rows, exponent, fast, expected,
                                      min_rows=MIN_PER_CLASS * len(prep.classes),
                                      max_seconds=max_seconds))
    stats: dict = {"cpu_seconds": 0.0}
    reserve = reserve_fits * est.seconds_per_fit
    tracker = RunProgress.for_run(
        counts[1], progress=progress, kind="planned" if not adaptive else "worst case",
        seconds_per_fit=est.seconds_per_fit, workers=workers,
        after=("the release choice", reserve) if reserve_fits else None,
        deadline=None if max_seconds is None else Deadline(float(max_seconds), start))
    run = dict(n_jobs=n_jobs, backend=backend, progress=progress, stats=stats,
               tracker=tracker)
    n_fits_exact = fits_planned(m, n_search, n_test, score_each_k=score_each_k,
                                adaptive=False, m_sorted=m - len(first), blocks=_sizes(blocks))[0]
    common = dict(target=target, classes=prep.classes, columns=tuple(attrs),
                  classifier=classifier_spec(classifier, classifier_params),
                  scoring=scoring, alpha=alpha, n_search=n_search, n_test=n_test,
                  random_state=random_state if isinstance(random_state, int) else None,
                  split=split)
    searched = time.perf_counter()
    with tracker, shared_fit_data(fit_data, n_jobs, backend) as fit_data:
        if adaptive:
            search = _AdaptiveSearch(
                fit_data=fit_data, attrs=list(attrs), run=run,
                seeds=(base_ss, sort_ss, halve_ss, p_ss), n_search=n_search,
                n_test=n_test, alpha=alpha, config=config)
            result = _adaptive(search, start, common, n_fits_exact, first=first,
                               blocks=blocks)
        else:
            result = _exact(fit_data, attrs, run, start, common, n_fits_exact,
                            seeds=(base_ss, sort_ss, halve_ss, k_ss, p_ss),
                            n_search=n_search, n_test=n_test, alpha=alpha,
                            score_each_k=score_each_k, first=first, blocks=blocks)
    actual = time.perf_counter() - searched
    record = {**est.to_dict(), "max_seconds": None if max_seconds is None else
              float(max_seconds), "reserve_seconds": reserve,
              "seconds_before_search": searched - start,
              "fits_run": result.n_fits, "actual_seconds": actual,
              "ratio": actual / est.seconds if est.seconds > 0 else None}
    log.info("astrid: %s fits in %s (estimated %s).", f"{result.n_fits:,}",
             format_seconds(actual), format_seconds(est.seconds))
    if sample_record is not None:
        # the root's entropy reproduces the sample even when random_state was None
        sample_record.update(table_rows=int(full.codes.size), seed=common["random_state"],
                             entropy=root.entropy)
    return dataclasses.replace(result, estimate=record, sample=sample_record,
                               screen=screen_record)


def _sampled(full: Prepared, n: int, seed: np.random.SeedSequence, *, rule: str
             ) -> tuple[Prepared, dict]:
    """``full`` cut to a stratified sample of ``n`` rows, and its record."""
    idx = stratified_sample(full.codes, n, seed)
    prep = full if idx.size == full.codes.size else Prepared(
        full.table.iloc[idx].reset_index(drop=True), full.target, full.attributes,
        full.codes[idx], full.classes)
    return prep, {"rule": rule, "rows": int(idx.size), "requested": int(n),
                  "stream": "random_state's SeedSequence: child 7, its child 0"}


def _advice(est: CostEstimate, budget: float, rows: int, exponent: float,
            fast: CostEstimate | None, adaptive_fits: int | None, *, min_rows: int,
            max_seconds: float | None = None) -> str:
    """One line: the estimate, the budget, and what would fit.

    ``budget``: what the search may spend of ``max_seconds`` (the time spent before it
    and the release choice's reserve taken off)."""
    fits: list[str] = []
    if rows >= min_rows:
        fits.append(f"a stratified sample of {rows:,} rows (--sample {rows}; the fit cost "
                    f"grows as rows^{exponent:.1f})")
    if fast is not None:
        fits.append(f"--classifier hgb (about {format_seconds(fast.seconds)})"
                    if fast.seconds <= budget else
                    f"--classifier hgb with a sample (hgb alone: about "
                    f"{format_seconds(fast.seconds)})")
    if adaptive_fits is not None:
        fits.append(f"--adaptive (about "
                    f"{format_seconds(adaptive_fits * est.seconds_per_fit / est.workers)} "
                    "expected)")
    hint = "; ".join(fits) if fits else "nothing smaller; raise the budget"
    total = budget if max_seconds is None else max_seconds
    part = "" if max_seconds is None or budget == max_seconds else (
        f", of which {format_seconds(max(0.0, budget))} are left for the search (the rest "
        "is spent before it or kept for the release choice after it)")
    return (f"Estimated {est.describe()}, over max_seconds = {round(total, 1):g} "
            f"({format_seconds(total)}){part}. Would fit: {hint}; or --over-budget sample "
            "to sample rows automatically.")


def _exact(fit_data, attrs, run, start, common, n_fits_exact, *, seeds, n_search, n_test,
           alpha, score_each_k, first=(), blocks=None) -> AstridResult:
    """Alg. 1 with every reward a mean over R' permutations and R per p-value."""
    base_ss, sort_ss, halve_ss, k_ss, p_ss = seeds
    m = len(attrs)
    stats = run["stats"]
    n_fits = 0

    def reward(groupings: list[tuple[tuple[int, ...], ...]], seeds, desc: str) -> np.ndarray:
        nonlocal n_fits
        tasks = [Task("search", g, s) for g, ss in zip(groupings, seeds)
                 for s in ss.spawn(n_search)]
        n_fits += len(tasks)
        scores = run_tasks(fit_data, tasks, desc=desc, **run)
        return scores.reshape(len(groupings), n_search).mean(axis=1)

    # 1. Sorting phase (Alg. 1, lines 1-6).
    sort_seeds = iter(sort_ss.spawn(m))
    sorting_log: list[dict[str, float]] = []

    def log_step(step: int, remaining: list[int], means: np.ndarray) -> None:
        sorting_log.append({attrs[j]: float(v) for j, v in zip(remaining, means)})
        log.info("sorting %d/%d: detached %s (T̂ = %.4f)", step + 1, m - 1,
                 attrs[remaining[int(np.argmax(means))]], means.max())

    detached = sort_attributes(
        m, lambda parts: reward(parts, next(sort_seeds).spawn(len(parts)), "sorting"),
        on_step=log_step, first=first, blocks=blocks)
    order = [attrs[i] for i in detached]

    # 2. Scores of every 2-split of the order (line 7), groupings for every k (8-11).
    t = split_scores(detached, lambda parts: reward(parts, halve_ss.spawn(len(parts)),
                                                    "2-splits"), free=len(first))
    groupings = {1: Grouping([order])}
    for k in range(2, m + 1):
        groupings[k] = Grouping.from_cuts(order, best_cuts(t, k))

    # 3. Baseline, T̂ per k on the search split, p-values on the third split.
    tasks = [Task("valid", None, base_ss)]
    k_seeds, p_seeds = k_ss.spawn(m - 1), p_ss.spawn(m - 1)
    for k in range(2, m + 1):
        g = tuple(tuple(ix) for ix in groupings[k].indices(attrs))
        if score_each_k:
            tasks += [Task("search", g, s) for s in k_seeds[k - 2].spawn(n_search)]
        tasks += [Task("valid", g, s) for s in p_seeds[k - 2].spawn(n_test)]
    n_fits += len(tasks)
    scores = run_tasks(fit_data, tasks, desc="p-values", **run)
    a0, pos = float(scores[0]), 1
    rows = [KRow(k=1, grouping=groupings[1], acc_ave=a0, acc_min=None, acc_max=None, sd=None,
                 p=None, acc_search=None, letters=letters(groupings[1], order))]
    for k in range(2, m + 1):
        acc_search = None
        if score_each_k:
            acc_search = float(scores[pos:pos + n_search].mean())
            pos += n_search
        null = scores[pos:pos + n_test]
        pos += n_test
        rows.append(KRow(
            k=k, grouping=groupings[k], acc_ave=float(null.mean()), acc_min=float(null.min()),
            acc_max=float(null.max()), sd=float(null.std(ddof=1)) if null.size > 1 else 0.0,
            p=empirical_p_value(a0, null), acc_search=acc_search,
            letters=letters(groupings[k], order)))
    chosen = max([1] + [r.k for r in rows[1:] if r.p >= alpha])
    return AstridResult(
        grouping=groupings[chosen], k=chosen, table=tuple(rows), order=tuple(order),
        baseline_accuracy=a0, p_og=rows[-1].p, n_fits=n_fits,
        seconds=time.perf_counter() - start,
        search_scores={"sorting": sorting_log, "splits": _splits_record(t)},
        n_fits_exact=n_fits_exact, cpu_seconds=stats["cpu_seconds"], **common)



def _sizes(blocks: list[list[int]] | None) -> list[int] | None:
    return None if blocks is None else [len(b) for b in blocks]


def _splits_record(t: np.ndarray) -> list[float | None]:
    # None: a cut the screen made unnecessary to evaluate (NaN is not JSON)
    return [None if np.isnan(v) else float(v) for v in t]


def _adaptive_config(adaptive: object, options: dict[str, Any]) -> AdaptiveConfig | None:
    """The run's :class:`AdaptiveConfig`, or None when adaptive mode is off.

    The ``adaptive_*`` keywords are mapped into the config (unknown keywords are a
    ``TypeError``); with adaptive mode off only the batch sizes are checked, as before.
    """
    if isinstance(adaptive, AdaptiveConfig):
        return AdaptiveConfig.from_keywords(adaptive, **options)
    if isinstance(adaptive, (bool, np.bool_)) or (isinstance(adaptive, numbers.Integral)
                                                  and adaptive in (0, 1)):
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


@dataclasses.dataclass
class _AdaptiveSearch:
    """One adaptive run: its inputs, settings, fit counters and stopping record."""

    fit_data: Any
    attrs: list[str]
    run: dict
    seeds: tuple
    n_search: int
    n_test: int
    alpha: float
    config: AdaptiveConfig
    fits: dict = dataclasses.field(default_factory=lambda: {
        "baseline": 1, "sorting": 0, "splits": 0, "p_values": 0})
    record: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        c = self.config
        self.record.update(risk=c.risk, race_risk=c.race_risk, delta=c.delta,
                           delta_sd=c.delta_sd, batch=c.batch, race_batch=c.race_batch,
                           sorting=[])

    def scores_of(self, kind: str, parts, round_seeds, first: int, count: int) -> np.ndarray:
        """Fits of ``parts`` on rounds ``first..first+count``, counted under ``kind``."""
        # Common random numbers: round r uses round_seeds[r] for every candidate.
        tasks = [Task("search", p, round_seeds[first + r]) for p in parts
                 for r in range(count)]
        self.fits[kind] += len(tasks)
        return run_tasks(self.fit_data, tasks, desc=kind, **self.run).reshape(
            len(parts), count)


def _adaptive(search: _AdaptiveSearch, start: float, common: dict, n_fits_exact: int, *,
              first=(), blocks=None) -> AstridResult:
    """Alg. 1 with racing and sequential p-values (see the module docstring)."""
    fit_data, attrs, run = search.fit_data, search.attrs, search.run
    base_ss, sort_ss, halve_ss, p_ss = search.seeds
    n_search, n_test, alpha = search.n_search, search.n_test, search.alpha
    c = search.config
    risk, delta, delta_sd, batch = c.risk, c.delta, c.delta_sd, c.batch
    race_risk, race_batch, verify = c.race_risk, c.race_batch, c.verify
    m = len(attrs)
    fits, record, scores_of = search.fits, search.record, search.scores_of

    # 1. Sorting, one race per step.
    step_seeds = iter(sort_ss.spawn(m))
    sorting_log: list[dict[str, float]] = []

    def reward(parts) -> np.ndarray:
        round_seeds = next(step_seeds).spawn(n_search)
        out = race_argmax(lambda idx, first, count: scores_of(
            "sorting", [parts[i] for i in idx], round_seeds, first, count),
            len(parts), budget=n_search, batch=race_batch, delta=delta, risk=race_risk,
            delta_sd=delta_sd)
        record["sorting"].append({"candidates": len(parts), "rounds": out.rounds.tolist(),
                                  "stop": out.stop, "means": out.means})
        # An eliminated candidate's mean covers fewer rounds and may exceed the winner's
        # final mean; the winner is flagged so that sort_attributes' argmax takes it.
        flagged = np.zeros(len(parts))
        flagged[out.winner] = 1.0
        return flagged

    def log_step(step: int, remaining: list[int], flagged: np.ndarray) -> None:
        means = record["sorting"][-1].pop("means")
        sorting_log.append({attrs[j]: float(v) for j, v in zip(remaining, means)})
        record["sorting"][-1]["detached"] = attrs[remaining[int(np.argmax(flagged))]]
        log.info("sorting %d/%d (adaptive): detached %s after %d rounds (%s)", step + 1,
                 m - 1, record["sorting"][-1]["detached"], max(record["sorting"][-1]["rounds"]),
                 record["sorting"][-1]["stop"])

    detached = sort_attributes(m, reward, on_step=log_step, first=first, blocks=blocks)
    order = [attrs[i] for i in detached]

    # 2. 2-split scores, raced as a ranking with common random numbers.
    # Cuts inside the screen's free prefix are not raced (split_scores: NaN, ranked first).
    split_seeds = halve_ss.spawn(n_search)
    n_free = free_cuts(len(first), m)
    parts = [(tuple(detached[:i]), tuple(detached[i:])) for i in range(n_free + 1, m)]
    t = np.full(m - 1, np.nan)
    record["splits"] = {"rounds": 0, "stop": "no cut to race", "rounds_per_cut": [],
                        "free_cuts": n_free}
    if parts:
        ranked = race_ranking(lambda idx, first, count: scores_of(
            "splits", [parts[i] for i in idx], split_seeds, first, count),
            len(parts), budget=n_search, batch=race_batch, delta=delta, risk=race_risk,
            delta_sd=delta_sd)
        record["splits"].update(rounds=int(ranked.rounds.max()), stop=ranked.stop,
                                rounds_per_cut=ranked.rounds.tolist())
        t[n_free:] = ranked.means
    groupings = {1: Grouping([order])}
    for k in range(2, m + 1):
        groupings[k] = Grouping.from_cuts(order, best_cuts(t, k))

    # 3. Baseline, then sequential p-values from k = m down to the first not rejected.
    a0 = float(run_tasks(fit_data, [Task("valid", None, base_ss)], desc="baseline",
                         **run)[0])
    p_seeds = p_ss.spawn(m - 1)  # the exact mode's p-value seeds, in the same order
    seq = plan(n_test, alpha, batch, risk)
    rows = {1: KRow(k=1, grouping=groupings[1], acc_ave=a0, acc_min=None, acc_max=None,
                    sd=None, p=None, acc_search=None, letters=letters(groupings[1], order))}
    record["p_values"] = {}
    chosen, tested, verify_fits = 1, 0, 0
    for k in range(m, 1, -1):
        g = tuple(tuple(ix) for ix in groupings[k].indices(attrs))
        draws = p_seeds[k - 2].spawn(n_test)

        def draw(first: int, count: int, g=g, draws=draws, k=k) -> np.ndarray:
            fits["p_values"] += count
            return run_tasks(fit_data, [Task("valid", g, s) for s in
                                        draws[first:first + count]], desc=f"p k={k}", **run)

        out = run_sequential(a0, draw, seq)
        tested += 1
        null = out.null_scores
        rows[k] = KRow(k=k, grouping=groupings[k], acc_ave=float(null.mean()),
                       acc_min=float(null.min()), acc_max=float(null.max()),
                       sd=float(null.std(ddof=1)) if null.size > 1 else 0.0, p=out.p_value,
                       acc_search=None, letters=letters(groupings[k], order),
                       n_permutations=out.n_draws)
        record["p_values"][str(k)] = {"permutations": out.n_draws, "hits": out.hits,
                                      "stop": out.stop, "rejected": out.rejected}
        log.info("p-value k=%d (adaptive): p = %.4f after %d permutations (%s)", k,
                 out.p_value, out.n_draws, out.stop)
        if verify:  # the rest of the exact test's draws, apart from n_fits
            rest = run_tasks(fit_data, [Task("valid", g, s) for s in draws[out.n_draws:]],
                             desc=f"verify k={k}", **run)
            exact_p = empirical_p_value(a0, np.concatenate([null, rest]))
            record["p_values"][str(k)].update(exact_p=exact_p,
                                              exact_rejected=bool(exact_p < alpha))
            verify_fits += rest.size
        if not out.rejected:
            chosen = k
            break
    if verify:
        # Exact p-values on these groupings choose the highest k with p >= alpha; the
        # untested k < chosen cannot change that when the chosen k is not rejected.
        exact_rejected = {int(k): v["exact_rejected"] for k, v in record["p_values"].items()}
        exact_choice = next((k for k in sorted(exact_rejected, reverse=True)
                             if not exact_rejected[k]), 1 if tested == m - 1 else None)
        record["verify"] = {"fits": verify_fits, "exact_k": exact_choice,
                            "same_k": exact_choice == chosen}
    for k in range(2, m + 1):
        rows.setdefault(k, KRow(k=k, grouping=groupings[k], acc_ave=None, acc_min=None,
                                acc_max=None, sd=None, p=None, acc_search=None,
                                letters=letters(groupings[k], order), n_permutations=0))
    record.update(
        fits=fits,
        p_risk_per_test=seq.risk_bound,
        p_risk_bound=seq.risk_bound * tested,
        p_boundaries={"curtail_hits": seq.curtail_hits,
                      "exact_reject_max_hits": seq.exact_reject_max,
                      "early_reject": [list(x) for x in seq.reject_at]},
        untested=[k for k in range(2, m + 1) if k < chosen])
    table = tuple(rows[k] for k in range(1, m + 1))
    return AstridResult(
        grouping=groupings[chosen], k=chosen, table=table, order=tuple(order),
        baseline_accuracy=a0, p_og=rows[m].p, n_fits=sum(fits.values()),
        seconds=time.perf_counter() - start,
        search_scores={"sorting": sorting_log, "splits": _splits_record(t)},
        n_fits_exact=n_fits_exact, adaptive=record,
        cpu_seconds=run["stats"]["cpu_seconds"], **common)
