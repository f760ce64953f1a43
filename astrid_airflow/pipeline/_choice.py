"""The privacy-aware choice of a release: grouping plus remedies, least utility loss.

ASTRID's per-k table gives, for every k, a grouping (and its accuracy); a GoldenEye
release only needs each group's projection (its columns plus the class) to be safe, so
the remedies (:mod:`._remedies`) are fitted per group. :func:`choose_release` tries the
groupings of the table, the learned one with its unsafe groups split, and all
singletons, each with its fitted recipe; measures what the release gate will measure
(per-group disclosure, largest-group unique share, expected intact rows, the attacks of
Giomi et al. 2023 on a shadow release, and the accuracy of a classifier trained on the
remedied surrogate and tested on held-out real rows); and keeps the candidate with the
highest accuracy that passes every expectation of the gate's policy. When none does it
refuses, saying which trade-off could not be made; it never loosens the policy.

References: Hundepool et al., *Statistical Disclosure Control*, Wiley 2012 (the
remedies and the disclosure-risk/information-loss trade-off); Domingo-Ferrer and
Mateo-Sanz, IEEE TKDE 14(1), 2002 (MDAV).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow.engine import Grouping

# MDAV_MAX_ROWS, CHOICE_MAX_ROWS: with the choice's cost model, which sizes them too
from ._choice_budget import CHOICE_MAX_ROWS, MDAV_MAX_ROWS, candidate_fits, with_choice_steps

#: Bins per numeric column of the coarser retries of releases only the attacks refuse.
COARSER_BINS = (20, 8, 4, 2)
#: How many of those releases (most accurate first) are retried coarser.
COARSER_RETRIES = 3
_ATTACKS = ("singling_out", "linkability", "inference")
#: The label suffix of a candidate whose unsafe multi-column groups are partitioned.
_PARTITION = "unsafe group(s) partitioned"


def _candidates(result: Mapping[str, Any], attrs: list[str]) -> list[tuple[str, Grouping]]:
    seen: dict[Grouping, str] = {}
    learned = Grouping(result["grouping"])
    seen[learned] = f"learned (k={learned.k})"
    for row in result.get("table") or []:
        g = row.get("grouping")
        if g and len(g) > 1:
            gg = Grouping(g)
            seen.setdefault(gg, f"per-k table, k={gg.k}")
    seen.setdefault(Grouping.singletons(attrs), "all singletons")
    return [(label, g) for g, label in seen.items()]


def _split(grouping: Grouping, failing: list[tuple[str, ...]]) -> Grouping:
    groups: list[list[str]] = []
    for g in grouping.groups:
        groups.extend([[c] for c in g] if tuple(g) in failing else [list(g)])
    return Grouping(groups)


def _split_along_table(grouping: Grouping, failing: list[tuple[str, ...]],
                       finer: list[Grouping]) -> Grouping | None:
    """Each failing group cut into its parts in the next finer grouping of the table.

    ASTRID's per-k table is a hierarchy of dependence: the first finer grouping that
    cuts a group into several parts is the split that keeps the most of the group's
    joint structure (the other groups are kept as they are). ``None``: no finer
    grouping cuts any failing group.
    """
    groups: list[list[str]] = []
    changed = False
    for g in grouping.groups:
        parts = [list(g)]
        if tuple(g) in failing:
            for f in finer:  # ordered by k, coarsest first
                cut = [[c for c in h if c in g] for h in f.groups]
                cut = [h for h in cut if h]
                if len(cut) > 1:
                    parts, changed = cut, True
                    break
        groups.extend(parts)
    return Grouping(groups) if changed else None


def _cheap_checks(remedied: pd.DataFrame, grouping: Grouping, target: str, policy: Any,
                  suppression: Any = None) -> tuple[dict[str, Any], list[str]]:
    from astrid_airflow.privacy import class_from_column_risks
    from astrid_airflow.release import (
        expected_intact_row_proportion,
        largest_group_unique_share,
        published_exposure,
    )

    # ``remedied`` is locally suppressed (as the shuffle publishes it): the per-group
    # checks count the published tuples, beside the share the suppression removed
    groups = published_exposure(remedied, grouping.groups, target, policy.disclosure_k)
    worst_below = max(groups, key=lambda d: d["share_below_k"])
    worst_disc = max(groups, key=lambda d: d["class_disclosure_share"])
    # the budget bounds what local suppression removed (not the recipe's merges)
    worst_supp = (suppression.worst if suppression is not None else None) or \
        {"columns": [], "suppressed_share": 0.0}
    below = worst_below["share_below_k"]
    disc = worst_disc["class_disclosure_share"]
    unique = largest_group_unique_share(remedied, grouping)
    expected = expected_intact_row_proportion(remedied, grouping, target)
    # the shuffle breaks intact rows over max_intact by within-class swaps (._intact):
    # what one release of the reference keeps after them is what is judged
    intact = expected if expected <= policy.max_intact else \
        _intact_after_swaps(remedied, grouping, target, policy.max_intact)
    # the class from each single column, exact (a shuffle keeps every (value, class)
    # pair, so the remedied table gives the release's figure)
    column = max(class_from_column_risks(remedied, target=target,
                                         columns=list(grouping.columns)),
                 key=lambda r: (r.ci[1], r.risk))
    # the worst group of each per-group check: the refusal names it
    risks = {"share_below_k": below, "class_disclosure_share": disc,
             "largest_group_unique_share": unique,
             "expected_intact_row_proportion": expected,
             "intact_row_proportion_after_swaps": intact,
             "worst_share_below_k_group": {"columns": list(worst_below["columns"]),
                                           "k_min": worst_below["k_min"]},
             "worst_class_disclosure_group": {"columns": list(worst_disc["columns"])},
             "suppressed_share": worst_supp["suppressed_share"],
             "worst_suppressed_group": {"columns": list(worst_supp["columns"])},
             "class_from_one_column_upper": column.ci[1],
             "worst_class_from_one_column": {"column": column.aux_columns[0],
                                             "risk": column.risk}}
    failed = []
    if below > policy.max_share_below_k:
        failed.append("share_below_k")
    if disc > policy.max_class_disclosure_share:
        failed.append("class_disclosure")
    if worst_supp["suppressed_share"] > policy.max_suppressed_share:
        failed.append("suppression")
    if unique > policy.max_largest_group_unique_share:
        failed.append("largest_group_unique_share")
    if intact > policy.max_intact:
        failed.append("intact_rows")
    if column.ci[1] > policy.max_class_from_one_column_risk:
        failed.append("class_from_one_column")
    return risks, failed


#: Bootstrap batches the choice checks a candidate's suppression budget on.
BATCH_RESAMPLES = 3


def _resamples(table: pd.DataFrame, target: str) -> list[pd.DataFrame]:
    """Batches like a new one: bootstrap resamples of the reference, its size, drawn
    within class (fixed seeds): their counts vary as a new batch's would."""
    import numpy as np

    out = []
    for seed in range(BATCH_RESAMPLES):
        rng = np.random.default_rng(seed)
        rows = np.concatenate([rng.choice(idx, idx.size) for idx in
                               table.groupby(target, observed=True).indices.values()])
        out.append(table.iloc[np.sort(rows)].reset_index(drop=True))
    return out


