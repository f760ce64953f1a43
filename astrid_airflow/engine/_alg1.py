"""Alg. 1 of the paper in its two modes, on prepared fit data: exact and adaptive.

:func:`~astrid_airflow.astrid` (``_search``) prepares the split, the screen, the cost
estimate and the budget, then hands the fit data to :func:`run_exact` (every reward a
mean over R' permutations, R per p-value) or :func:`run_adaptive` (racing and
sequential p-values; see ``_search``'s module docstring).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

import numpy as np

from ._adaptive import AdaptiveConfig
from ._clustering import best_cuts, free_cuts, sort_attributes, split_scores
from ._fits import Task, run_tasks
from ._grouping import Grouping, letters
from ._racing import race_argmax, race_ranking
from ._result import AstridResult, KRow
from ._sequential import plan, run_sequential
from ._test import empirical_p_value

log = logging.getLogger("astrid_airflow")


def run_exact(fit_data, attrs, run, start, common, n_fits_exact, *, seeds, n_search, n_test,
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
        search_scores={"sorting": sorting_log, "splits": splits_record(t)},
        n_fits_exact=n_fits_exact, cpu_seconds=stats["cpu_seconds"], **common)



def group_sizes(blocks: list[list[int]] | None) -> list[int] | None:
    return None if blocks is None else [len(b) for b in blocks]


def splits_record(t: np.ndarray) -> list[float | None]:
    # None: a cut the screen made unnecessary to evaluate (NaN is not JSON)
    return [None if np.isnan(v) else float(v) for v in t]


@dataclasses.dataclass
class AdaptiveSearch:
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


def run_adaptive(search: AdaptiveSearch, start: float, common: dict, n_fits_exact: int, *,
                 first=(), blocks=None) -> AstridResult:
    """Alg. 1 with racing and sequential p-values (see the module docstring)."""
    attrs, m = search.attrs, len(search.attrs)
    detached, sorting_log = _raced_order(search, first, blocks)
    order = [attrs[i] for i in detached]
    t = _raced_splits(search, detached, len(first))
    groupings = {1: Grouping([order])}
    for k in range(2, m + 1):
        groupings[k] = Grouping.from_cuts(order, best_cuts(t, k))
    rows, chosen, tested, seq = _sequential_p_values(search, groupings, order)
    record = search.record
    record.update(
        fits=search.fits,
        p_risk_per_test=seq.risk_bound,
        p_risk_bound=seq.risk_bound * tested,
        p_boundaries={"curtail_hits": seq.curtail_hits,
                      "exact_reject_max_hits": seq.exact_reject_max,
                      "early_reject": [list(x) for x in seq.reject_at]},
        untested=[k for k in range(2, m + 1) if k < chosen])
    table = tuple(rows[k] for k in range(1, m + 1))
    return AstridResult(
        grouping=groupings[chosen], k=chosen, table=table, order=tuple(order),
        baseline_accuracy=rows[1].acc_ave, p_og=rows[m].p, n_fits=sum(search.fits.values()),
        seconds=time.perf_counter() - start,
        search_scores={"sorting": sorting_log, "splits": splits_record(t)},
        n_fits_exact=n_fits_exact, adaptive=record,
        cpu_seconds=search.run["stats"]["cpu_seconds"], **common)


def _raced_order(search: AdaptiveSearch, first, blocks) -> tuple[list[int], list[dict]]:
    """1. Sorting, one race per step: the detach order and each step's means."""
    attrs, m, c, record = search.attrs, len(search.attrs), search.config, search.record
    step_seeds = iter(search.seeds[1].spawn(m))
    sorting_log: list[dict[str, float]] = []

    def reward(parts) -> np.ndarray:
        round_seeds = next(step_seeds).spawn(search.n_search)
        out = race_argmax(lambda idx, first, count: search.scores_of(
            "sorting", [parts[i] for i in idx], round_seeds, first, count),
            len(parts), budget=search.n_search, batch=c.race_batch, delta=c.delta,
            risk=c.race_risk, delta_sd=c.delta_sd)
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

    return sort_attributes(m, reward, on_step=log_step, first=first, blocks=blocks), \
        sorting_log


