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
import time
from typing import Any

import numpy as np

from astrid_airflow._errors import BudgetError, DataError
from astrid_airflow._validation import (
    check_seed_sequence,
)

from ._alg1 import AdaptiveSearch, group_sizes, run_adaptive, run_exact
from ._budget import Deadline
from ._classifiers import BlockwiseClassifier, classifier_spec
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
from ._fits import FitData, prepare_fit_data, shared_fit_data
from ._progress import RunProgress, format_seconds
from ._result import AstridResult
from ._sample import MIN_PER_CLASS, auto_sample_size, stratified_sample
from ._screen import ALPHA as SCREEN_ALPHA
from ._screen import MAX_ROWS as SCREEN_MAX_ROWS
from ._screen import (
    TRIPLE_BINS,
    TRIPLE_MAX_ATTRIBUTES,
    TRIPLE_MAX_ROWS,
    blocks_of,
    screen_applies,
    screen_pairs,
    screen_triples,
    triples_apply,
)
from ._settings import SearchSettings
from ._split import Prepared, prepare, stratified_split

log = logging.getLogger("astrid_airflow")


def astrid(data: object, *, target: str, settings: SearchSettings | None = None,
           random_state: object = None, _search_seed: int | None = None,
           **options: Any) -> AstridResult:
    """Find the highest-cardinality grouping not rejected at level ``alpha``.

    Every setting of the search is a field of :class:`SearchSettings` (documented
    there): pass one as ``settings=``, or the fields as keywords, which override
    ``settings``' fields (a contract: ``astrid(table, target=..., classifier="rf",
    n_search=100)`` keeps working). An unknown keyword is a ``TypeError``.

    Parameters
    ----------
    data : DataFrame or path
        The reference table (attributes plus the class column); CSV, Parquet or ARFF.
    target : str
        The class column.
    settings : SearchSettings or mapping, optional
        The search's settings as one object (default: every field's default).
    random_state : None, int, SeedSequence or Generator
        Root seed; the split and every fit get streams spawned from it in the parent,
        so results do not depend on ``n_jobs`` or the joblib backend.
    **options
        Fields of :class:`SearchSettings`, and the ``adaptive_*`` keywords of
        :class:`AdaptiveConfig` (``adaptive_risk``, ``adaptive_delta``, ...).

    Returns
    -------
    AstridResult

    References
    ----------
    Henelius, Puolamäki, Ukkonen. Finding Statistically Significant Attribute
    Interactions. Alg. 1, Eqs. 3 and 5, Sec. 5 (experimental setup).
    """
    start = time.perf_counter()
    s = SearchSettings.of(settings, **options)
    root = check_seed_sequence(random_state)
    prep = prepare(data, target, min_rows_per_class=4)
    if len(prep.attributes) < 2:
        raise DataError("ASTRID needs at least two attribute columns besides the target.")
    run = _SearchRun(s, full=prep, streams=_Streams.of(root, _search_seed), start=start)
    run.plan(run.sampled())
    run.fit_budget()
    result = run.search(random_state, target)
    return run.finish(result, root)


@dataclasses.dataclass
class _Streams:
    """The search's random streams, spawned once from the root in a fixed order."""

    split: np.random.SeedSequence
    split2: np.random.SeedSequence
    base: np.random.SeedSequence
    sort: np.random.SeedSequence
    halve: np.random.SeedSequence
    k: np.random.SeedSequence
    p: np.random.SeedSequence
    sample_draw: np.random.SeedSequence
    sample_curve: np.random.SeedSequence
    calib: np.random.SeedSequence
    screen: np.random.SeedSequence

    @classmethod
    def of(cls, root: np.random.SeedSequence, search_seed: int | None) -> _Streams:
        split, split2, base, sort, halve, k, p = root.spawn(7)
        # Spawned after the seven above, so runs without sampling keep their draws.
        sample, calib, screen = root.spawn(3)
        if search_seed is not None:
            # Benchmark hook: other search draws on the same split and p-value draws, to
            # measure how much the chosen k depends on the search's Monte Carlo noise.
            sort, halve, k = np.random.SeedSequence(int(search_seed)).spawn(3)
        draw, curve = sample.spawn(2)
        return cls(split, split2, base, sort, halve, k, p, draw, curve, calib, screen)