def _intact_after_swaps(remedied: pd.DataFrame, grouping: Grouping, target: str,
                        max_intact: float) -> float:
    """Intact-row proportion of one release of ``remedied`` (a fixed seed) after the
    shuffle's within-class swaps."""
    import numpy as np

    from astrid_airflow.engine import pandas_class_codes, release_permutations
    from astrid_airflow.release import break_intact_rows

    seed = np.random.SeedSequence(0)
    codes = pandas_class_codes(remedied[target], target)
    _, done = break_intact_rows(remedied, grouping.groups, target,
                                release_permutations(codes, grouping.k, seed), max_intact,
                                seed)
    return done.intact_rows / max(done.distinct_rows, 1)


def _attack_checks(remedied: pd.DataFrame, grouping: Grouping, target: str, policy: Any,
                   seed: int) -> tuple[dict[str, Any], list[str]]:
    """The gate's attacks (on its shadow releases, :func:`~astrid_airflow.privacy.
    shadow_attacks`): a candidate fails an attack when the upper bound the gate may find
    with its own seed exceeds the policy's limit. That bound is this draw's upper bound
    plus a one-sided 95 % margin for the difference of two draws' pooled risks
    (``1.645 * sd * sqrt(2 / releases)``, ``sd`` the spread of the releases' risks): a
    candidate just under a limit would otherwise fail the gate about half the time."""
    from astrid_airflow.privacy import shadow_attacks

    found = shadow_attacks(remedied, target=target, grouping=grouping,
                           n_attacks=policy.attack_n, random_state=seed)
    limits = {"singling_out": policy.max_singling_out_risk,
              "linkability": policy.max_linkability_risk,
              "inference": policy.max_inference_risk}
    risks: dict[str, Any] = {}
    failed = []
    for kind, limit in limits.items():
        upper = max((r["ci"][1] for r in found[kind]), default=0.0)
        # a risk is at most 1: a limit of 1 is "report only" and is never exceeded
        bound = min(1.0, max((r["ci"][1] + 1.645 * (r.get("risk_sd") or 0.0)
                              * (2 / (r.get("shadow_releases") or 1)) ** 0.5
                              for r in found[kind]), default=0.0))
        risks.update({f"{kind}_upper": upper, f"{kind}_gate_bound": bound})
        if bound > limit:
            failed.append(kind)
    return risks, failed