def _raced_splits(search: AdaptiveSearch, detached: list[int], n_first: int) -> np.ndarray:
    """2. 2-split scores, raced as a ranking with common random numbers."""
    # Cuts inside the screen's free prefix are not raced (split_scores: NaN, ranked first).
    m, c = len(detached), search.config
    split_seeds = search.seeds[2].spawn(search.n_search)
    n_free = free_cuts(n_first, m)
    parts = [(tuple(detached[:i]), tuple(detached[i:])) for i in range(n_free + 1, m)]
    t = np.full(m - 1, np.nan)
    search.record["splits"] = {"rounds": 0, "stop": "no cut to race", "rounds_per_cut": [],
                               "free_cuts": n_free}
    if parts:
        ranked = race_ranking(lambda idx, first, count: search.scores_of(
            "splits", [parts[i] for i in idx], split_seeds, first, count),
            len(parts), budget=search.n_search, batch=c.race_batch, delta=c.delta,
            risk=c.race_risk, delta_sd=c.delta_sd)
        search.record["splits"].update(rounds=int(ranked.rounds.max()), stop=ranked.stop,
                                       rounds_per_cut=ranked.rounds.tolist())
        t[n_free:] = ranked.means
    return t


def _sequential_p_values(search: AdaptiveSearch, groupings: dict, order: list[str]
                         ) -> tuple[dict, int, int, Any]:
    """3. Baseline, then sequential p-values from k = m down to the first not rejected.

    Returns the table's rows, the chosen k, how many k were tested and the plan."""
    fit_data, attrs, run, record = search.fit_data, search.attrs, search.run, search.record
    m, c = len(attrs), search.config
    base_ss, p_ss = search.seeds[0], search.seeds[3]
    a0 = float(run_tasks(fit_data, [Task("valid", None, base_ss)], desc="baseline",
                         **run)[0])
    p_seeds = p_ss.spawn(m - 1)  # the exact mode's p-value seeds, in the same order
    seq = plan(search.n_test, search.alpha, c.batch, c.risk)
    rows = {1: KRow(k=1, grouping=groupings[1], acc_ave=a0, acc_min=None, acc_max=None,
                    sd=None, p=None, acc_search=None, letters=letters(groupings[1], order))}
    record["p_values"] = {}
    chosen, tested, verify_fits = 1, 0, 0
    for k in range(m, 1, -1):
        g = tuple(tuple(ix) for ix in groupings[k].indices(attrs))
        draws = p_seeds[k - 2].spawn(search.n_test)

        def draw(first: int, count: int, g=g, draws=draws, k=k) -> np.ndarray:
            search.fits["p_values"] += count
            return run_tasks(fit_data, [Task("valid", g, s) for s in
                                        draws[first:first + count]], desc=f"p k={k}", **run)

        out = run_sequential(a0, draw, seq)
        tested += 1
        rows[k] = _sequential_row(k, groupings[k], order, out)
        record["p_values"][str(k)] = {"permutations": out.n_draws, "hits": out.hits,
                                      "stop": out.stop, "rejected": out.rejected}
        log.info("p-value k=%d (adaptive): p = %.4f after %d permutations (%s)", k,
                 out.p_value, out.n_draws, out.stop)
        if c.verify:  # the rest of the exact test's draws, apart from n_fits
            rest = run_tasks(fit_data, [Task("valid", g, s) for s in draws[out.n_draws:]],
                             desc=f"verify k={k}", **run)
            exact_p = empirical_p_value(a0, np.concatenate([out.null_scores, rest]))
            record["p_values"][str(k)].update(exact_p=exact_p,
                                              exact_rejected=bool(exact_p < search.alpha))
            verify_fits += rest.size
        if not out.rejected:
            chosen = k
            break
    if c.verify:
        _verify_record(record, chosen, tested, m, verify_fits)
    for k in range(2, m + 1):
        rows.setdefault(k, KRow(k=k, grouping=groupings[k], acc_ave=None, acc_min=None,
                                acc_max=None, sd=None, p=None, acc_search=None,
                                letters=letters(groupings[k], order), n_permutations=0))
    return rows, chosen, tested, seq


def _sequential_row(k: int, grouping: Grouping, order: list[str], out: Any) -> KRow:
    null = out.null_scores
    return KRow(k=k, grouping=grouping, acc_ave=float(null.mean()),
                acc_min=float(null.min()), acc_max=float(null.max()),
                sd=float(null.std(ddof=1)) if null.size > 1 else 0.0, p=out.p_value,
                acc_search=None, letters=letters(grouping, order), n_permutations=out.n_draws)


def _verify_record(record: dict, chosen: int, tested: int, m: int, verify_fits: int) -> None:
    # Exact p-values on these groupings choose the highest k with p >= alpha; the
    # untested k < chosen cannot change that when the chosen k is not rejected.
    exact_rejected = {int(k): v["exact_rejected"] for k, v in record["p_values"].items()}
    exact_choice = next((k for k in sorted(exact_rejected, reverse=True)
                         if not exact_rejected[k]), 1 if tested == m - 1 else None)
    record["verify"] = {"fits": verify_fits, "exact_k": exact_choice,
                        "same_k": exact_choice == chosen}