@dataclasses.dataclass
class _SearchRun:
    """One call of :func:`astrid`: the table (and sample) it learns on, its fit data,
    screen, cost estimate and budget; each step one method."""

    s: SearchSettings
    full: Prepared
    streams: _Streams
    start: float
    prep: Prepared | None = None
    sample_record: dict | None = None
    fit_data: Any = None
    split: dict | None = None
    first: list[int] = dataclasses.field(default_factory=list)
    blocks: list[list[int]] | None = None
    screen_record: dict | None = None
    counts: tuple = ()
    est: CostEstimate | None = None
    searched: float = 0.0  # when the search itself began

    @property
    def attrs(self) -> list[str]:
        return list(self.full.attributes)

    @property
    def m(self) -> int:
        return len(self.full.attributes)

    def sampled(self) -> Prepared:
        """The table the search learns on: all rows, or the ``sample`` rule's sample."""
        s, full = self.s, self.full
        if s.sample == "auto":
            rows, auto = auto_sample_size(
                full.codes, full.table[self.attrs], classifier=s.classifier,
                params=s.classifier_params, scoring=s.scoring, n_classes=len(full.classes),
                seed=self.streams.sample_curve)
            prep, self.sample_record = _sampled(full, rows, self.streams.sample_draw,
                                                rule="auto")
            self.sample_record.update(auto)
            return prep
        if s.sample is not None:
            prep, self.sample_record = _sampled(full, s.sample, self.streams.sample_draw,
                                                rule="fixed")
            return prep
        return full

    def setup(self, prep: Prepared, clf: object = None) -> tuple[FitData, dict, np.ndarray]:
        """Fit data of the 50/25/25 split of ``prep`` for ``clf`` (default: the preset)."""
        s, attrs = self.s, self.attrs
        clf = s.classifier if clf is None else clf
        train, rest = stratified_split(prep.codes, 0.5, self.streams.split)
        search_pos, valid_pos = stratified_split(prep.codes[rest], 0.5, self.streams.split2)
        search, valid = rest[search_pos], rest[valid_pos]
        X = prep.table[attrs]
        fit_data = prepare_fit_data(
            clf, X.iloc[train], prep.codes[train],
            {"search": (X.iloc[search], prep.codes[search]),
             "valid": (X.iloc[valid], prep.codes[valid])},
            scoring=s.scoring, n_classes=len(prep.classes),
            params=s.classifier_params if clf is s.classifier else None)
        return fit_data, {"train": int(train.size), "search": int(search.size),
                          "test": int(valid.size)}, np.concatenate([train, search])

    def screened(self, prep: Prepared, rows: np.ndarray
                 ) -> tuple[list[int], list[list[int]] | None, dict | None]:
        """The pair screen: free attributes, blocks and its record (or nothing)."""
        # Free attributes (dependent on none given the class) skip the sorting's
        # evaluations, the blocks are sorted one after another; only the training and
        # search rows are looked at.
        s, attrs, m = self.s, self.attrs, self.m
        if not screen_applies(s.screen, self.full.codes.size, m):
            return [], None, None
        if rows.size > SCREEN_MAX_ROWS:
            rows = rows[stratified_sample(prep.codes[rows], SCREEN_MAX_ROWS,
                                          self.streams.screen)]
        t0 = time.perf_counter()
        p = screen_pairs(prep.table[attrs].iloc[rows], prep.codes[rows])
        triples, found = self.screened_triples(prep, rows, blocks_of(p))
        blocks = blocks_of(p, [t[1:] for t in found])
        first = [b[0] for b in blocks if len(b) == 1]
        pairs = sorted(((float(p[i, j]), attrs[i], attrs[j]) for i, j in
                        zip(*np.nonzero(np.triu(p < SCREEN_ALPHA, 1)))))
        record = {"rule": "pairwise G-test of dependence given the class", "rows": int(
            rows.size), "alpha": SCREEN_ALPHA, "free": [attrs[i] for i in first],
            "blocks": [[attrs[i] for i in b] for b in blocks if len(b) > 1],
            "dependent_pairs": [[a, b, q] for q, a, b in pairs[:200]],
            "n_dependent_pairs": len(pairs), "triples": triples,
            "seconds": round(time.perf_counter() - t0, 3)}
        log.info("astrid screen: %d of %d attributes depend on none given the class; the "
                 "sorting evaluates the other %d (blocks: %s; %s)", len(first), m,
                 m - len(first), record["blocks"], _triples_line(triples))
        return first, [list(b) for b in blocks if len(b) > 1], record

    def screened_triples(self, prep: Prepared, rows: np.ndarray, blocks: list[list[int]]
                         ) -> tuple[dict, list[tuple[float, int, int, int]]]:
        """The triple screen (``_screen.screen_triples``) on at most ``TRIPLE_MAX_ROWS``
        of the pair screen's rows: its record, and the triples found by position."""
        attrs = self.attrs
        if not triples_apply(len(attrs)):
            return {"rule": f"not run: more than {TRIPLE_MAX_ATTRIBUTES} attributes (or "
                            "fewer than 3)", "tested": 0, "n_found": 0, "found": []}, []
        if rows.size > TRIPLE_MAX_ROWS:
            rows = rows[stratified_sample(prep.codes[rows], TRIPLE_MAX_ROWS,
                                          self.streams.screen)]
        t0 = time.perf_counter()
        out = screen_triples(prep.table[attrs].iloc[rows], prep.codes[rows], blocks)
        return {"rule": "G-test of the three-way interaction given the class (no-three-"
                        f"way log-linear model, {TRIPLE_BINS} bins per attribute)",
                "rows": int(rows.size), "threshold": out["threshold"],
                "tested": out["tested"], "n_found": len(out["found"]),
                "found": [[attrs[i], attrs[j], attrs[k], q]
                          for q, i, j, k in out["found"][:200]],
                "seconds": round(time.perf_counter() - t0, 3)}, out["found"]

    def factorised(self, fit_data: FitData) -> FitData:
        """hgb fitted factorised over the screen's blocks (BlockwiseClassifier)."""
        # greedy trees among many attributes miss pure interactions (the planted triple)
        cols, blocks, record = fit_data.columns_of_attribute, self.blocks, self.screen_record
        if self.s.classifier != "hgb" or not blocks or cols is None or record is None:
            return fit_data
        record["classifier"] = ("hgb factorised: one fit on the blocks (a tree branch within "
                                "one block) and one on the free attributes, class "
                                "log-probabilities summed")
        return dataclasses.replace(fit_data, model=BlockwiseClassifier(
            base=fit_data.model,
            blocks=tuple(tuple(int(c) for a in b for c in cols[a]) for b in blocks),
            free=tuple(int(c) for a in self.first for c in cols[a])))

    def fits(self, adaptive: bool) -> tuple:
        """:func:`fits_planned` for this run's screen, exact or adaptive."""
        s = self.s
        return fits_planned(self.m, s.n_search, s.n_test, score_each_k=s.score_each_k,
                            adaptive=adaptive, m_sorted=self.m - len(self.first),
                            blocks=group_sizes(self.blocks))

    def plan(self, prep: Prepared) -> None:
        """Split, screen, fit data, planned fits and the timed cost estimate of ``prep``."""
        self.prep = prep
        self.fit_data, self.split, rows = self.setup(prep)
        self.first, self.blocks, self.screen_record = self.screened(prep, rows)
        self.fit_data = self.factorised(self.fit_data)
        self.counts = self.fits(self.s.adaptive is not None)
        spf, n_cal, s_cal = calibrate_run(self.fit_data, self.streams.calib, self.m,
                                          n_jobs=self.s.n_jobs, backend=self.s.backend,
                                          workers=self.workers)
        self.est = estimate(spf, self.counts, self.workers, (n_cal, s_cal))
        log.info("astrid estimate (%s rows): %s", f"{prep.codes.size:,}",
                 self.est.describe())

    @property
    def workers(self) -> int:
        return effective_workers(self.s.n_jobs, self.s.backend)

    def search_budget(self) -> float:
        """What the search may spend: the budget less the time spent before it and the
        reserve (the release choice after it)."""
        return self.s.max_seconds - (time.perf_counter() - self.start) \
            - self.s.reserve_fits * self.est.seconds_per_fit

    def fit_budget(self) -> None:
        """Within ``max_seconds``: as planned, on a sample that fits (``over_budget =
        "sample"``), or ``BudgetError`` with what would fit."""
        s, prep, est = self.s, self.prep, self.est
        if s.max_seconds is None or est.seconds <= self.search_budget():
            return
        exponent = growth_exponent(self.fit_data, self.streams.calib, self.m)
        budget = self.search_budget()
        rows = rows_that_fit(prep.codes.size, est.seconds, budget, exponent) \
            if budget > 0 else 0
        min_rows = MIN_PER_CLASS * len(prep.classes)
        if s.over_budget == "sample" and rows >= min_rows:
            log.info("astrid: over the budget of %s; learning on a stratified sample of "
                     "%s rows (fit cost grows as rows^%.1f).", format_seconds(s.max_seconds),
                     f"{rows:,}", exponent)
            sample, self.sample_record = _sampled(self.full, rows, self.streams.sample_draw,
                                                  rule="budget")
            self.sample_record["max_seconds"] = float(s.max_seconds)
            self.plan(sample)
            return
        fast = None
        if s.classifier != "hgb":  # what the scalable preset would cost here
            spf, n_cal, s_cal = calibrate(self.setup(prep, "hgb")[0], self.streams.calib,
                                          self.m, max_fits=3, max_seconds=1.0)
            fast = estimate(spf, self.counts, self.workers, (n_cal, s_cal))
        expected = None if s.adaptive is not None else self.fits(True)[0]
        raise BudgetError(_advice(est, budget, rows, exponent, fast, expected,
                                  min_rows=min_rows, max_seconds=s.max_seconds))

    def search(self, random_state: object, target: str) -> AstridResult:
        """Alg. 1, exact or adaptive, with progress lines and the deadline."""
        s, st, est, prep, attrs = self.s, self.streams, self.est, self.prep, self.attrs
        tracker = RunProgress.for_run(
            self.counts[1], progress=s.progress,
            kind="planned" if s.adaptive is None else "worst case",
            seconds_per_fit=est.seconds_per_fit, workers=self.workers,
            after=("the release choice", self.reserve) if s.reserve_fits else None,
            deadline=None if s.max_seconds is None else Deadline(float(s.max_seconds),
                                                                 self.start))
        run = dict(n_jobs=s.n_jobs, backend=s.backend, progress=s.progress,
                   stats={"cpu_seconds": 0.0}, tracker=tracker)
        n_fits_exact = self.fits(False)[0]
        common = dict(target=target, classes=prep.classes, columns=tuple(attrs),
                      classifier=classifier_spec(s.classifier, s.classifier_params),
                      scoring=s.scoring, alpha=s.alpha, n_search=s.n_search,
                      n_test=s.n_test, split=self.split,
                      random_state=random_state if isinstance(random_state, int) else None)
        self.searched = time.perf_counter()
        with tracker, shared_fit_data(self.fit_data, s.n_jobs, s.backend) as fit_data:
            if s.adaptive is not None:
                search = AdaptiveSearch(
                    fit_data=fit_data, attrs=attrs, run=run,
                    seeds=(st.base, st.sort, st.halve, st.p), n_search=s.n_search,
                    n_test=s.n_test, alpha=s.alpha, config=s.adaptive)
                return run_adaptive(search, self.start, common, n_fits_exact,
                                 first=self.first, blocks=self.blocks)
            return run_exact(fit_data, attrs, run, self.start, common, n_fits_exact,
                          seeds=(st.base, st.sort, st.halve, st.k, st.p),
                          n_search=s.n_search, n_test=s.n_test, alpha=s.alpha,
                          score_each_k=s.score_each_k, first=self.first, blocks=self.blocks)

    @property
    def reserve(self) -> float:
        return self.s.reserve_fits * self.est.seconds_per_fit

    def finish(self, result: AstridResult, root: np.random.SeedSequence) -> AstridResult:
        """``result`` with the estimate against the actual time, the sample and screen."""
        est, max_seconds = self.est, self.s.max_seconds
        actual = time.perf_counter() - self.searched
        record = {**est.to_dict(), "max_seconds": None if max_seconds is None else
                  float(max_seconds), "reserve_seconds": self.reserve,
                  "seconds_before_search": self.searched - self.start,
                  "fits_run": result.n_fits, "actual_seconds": actual,
                  "ratio": actual / est.seconds if est.seconds > 0 else None}
        if self.screen_record is not None:  # the blocks the planned fits were sized on
            triples = self.screen_record["triples"]
            record["screen_triples"] = {"tested": triples["tested"],
                                        "found": triples["n_found"]}
        log.info("astrid: %s fits in %s (estimated %s).", f"{result.n_fits:,}",
                 format_seconds(actual), format_seconds(est.seconds))
        if self.sample_record is not None:
            # the root's entropy reproduces the sample even when random_state was None
            self.sample_record.update(table_rows=int(self.full.codes.size),
                                      seed=result.random_state, entropy=root.entropy)
        return dataclasses.replace(result, estimate=record, sample=self.sample_record,
                                   screen=self.screen_record)


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


def _triples_line(triples: dict) -> str:
    """The log's account of the triple screen."""
    if "rows" not in triples:  # not run
        return "triples " + triples["rule"]
    return (f"{triples['tested']:,} triples tested, {triples['n_found']} with a three-way "
            f"interaction")