def _partition_costs(cands: list[dict[str, Any]], split_for: dict[str, Grouping]) -> None:
    """Each partitioned candidate records what the partition costs or saves: its
    accuracy beside the same grouping's with the unsafe groups split instead
    (``without_partition``: that candidate's label and accuracy)."""
    for c in cands:
        if c["method"] != "partition":
            continue
        split = next((o for o in cands if o["method"] == "bins" and o["max_bins"] is None
                      and Grouping(o["grouping"]) == split_for[c["label"]]), None)
        c["without_partition"] = None if split is None else {
            "label": split["label"], "accuracy_surrogate": split["accuracy_surrogate"],
            "accuracy_drop": split["accuracy_drop"], "failed": list(split["failed"])}


def _then(label: str, step: str) -> str:
    """``label, step``; a step repeated in a row is counted (``step ×3``), not restated.

    >>> _then(_then("per-k table, k=4", "split"), "split")
    'per-k table, k=4, split ×2'
    """
    m = re.fullmatch(rf"(.*), {re.escape(step)}(?: ×(\d+))?", label)
    if m is None:
        return f"{label}, {step}"
    return f"{m.group(1)}, {step} ×{int(m.group(2) or 1) + 1}"


@with_choice_steps  # progress lines and the budget's deadline (._choice_budget)
def choose_release(table: pd.DataFrame, result: Any, *, policy: Any = None,
                   remedies: bool = True, random_state: object = None,
                   classifier: Any = None, created_at: Any = None,
                   max_seconds: float | None = None, progress: bool | None = None,
                   _steps: Any = None) -> Any:
    """Learned result -> artefact with the release of least utility loss within policy.

    Parameters
    ----------
    table : DataFrame
        The reference table the result was learned on (after cleaning).
    result : AstridResult or its dict
        ASTRID's result, with its per-k table of groupings.
    policy : GatePolicy or dict, optional
        The gate's policy the release must pass (default: ``GatePolicy()``, the
        default gate). Never loosened.
    remedies : bool, default True
        ``False``: record no release (the artefact of the learned grouping, as before).
    random_state : None or int
        Seeds the candidates' shadow attacks and utility splits (spawned per candidate).
    classifier : str or dict, optional
        Classifier of the utility measure (default: the policy's, else the result's).
    created_at : str or datetime, optional
    max_seconds : float or None
        What the choice may spend (the learn's budget left after the search, see
        :func:`~astrid_airflow.save_learned`): a step that would end past it raises
        ``BudgetError``. None: no bound.
    progress : bool or None
        False: no progress lines; otherwise an estimate, then a line at least every
        30 s with the steps done and the time left, on the ``astrid_airflow`` logger.

    Returns
    -------
    GroupingArtefact
        With ``release``: ``status`` (``"chosen"`` or ``"refused"``), ``recipe``,
        ``reason`` (refused: the trade-off that could not be made), ``policy``,
        ``learned_grouping``, ``candidates`` (each: ``label``, ``grouping``,
        ``remedies`` per group, ``risks``, ``accuracy_original``,
        ``accuracy_surrogate``, ``accuracy_drop``, ``passed``, ``failed``), ``chosen``
        (index) and ``utility`` (accuracies of the original, the raw release and the
        remedied release of the chosen grouping; ``remedy_cost`` = raw - remedied;
        ``accuracy_unsuppressed_release`` and ``suppression_cost`` = that - remedied:
        what local suppression costs on top of the recipe).
        The artefact's grouping is the chosen one (the learned one when refused).

    Notes
    -----
    Candidates are measured as the gate measures a release: per-group disclosure on
    the remedied table, the largest group's unique share, the *expected* intact-row
    proportion, the exact class-from-one-column risk of every column (which the recipe
    was fitted to keep within half the policy's bound, coarsening the column it names),
    and the accuracy drop (classifier trained on a surrogate of the
    remedied training part, tested on held-out real rows put into the release's domain
    with the recipe). Candidates are then attacked in order of accuracy (the gate's
    shadow releases, ``policy.attack_n`` attacks) until one passes everything: that is
    the release; later candidates are recorded as not attacked. An attack passes when
    the upper bound the gate may find with its own seed stays within the limit (this
    draw's bound plus a one-sided 95 % margin for a second draw). A candidate with
    multi-column groups the bins cannot make safe is tried with those groups
    partitioned (a Mondrian partition across classes, :mod:`._fit_partition`) before
    it is tried with them split; ``without_partition`` records the split's accuracy.
    When only the attacks refuse, the ``COARSER_RETRIES`` most accurate of those
    candidates are retried with at most ``COARSER_BINS`` bins per numeric column, in
    turn.
    """
    from astrid_airflow._validation import check_seed_sequence
    from astrid_airflow.engine import pandas_class_codes
    from astrid_airflow.gate import GatePolicy
    from astrid_airflow.release import (
        GroupingArtefact,
        ProtectsNothingWarning,
        release_domain,
        stratified_subsample,
        surrogate_utility,
    )

    from ._fit_recipe import fit_recipe

    d = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    if not isinstance(remedies, bool):
        raise ParameterError(f"Invalid remedies: {remedies!r}. Must be True or False.")
    if not remedies:
        return GroupingArtefact.from_result(d, table, created_at=created_at)
    if policy is None:
        policy = GatePolicy()
    elif isinstance(policy, Mapping):
        policy = GatePolicy.from_dict(policy)
    elif not isinstance(policy, GatePolicy):
        raise ParameterError(f"Invalid policy: {policy!r}. Must be a GatePolicy or a dict.")
    target = d["target"]
    attrs = [c for c in table.columns if c != target]
    # an int seed is used as given; anything else is drawn once and recorded
    seed_int = random_state if isinstance(random_state, int) else int(
        check_seed_sequence(random_state).generate_state(1)[0] >> 1)
    root = check_seed_sequence(seed_int)
    s_sub, s_util, s_attack = root.spawn(3)
    work = table
    if len(table) > CHOICE_MAX_ROWS:
        codes = pandas_class_codes(table[target], target)
        work = table.iloc[stratified_subsample(codes, CHOICE_MAX_ROWS, s_sub)]
        work = work.reset_index(drop=True)
    from astrid_airflow.release import classifier_preset

    # as the gate: the policy's classifier, else the preset the grouping was learned with
    classifier = classifier if classifier is not None else policy.classifier
    if classifier is None:
        classifier = classifier_preset(None, type("R", (), {"classifier":
                                                            d.get("classifier")})())

    util_seed = int(s_util.generate_state(1)[0] >> 1)
    halves = _resamples(work, target)
    # what the fit may leave exposed on the reference table: local suppression removes
    # it from every batch, and the shuffle refuses a batch over max_suppressed_share
    # whatever the per-group thresholds say (they count published rows: 0 by
    # construction), so that budget, and only it, bounds the fit
    budget = policy.max_suppressed_share
    repeats = policy.utility_repeats_for(len(work))  # as the gate will judge it

    def evaluate(label: str, grouping: Grouping, method: str,
                 max_bins: int | None = None) -> dict[str, Any]:
        """A candidate fitted, put through the checks before the attacks, and measured
        (the same utility splits for all: comparable figures)."""
        def fit(rows: pd.DataFrame):
            return fit_recipe(rows, target=target, grouping=grouping,
                              k=policy.disclosure_k, max_share_below_k=budget,
                              max_class_disclosure_share=budget, method=method,
                              max_class_from_one_column_risk=policy.
                              max_class_from_one_column_risk, max_bins=max_bins)

        recipe, report = fit(table)
        remedied, suppression = release_domain(work, recipe, target, grouping)
        risks, failed = _cheap_checks(remedied, grouping, target, policy, suppression)
        # a new batch has its own counts: the recipe must keep the suppression of
        # batches like it (bootstrap resamples) within the budget too (issue 28)
        batch = max(release_domain(h, recipe, target, grouping)[1].to_dict()[
            "max_suppressed_share"] for h in halves)
        risks["batch_suppressed_share"] = batch
        if batch > policy.max_suppressed_share and "suppression" not in failed:
            failed = [*failed, "suppression"]
        # a candidate that may be released is scored out of sample, as a new batch
        # meets its recipe: refitted on each split's training part (credit-a looked
        # 0.05 better in sample, issue 28); one already refused by a privacy check
        # only informs the report, in sample (the refits cost most of the choice)
        scored = "in sample" if failed else "out of sample"
        refit = None if failed else (lambda train: fit(train)[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ProtectsNothingWarning)
            u = surrogate_utility(work, grouping, target=target, classifier=classifier,
                                  random_state=util_seed, n_repeats=repeats,
                                  recipe=recipe, recipe_fitter=refit)
        drop = u.accuracy_original - u.accuracy_surrogate
        if drop > policy.max_accuracy_drop:
            failed = [*failed, "utility"]
        return {"label": label, "grouping": grouping.to_list(), "method": method,
                "max_bins": max_bins, "recipe": recipe, "remedies": report, "risks": risks,
                "failed": failed, "remedied": remedied,
                "accuracy_original": u.accuracy_original,
                "accuracy_surrogate": u.accuracy_surrogate, "accuracy_drop": drop,
                "accuracy_drop_se": u.difference_se, "utility_scored": scored,
                "refit": lambda train: fit(train)[0]}

    cands: list[dict[str, Any]] = []
    queue = _candidates(d, attrs)
    learned = Grouping(d["grouping"])
    # the table's groupings, coarsest first: where a failing group is split
    finer = sorted({Grouping(r["grouping"]) for r in d.get("table") or []
                    if r.get("grouping")}, key=lambda g: (g.k, g.to_list()))
    mdav_ok = len(table) <= MDAV_MAX_ROWS
    spf = (d.get("estimate") or {}).get("seconds_per_fit")
    _steps.plan(len(queue) * (2 if mdav_ok else 1), None if spf is None else
                candidate_fits(len(table), policy) * spf)
    done: set = set()
    split_for: dict[str, Grouping] = {}  # a partitioned candidate's split alternative
    i = 0
    while i < len(queue):
        label, grouping = queue[i]
        i += 1
        method = "mdav" if label.endswith("MDAV") else "partition" \
            if label.endswith(_PARTITION) else "bins"
        if (grouping, method) in done:
            continue
        done.add((grouping, method))
        if method == "bins" and mdav_ok and any(len(g) > 1 for g in grouping.groups):
            # microaggregation within class of the same grouping's multi-column groups
            queue.append((f"{label}, MDAV", grouping))
        with _steps.step(f"measuring {label}", queued=len(queue) - i):
            c = evaluate(label, grouping, method)
        failing = [tuple(g["columns"]) for g in c["remedies"] if not g["passed"]
                   and len(g["columns"]) > 1]
        if failing and method == "bins":
            # the unsafe groups generalised together first, then split (the interactions
            # ASTRID found survive only the former)
            queue.append((_then(label, _PARTITION), grouping))
            split_for[_then(label, _PARTITION)] = _split(grouping, failing)
            along = _split_along_table(grouping, failing, finer)
            if along is not None:
                queue.append((_then(label, "unsafe group(s) split along the per-k table"),
                              along))
            queue.append((_then(label, "unsafe group(s) split"), _split(grouping, failing)))
        cands.append(c)
    attack_seed = int(s_attack.generate_state(1)[0] >> 1)

    def attack_in_order(batch: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Attack the batch's candidates that passed everything else, most accurate
        first; the first that passes the attacks too is the release."""
        for c in sorted(batch, key=lambda c: -c["accuracy_surrogate"]):
            if c["failed"]:
                continue
            with _steps.step(f"attacking {c['label']}"):
                risks, failed = _attack_checks(c["remedied"], Grouping(c["grouping"]),
                                               target, policy, attack_seed)
            c["risks"].update(risks)
            c["failed"] = failed
            if not failed:
                return c
        return None

    chosen = attack_in_order(cands)
    # only the attacks refused them: the same releases with fewer bins per column (the
    # attacks combine all columns, so their risk falls with the detail)
    bases = sorted((c for c in cands if c["method"] == "bins" and c["failed"]
                    and set(c["failed"]) <= set(_ATTACKS)),
                   key=lambda c: -c["accuracy_surrogate"])[:COARSER_RETRIES]
    tried = {c["recipe"].to_json() for c in bases}
    for cap in COARSER_BINS if chosen is None else ():
        batch = []
        for c in bases:
            with _steps.step(f"measuring {c['label']} with at most {cap} bins"):
                retry = evaluate(_then(c["label"], f"at most {cap} bins"),
                                 Grouping(c["grouping"]), "bins", cap)
            if retry["recipe"].to_json() not in tried:  # fewer bins than before
                tried.add(retry["recipe"].to_json())
                batch.append(retry)
        cands.extend(batch)
        chosen = attack_in_order(batch)
        if chosen is not None:
            break
    _partition_costs(cands, split_for)
    for c in cands:
        c["passed"] = c is chosen
        c["attacked"] = "singling_out_upper" in c["risks"]
    release: dict[str, Any] = {
        "policy": policy.to_dict(), "learned_grouping": learned.to_list(),
        "random_state": random_state if isinstance(random_state, int) else seed_int,
        "rows_measured": len(work),
        "candidates": [{k: v for k, v in c.items()
                        if k not in ("remedied", "recipe", "refit")} for c in cands]}
    if chosen is None:
        release.update(status="refused", recipe=None, chosen=None,
                       reason=_refusal(cands, policy))
        artefact_dict = d
    else:
        with _steps.step("utility of the raw release"):
            raw = surrogate_utility(work, Grouping(chosen["grouping"]), target=target,
                                    classifier=classifier, random_state=util_seed,
                                    n_repeats=repeats, remedies=False)
        with _steps.step("utility without local suppression"):  # the same splits
            kept = surrogate_utility(work, Grouping(chosen["grouping"]), target=target,
                                     classifier=classifier, random_state=util_seed,
                                     n_repeats=repeats, recipe_fitter=chosen["refit"],
                                     suppression=False)
        release.update(status="chosen", recipe=chosen["recipe"].to_dict(),
                       chosen=cands.index(chosen), reason=None, utility={
                           "accuracy_original": chosen["accuracy_original"],
                           "accuracy_raw_release": raw.accuracy_surrogate,
                           "accuracy_remedied_release": chosen["accuracy_surrogate"],
                           "remedy_cost": raw.accuracy_surrogate
                           - chosen["accuracy_surrogate"],
                           "accuracy_unsuppressed_release": kept.accuracy_surrogate,
                           "suppression_cost": kept.accuracy_surrogate
                           - chosen["accuracy_surrogate"],
                           "accuracy_drop": chosen["accuracy_drop"],
                           "accuracy_drop_se": chosen["accuracy_drop_se"],
                           "scored": "out of sample: the recipe refitted on each split's "
                                     "training part"})
        # the artefact records the released grouping (what the gate ties the file to);
        # the learned one stays in release["learned_grouping"] and the per-k table
        artefact_dict = {**d, "grouping": chosen["grouping"], "k": len(chosen["grouping"])}
    art = GroupingArtefact.from_result(artefact_dict, table, created_at=created_at)
    return dataclasses.replace(art, release=release)


def _cols(columns: list[str]) -> str:
    return "{" + ", ".join(columns[:3]) + (f", +{len(columns) - 3} more" if len(columns) > 3
                                           else "") + "}"


def _below_k(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_share_below_k_group") or {}
    return (f"{r['share_below_k']:.3f} of rows in classes below k={policy.disclosure_k} > "
            f"{policy.max_share_below_k} (k_min {w.get('k_min')} in group "
            f"{_cols(w.get('columns', []))})")


def _suppression(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_suppressed_group") or {}
    return (f"{r['suppressed_share']:.3f} of rows suppressed (a resampled "
            f"batch: {r.get('batch_suppressed_share', 0.0):.3f}) > "
            f"{policy.max_suppressed_share} in group {_cols(w.get('columns', []))}")


def _class_disclosure(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_class_disclosure_group") or {}
    return (f"class disclosure {r['class_disclosure_share']:.3f} > "
            f"{policy.max_class_disclosure_share} in group {_cols(w.get('columns', []))}")


def _unique_share(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    return (f"largest group's unique share {r['largest_group_unique_share']:.3f} > "
            f"{policy.max_largest_group_unique_share}")


def _intact(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    kept = r.get("intact_row_proportion_after_swaps", r["expected_intact_row_proportion"])
    return (f"intact rows {kept:.3f} after swaps (expected "
            f"{r['expected_intact_row_proportion']:.3f}) > {policy.max_intact}")


def _one_column(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    w = r.get("worst_class_from_one_column") or {}
    return (f"class from column {w.get('column')} alone: risk upper bound "
            f"{r['class_from_one_column_upper']:.3f} > "
            f"{policy.max_class_from_one_column_risk}")


def _utility(c: dict[str, Any], r: dict[str, Any], policy: Any) -> str:
    return f"loses {c['accuracy_drop']:.3f} accuracy > {policy.max_accuracy_drop}"


#: check -> its failure with the figures (and the group at fault); an attack otherwise
_WHY = {"share_below_k": _below_k, "suppression": _suppression,
        "class_disclosure": _class_disclosure, "largest_group_unique_share": _unique_share,
        "intact_rows": _intact, "class_from_one_column": _one_column, "utility": _utility}


def _attack(f: str, r: dict[str, Any], policy: Any) -> str:
    """An attack's failure: the bound the gate's own draw may reach."""
    limit = getattr(policy, f"max_{f}_risk", None)
    return (f"{f} risk upper bound {r.get(f'{f}_upper', float('nan')):.3f} (the "
            f"gate's may reach {r.get(f'{f}_gate_bound', float('nan')):.3f}) > {limit}")


def _why(c: dict[str, Any], policy: Any) -> str:
    """The failed checks of a candidate with their figures (and the group at fault)."""
    r = c["risks"]
    return "; ".join(_WHY[f](c, r, policy) if f in _WHY else _attack(f, r, policy)
                     for f in c["failed"])


def _refusal(cands: list[dict[str, Any]], policy: Any) -> str:
    private = [c for c in cands if not (set(c["failed"]) - {"utility"})]
    useful = sorted((c for c in cands if "utility" not in c["failed"]),
                    key=lambda c: -c["accuracy_surrogate"])
    within = (f"; the {len(useful)} release(s) within it fail privacy (most accurate: "
              + " | ".join(f"{c['label']}: {_why(c, policy)}" for c in useful[:2]) + ")"
              if useful else "; no candidate is within it")
    if private:
        best = max(private, key=lambda c: c["accuracy_surrogate"])
        return (f"privacy vs utility: the most accurate release passing every privacy "
                f"expectation checked before the attacks ({best['label']}) loses "
                f"{best['accuracy_drop']:.3f} accuracy on held-out real rows, above "
                f"max_accuracy_drop {policy.max_accuracy_drop}" + within)
    closest = min(cands, key=lambda c: (len(c["failed"]), -c["accuracy_surrogate"]))
    worst = sorted({f for c in cands for f in c["failed"]})
    return ("privacy: no candidate grouping with remedies passes every privacy expectation "
            f"of the policy (failing: {', '.join(worst)}; closest: {closest['label']}: "
            f"{_why(closest, policy)})")
