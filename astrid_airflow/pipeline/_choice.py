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
import logging
import warnings
from collections.abc import Mapping
from typing import Any

import pandas as pd

from astrid_airflow._errors import ParameterError
from astrid_airflow.engine import Grouping

# MDAV_MAX_ROWS: with the choice's cost model, which sizes it too
from ._choice_budget import (
    MDAV_MAX_ROWS,
    candidate_seconds,
    with_choice_steps,
)
from ._choice_candidates import (
    candidate_groupings,
    partition_costs,
    split_along_table,
    split_unsafe,
    then,
)
from ._choice_checks import (
    CHOICE_MAX_ROWS,
    attack_checks,
    batch_excess,
    batch_plan,
    batch_suppression,
    built_batches,
    cheap_checks,
)
from ._choice_race import race
from ._choice_reasons import refusal
from ._fit_recipe import BATCH_FACTOR

#: Bins per numeric column of the coarser retries of releases only the attacks or the
#: suppression budget refuse.
COARSER_BINS = (20, 8, 4, 2)
#: How many of those releases (closest to the batch check, then most accurate) are
#: retried coarser.
COARSER_RETRIES = 3
#: Cell margins of the chosen release's coarser fallbacks: its recipe refitted for this
#: many times k rows of each class per published cell (the release's own is
#: ``BATCH_FACTOR``, 3). A batch on which the chosen recipe would need more suppression
#: than the budget is published with the first fallback that keeps it
#: (``ReleaseRecipe.rungs``), so the shuffle refuses only a batch no rung can publish.
RUNG_FACTORS = (6, 12)
_ATTACKS = ("singling_out", "linkability", "inference")
#: What a fallback may fail in full: each batch is judged on it with the groups that fell
#: back only (the shuffle's intact-row swaps, the gate's accuracy check).
_PER_BATCH = {"utility", "intact_rows"}
#: A candidate's working keys, not recorded in the release.
_UNRECORDED = ("remedied", "recipe", "refit", "_planned_splits", "_splits",
               "_splits_scored")
#: The label suffix of a candidate whose unsafe multi-column groups are partitioned.
_PARTITION = "unsafe group(s) partitioned"
#: The label suffix of a candidate whose coarsened or unsafe groups are synthesised.
_SYNTHESISED = "coarsened group(s) synthesised"


def _retry_order(c: Mapping[str, Any]) -> tuple[float, float]:
    """Coarser retries first of the releases nearest to the batch check (their share of
    bootstrap batches over the budget beyond ``BATCH_REFUSAL_RATE``; 0 for those only
    the attacks refused), then the most accurate: a few bins less keeps a near miss, while
    a group whose batches mostly fail stays failing at any cap per column (its cells
    are the product of its columns' bins)."""
    return batch_excess(c["risks"]), -c["accuracy_surrogate"]


def _domain_memo() -> Any:
    from astrid_airflow.release import DomainMemo

    return DomainMemo()


def _rows_key(rows: pd.DataFrame) -> tuple[int, str]:
    """The memo key of the group fits on ``rows`` (``release.rows_key``)."""
    from astrid_airflow.release import rows_key

    return rows_key(rows)


@with_choice_steps  # progress lines and the budget's deadline (._choice_budget)
def choose_release(table: pd.DataFrame, result: Any, *, policy: Any = None,
                   remedies: bool = True, random_state: object = None,
                   classifier: Any = None, created_at: Any = None,
                   max_seconds: float | None = None, progress: bool | None = None,
                   synthesis_budget: Any = None, synthesis: bool = True,
                   _steps: Any = None) -> Any:
    """Learned result -> artefact with the release of least utility loss within policy.

    Each candidate (grouping + fitted recipe) is measured as the gate measures a release;
    the most accurate one passing every check, attacks last, is the release, and its recipe
    gets coarser fallbacks (steps and constants: docs/privacy.md, "The privacy-aware choice").

    Parameters
    ----------
    table : DataFrame
        The reference table the result was learned on (after cleaning).
    result : AstridResult or its dict
        ASTRID's result, with its per-k table of groupings.
    policy : GatePolicy or dict, optional
        The gate's policy the release must pass (default ``GatePolicy()``); never loosened.
    remedies : bool, default True
        ``False``: record no release (the artefact of the learned grouping).
    random_state, classifier, created_at : optional
        Seed of the attacks and utility splits; the utility's classifier; the timestamp.
    max_seconds, progress : optional
        The choice's time budget (``BudgetError`` past it); False: no progress lines.
    synthesis_budget : (float, float), optional
        ``(epsilon, delta)`` of the groups a candidate synthesises (Gaussian noise on
        their models' statistics, split over them; :mod:`astrid_airflow.release.
        _dp_accounting`); refused before any work if epsilon <= 0 or delta >= 1/n.
    synthesis : bool, default True
        ``False``: no candidate synthesises a group (every published value is a
        person's own, remedied and shuffled).

    Returns
    -------
    GroupingArtefact
        Its grouping is the chosen one (the learned one when refused); its ``release``
        records status, reason, recipe, policy, candidates, utility and fallbacks
        (docs/artefacts.md).
    """
    from astrid_airflow.release import GroupingArtefact

    d = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    if not isinstance(remedies, bool):
        raise ParameterError(f"Invalid remedies: {remedies!r}. Must be True or False.")
    if not remedies:
        return GroupingArtefact.from_result(d, table, created_at=created_at)
    from astrid_airflow.gate import check_policy

    policy = check_policy(policy)
    # a bad declaration is refused before any candidate is measured (identifiers are
    # dropped before learning, pipeline._learn.without_identifiers)
    model = policy.attacker_model
    model.check_table([*map(str, table.columns), *(c for c in model.identifiers
                                                   if c not in table.columns)], d["target"])
    if synthesis_budget is not None:
        from astrid_airflow.release import check_budget

        if not isinstance(synthesis_budget, (tuple, list)) or len(synthesis_budget) != 2:
            raise ParameterError(f"Invalid synthesis_budget: {synthesis_budget!r}. Must be "
                                 "(epsilon, delta).")
        synthesis_budget = check_budget(*synthesis_budget, len(table))
    choice = _Choice.start(table, d, policy, random_state, classifier, _steps)
    if not isinstance(synthesis, bool):
        raise ParameterError(f"Invalid synthesis: {synthesis!r}. Must be True or False.")
    if synthesis_budget is not None and not synthesis:
        raise ParameterError("A synthesis budget needs synthesis (synthesis=False draws "
                             "no group).")
    choice.synthesis_budget, choice.synthesis = synthesis_budget, synthesis
    cands, split_for = choice.measure_candidates(d)
    chosen = choice.race(cands)
    if chosen is None:  # the attacks or the batches refused them: the same, coarser
        chosen = choice.retry_coarser(cands)
    partition_costs(cands, split_for)  # of the candidates the choice was made among
    rungs = [] if chosen is None else choice.fallbacks(chosen, cands)
    for c in cands:
        c["passed"] = c is chosen
        c["attacked"] = "singling_out_upper" in c["risks"]
    release: dict[str, Any] = {
        "policy": choice.policy.to_dict(), "learned_grouping": Grouping(d["grouping"]).to_list(),
        "random_state": random_state if isinstance(random_state, int) else choice.seed,
        "rows_measured": choice.rows_measured,
        # the per-k table's groupings that merge learned groups, not measured above
        # CHOICE_MAX_ROWS reference rows (their remedies are at least as coarse)
        "coarser_not_measured": choice.skipped,
        "candidates": [{k: v for k, v in c.items() if k not in _UNRECORDED} for c in cands]}
    release.update(_declared_model(table, d["target"], choice.policy.attacker_model))
    if chosen is None:
        release.update(status="refused", recipe=None, chosen=None,
                       **refusal(release["candidates"], cands, choice.policy))
        artefact_dict = d
    else:
        recipe = chosen["recipe"] if not rungs else dataclasses.replace(
            chosen["recipe"], fallbacks=tuple(r["recipe"] for r in rungs),
            fallback_share=choice.policy.max_suppressed_share)
        release.update(status="chosen", recipe=recipe.to_dict(),
                       chosen=cands.index(chosen), reason=None,
                       fallbacks=[cands.index(r) for r in rungs],
                       utility=choice.release_utility(chosen))
        # the artefact records the released grouping (what the gate ties the file to);
        # the learned one stays in release["learned_grouping"] and the per-k table
        artefact_dict = {**d, "grouping": chosen["grouping"], "k": len(chosen["grouping"])}
    art = GroupingArtefact.from_result(artefact_dict, table, created_at=created_at)
    return dataclasses.replace(art, release=release)


def _declared_model(table: pd.DataFrame, target: str, model: Any) -> dict[str, Any]:
    """The release record's ``attacker_model`` and ``singling_out_columns`` (the columns
    the model leaves unknown that single people out, each also logged as a warning);
    nothing with no declaration, so such records stay as they were."""
    from astrid_airflow.release import singling_out_columns

    if not model.declared:
        return {}
    flagged = singling_out_columns(table, model, target)
    for f in flagged:
        logging.getLogger(__name__).warning(
            "Column %r is declared %s but singles people out: %.0f%% of the rows are "
            "unique on it (%.0f%% with the quasi-identifiers); an attacker who knows it "
            "can find them. Declare it a quasi-identifier or an identifier if it is "
            "known.", f["column"], f["role"], 100 * f["unique_share"],
            100 * f["unique_share_with_known"])
    return {"attacker_model": model.to_dict(), "singling_out_columns": flagged}


@dataclasses.dataclass
class _Choice:
    """What every candidate of one choice is measured with: the same rows, utility
    splits, bootstrap batches and attack seed (comparable figures)."""

    table: pd.DataFrame  # the recipe is fitted on every reference row
    rows_measured: int  # attacked on (a stratified subsample past CHOICE_MAX_ROWS)
    target: str
    policy: Any
    classifier: Any
    seed: int  # the choice's own (recorded when random_state was not an int)
    util_seed: int
    attack_seed: int
    work_rows: Any  # positions of those rows in ``table`` (None: every row)
    repeats: int  # utility splits, as the gate will judge the release
    steps: Any
    # group fits on ``table``, shared by the candidates (most groups recur in each)
    group_fits: dict = dataclasses.field(default_factory=dict)
    # the same on each utility split's training part (keyed by its rows), and the
    # original's classifier per split: what every candidate's utility measure repeats
    split_fits: dict = dataclasses.field(default_factory=dict)
    original_hits: dict = dataclasses.field(default_factory=dict)
    # each group's remedied columns on each split's parts (release._utility.DomainMemo)
    domains: Any = dataclasses.field(default_factory=_domain_memo)
    skipped: list = dataclasses.field(default_factory=list)  # groupings not measured
    # the reference's rows repeating an earlier one: one person, as the shuffle counts
    repeated: Any = None
    synthesis_seed: Any = None  # the synthesised groups' models and draws
    synthesis_budget: Any = None  # (epsilon, delta) of the synthesised groups, or None
    synthesis: bool = True  # whether candidates may synthesise groups

    @classmethod
    def start(cls, table: pd.DataFrame, d: dict[str, Any], policy: Any,
              random_state: object, classifier: Any, steps: Any) -> _Choice:
        from astrid_airflow._validation import check_seed_sequence
        from astrid_airflow.engine import pandas_class_codes
        from astrid_airflow.release import (
            classifier_preset,
            repeated_rows,
            stratified_subsample,
        )

        target = d["target"]
        # an int seed is used as given; anything else is drawn once and recorded
        seed = random_state if isinstance(random_state, int) else int(
            check_seed_sequence(random_state).generate_state(1)[0] >> 1)
        # a fourth stream for the synthesis: spawn keeps the first three as they were
        s_sub, s_util, s_attack, s_synth = check_seed_sequence(seed).spawn(4)
        rows = None
        if len(table) > CHOICE_MAX_ROWS:
            codes = pandas_class_codes(table[target], target)
            rows = stratified_subsample(codes, CHOICE_MAX_ROWS, s_sub)
        measured = len(table) if rows is None else len(rows)
        # as the gate: the policy's classifier, else the preset the grouping was learned
        classifier = classifier if classifier is not None else policy.classifier
        if classifier is None:
            classifier = classifier_preset(None, type("R", (), {"classifier":
                                                                d.get("classifier")})())
        return cls(table=table, rows_measured=measured, target=target, policy=policy,
                   classifier=classifier, seed=seed,
                   util_seed=int(s_util.generate_state(1)[0] >> 1),
                   attack_seed=int(s_attack.generate_state(1)[0] >> 1),
                   work_rows=rows, repeated=repeated_rows(table), synthesis_seed=s_synth,
                   repeats=policy.utility_repeats_for(measured), steps=steps)

    def attacked(self, c: dict[str, Any], grouping: Grouping
                 ) -> tuple[dict[str, Any], list[str]]:
        """The gate's attacks on ``c``'s release domain; where its recipe synthesises
        columns, aimed at the measured rows' own values of them."""
        recipe = c["recipe"]
        drawn = sorted(recipe.synthesised_columns) if recipe is not None else []
        real = {}
        if drawn:
            rows = self.table[drawn]
            real["real"] = rows if self.work_rows is None else \
                rows.iloc[self.work_rows].reset_index(drop=True)
        return attack_checks(c["remedied"], grouping, self.target, self.policy,
                             self.attack_seed, **real)

    def fit(self, rows: pd.DataFrame, grouping: Grouping, method: str,
            max_bins: int | None, key: Any = None, batch_factor: int = BATCH_FACTOR
            ) -> tuple[Any, Any]:
        """The recipe (and its report) of a candidate, fitted on ``rows`` (``key``: the
        memo's name for them, else which reference rows they are).

        What the fit may leave exposed on the reference table: local suppression
        removes it from every batch, and the shuffle refuses a batch over
        max_suppressed_share whatever the per-group thresholds say (they count
        published rows: 0 by construction), so that budget, and only it, bounds the fit.
        """
        from ._fit_recipe import fit_recipe

        budget = self.policy.max_suppressed_share
        return fit_recipe(rows, target=self.target, grouping=grouping,
                          k=self.policy.disclosure_k, max_share_below_k=budget,
                          max_class_disclosure_share=budget, method=method,
                          max_class_from_one_column_risk=self.policy.
                          max_class_from_one_column_risk, max_bins=max_bins,
                          batch_factor=batch_factor,
                          attacker_model=self.policy.attacker_model,
                          random_state=self.synthesis_seed,
                          synthesis_budget=self.synthesis_budget,
                          _fits=self.group_fits if rows is self.table else
                          self.split_fits.setdefault(key or _rows_key(rows), {}))

    def evaluate(self, label: str, grouping: Grouping, method: str,
                 max_bins: int | None = None, batch_factor: int = BATCH_FACTOR,
                 complete: bool = False) -> dict[str, Any]:
        """A candidate fitted (for ``batch_factor`` times k rows per published cell),
        put through the checks before the attacks, and measured (the same utility
        splits for all: comparable figures): on the policy's fewest splits, the rest
        left to the race (``._choice_race``) unless ``complete``."""
        from astrid_airflow.release import release_domain

        policy, target = self.policy, self.target
        recipe, report = self.fit(self.table, grouping, method, max_bins,
                                  batch_factor=batch_factor)
        # measured on every reference row: suppression at k depends on the counts,
        # which a sample of a large table divides; attacked on the measured rows
        remedied, suppression = release_domain(self.table, recipe, target, grouping,
                                               repeated=self.repeated)
        risks, failed = cheap_checks(remedied, grouping, target, policy, suppression,
                                     recipe)
        if self.work_rows is not None:
            remedied = remedied.iloc[self.work_rows].reset_index(drop=True)
        # a new batch has its own counts: the recipe must keep the suppression of
        # batches like it (bootstrap resamples) within the budget too, but for at most
        # BATCH_REFUSAL_RATE of them; the calibrated step comes before the attacks
        # (keeps_new_batches). Only while the candidate may still be released or retried
        # coarser (_retry_order ranks by its batches): one another check refused is
        # settled, its batches unmeasured (the frontier says so), as are the attacks
        settled = bool(set(failed) - {"suppression"})
        if not settled:
            risks.update(batch_suppression(
                self.table, recipe, lambda rows, key: self.fit(
                    rows, grouping, method, max_bins, key, batch_factor)[0],
                grouping, target, policy.max_suppressed_share))
            if risks["batch_suppressed_share"] > policy.max_suppressed_share and \
                    "suppression" not in failed:
                failed = [*failed, "suppression"]

        def refit(train: pd.DataFrame) -> Any:
            return self.fit(train, grouping, method, max_bins, batch_factor=batch_factor)[0]

        c = {"label": label, "grouping": grouping.to_list(), "method": method,
             "max_bins": max_bins, "batch_factor": batch_factor, "recipe": recipe,
             "remedies": report, "risks": risks, "failed": failed, "remedied": remedied,
             "refit": refit}
        # a candidate that may be released is scored out of sample, as a new batch
        # meets its recipe: refitted on each split's training part (in sample is
        # optimistic); one already refused by a privacy check only informs the report,
        # in sample (the refits cost most of the choice), on the policy's fewest splits
        # (the first of the same), completed only where its accuracy is to rank it among
        # the coarser retries' bases (retry_bases)
        fewest = min(self.repeats, policy.utility_repeats)
        self.score(c, self.repeats if not failed else fewest,
                   upto=None if complete else fewest)
        return c

    def score(self, c: dict[str, Any], n_repeats: int, upto: int | None = None,
              refuse_above: float | None = None) -> bool:
        """``c``'s accuracies on the first ``n_repeats`` utility splits, or on the first
        ``upto`` of them for now (the splits scored are kept: a later call continues).
        Scoring stops at a checkpoint once the drop is certainly over ``refuse_above``
        (default the policy's bar; ``utility_splits``: the splits scored). Once every
        planned split is scored, or stopped at the bar, a drop over the bar fails
        ``utility``; stopped below the bar (a rival's drop), it is left unjudged.
        Returns whether scoring stopped early."""
        from astrid_airflow.release import (
            ProtectsNothingWarning,
            splits_certainly_above,
            surrogate_utility,
        )

        failed = [f for f in c["failed"] if f != "utility"]
        scored = "in sample" if failed else "out of sample"
        if c.get("_splits_scored") != scored:  # splits of the other kind are not reused
            c["_splits"], c["_splits_scored"] = [], scored
        bar = self.policy.max_accuracy_drop
        threshold = bar if refuse_above is None else min(bar, refuse_above)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ProtectsNothingWarning)
            u = surrogate_utility(self.table, Grouping(c["grouping"]), target=self.target,
                                  max_fit_rows=CHOICE_MAX_ROWS,
                                  classifier=self.classifier, random_state=self.util_seed,
                                  n_repeats=n_repeats, recipe=c["recipe"],
                                  recipe_fitter=None if failed else c["refit"],
                                  refuse_above=threshold,
                                  _original_hits=self.original_hits,
                                  _domains=self.domains, _scored=c["_splits"], _upto=upto)
        drop = u.accuracy_original - u.accuracy_surrogate
        stopped = u.n_repeats < (n_repeats if upto is None else min(upto, n_repeats))
        # stopped by a rival's drop: judged only where it is certainly over the bar too
        judged = (not stopped and u.n_repeats == n_repeats) or (stopped and (
            threshold == bar or splits_certainly_above(c["_splits"], n_repeats, bar)))
        c.update(failed=[*failed, "utility"] if judged and drop > bar
                 else failed, accuracy_original=u.accuracy_original,
                 accuracy_surrogate=u.accuracy_surrogate, accuracy_drop=drop,
                 accuracy_drop_se=u.difference_se,
                 utility_scored="in sample" if failed else "out of sample",
                 utility_splits=u.n_repeats, _planned_splits=n_repeats)
        return stopped

    def measure_candidates(self, d: dict[str, Any]
                           ) -> tuple[list[dict[str, Any]], dict[str, Grouping]]:
        """Every candidate measured: the per-k table's groupings, and for each with
        unsafe multi-column groups, those groups microaggregated, partitioned, split
        along the table and split. Returns the candidates and each partitioned one's
        split alternative (by label)."""
        attrs = [c for c in self.table.columns if c != self.target]
        # above CHOICE_MAX_ROWS each coarser grouping costs minutes of fits on every
        # reference row and loses more to its remedies than the learned grouping
        # (docs/performance.md): not measured there
        queue, self.skipped = candidate_groupings(d, attrs,
                                          coarser=len(self.table) <= CHOICE_MAX_ROWS)
        # the table's groupings, coarsest first: where a failing group is split
        finer = sorted({Grouping(r["grouping"]) for r in d.get("table") or []
                        if r.get("grouping")}, key=lambda g: (g.k, g.to_list()))
        mdav_ok = len(self.table) <= MDAV_MAX_ROWS
        spf = (d.get("estimate") or {}).get("seconds_per_fit")
        sampled = (d.get("sample") or {}).get("rows")
        self.steps.plan(len(queue) * (2 if mdav_ok else 1), None if spf is None else
                        candidate_seconds(len(self.table), self.policy, spf, sampled))
        cands: list[dict[str, Any]] = []
        done: set = set()
        split_for: dict[str, Grouping] = {}
        i = 0
        while i < len(queue):
            label, grouping = queue[i]
            i += 1
            method = "mdav" if label.endswith("MDAV") else "partition" \
                if label.endswith(_PARTITION) else "synthesise" \
                if label.endswith(_SYNTHESISED) else "bins"
            if (grouping, method) in done:
                continue
            done.add((grouping, method))
            if method == "bins" and mdav_ok and any(len(g) > 1 for g in grouping.groups):
                # microaggregation within class of the same grouping's multi-column groups
                queue.append((f"{label}, MDAV", grouping))
            with self.steps.step(f"measuring {label}", queued=len(queue) - i):
                c = self.evaluate(label, grouping, method)
            failing = [tuple(g["columns"]) for g in c["remedies"] if not g["passed"]
                       and len(g["columns"]) > 1]
            coarsened = [g for g in c["remedies"] if len(g["columns"]) > 1
                         and (not g["passed"] or g["remedy"] != "unchanged")]
            if coarsened and method == "bins" and self.synthesis:
                # the groups the bins fail or coarsen, drawn from their class's model
                queue.append((then(label, _SYNTHESISED), grouping))
            if failing and method == "bins":
                # the unsafe groups generalised together first, then split (the
                # interactions ASTRID found survive only the former)
                queue.append((then(label, _PARTITION), grouping))
                split_for[then(label, _PARTITION)] = split_unsafe(grouping, failing)
                along = split_along_table(grouping, failing, finer)
                if along is not None:
                    queue.append((then(label, "unsafe group(s) split along the per-k "
                                         "table"), along))
                queue.append((then(label, "unsafe group(s) split"),
                              split_unsafe(grouping, failing)))
            cands.append(c)
        return cands, split_for

    def race(self, batch: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The batch's most accurate candidate that passes every check (``._choice_race``):
        each open one completed on every split against the incumbent, and one more
        accurate checked on refitted batches and attacked."""
        return race(batch, self.complete, self.admit)

    def complete(self, c: dict[str, Any], incumbent: dict[str, Any] | None) -> bool:
        """``c`` scored on every split, stopped once its drop is certainly over the
        incumbent's (``outranked_by``: its label) or the policy's bar; whether it is
        still a contender (complete and within the bar)."""
        if c["utility_splits"] >= self.repeats:  # scored on every split already
            return "utility" not in c["failed"]
        rival = None if incumbent is None else incumbent["accuracy_drop"]
        with self.steps.step(f"scoring {c['label']} on every split"):
            stopped = self.score(c, self.repeats, refuse_above=rival)
        if stopped and "utility" not in c["failed"]:  # (a stop at the bar fails utility)
            c["outranked_by"] = incumbent["label"]
            return False
        return "utility" not in c["failed"]

    def admit(self, c: dict[str, Any]) -> bool:
        """The checks left after the utility: the calibrated batch check, then the
        attacks; whether ``c`` passed them (a failure is recorded in ``c``)."""
        if not self.keeps_new_batches(c):
            return False
        with self.steps.step(f"attacking {c['label']}"):
            risks, failed = self.attacked(c, Grouping(c["grouping"]))
        c["risks"].update(risks)
        c["failed"] = failed
        return not failed

    def keeps_new_batches(self, c: dict[str, Any]) -> bool:
        """The calibrated step of the batch check (``batch_suppression(refitted=True)``),
        on a candidate that passed every other check: its figures replace the first
        step's in ``c["risks"]``; one over the budget fails ``suppression``."""
        if not batch_plan(len(self.table), built_batches(c["recipe"]), refitted=True)[1]:
            return True
        grouping = Grouping(c["grouping"])
        with self.steps.step(f"checking {c['label']} on refitted batches"):
            found = batch_suppression(
                self.table, c["recipe"],
                lambda rows, key: self.fit(rows, grouping, c["method"], c["max_bins"],
                                           key, c["batch_factor"])[0],
                grouping, self.target, self.policy.max_suppressed_share, refitted=True)
        c["risks"].update(found)
        if found["batch_suppressed_share"] > self.policy.max_suppressed_share:
            c["failed"] = ["suppression"]
            return False
        return True

    def retry_coarser(self, cands: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The most accurate releases only the attacks or the suppression budget refused,
        with at most ``COARSER_BINS`` bins per numeric column in turn (the attacks
        combine all columns, so their risk falls with the detail; larger bins hold more
        rows, so a new batch's counts fall below k less often); the retries join
        ``cands``."""
        bases = self.retry_bases(cands)
        tried = {c["recipe"].to_json() for c in bases}
        for cap in COARSER_BINS:
            batch = []
            for c in bases:
                with self.steps.step(f"measuring {c['label']} with at most {cap} bins"):
                    retry = self.evaluate(then(c["label"], f"at most {cap} bins"),
                                          Grouping(c["grouping"]), "bins", cap)
                if retry["recipe"].to_json() not in tried:  # fewer bins than before
                    tried.add(retry["recipe"].to_json())
                    batch.append(retry)
            cands.extend(batch)
            chosen = self.race(batch)
            if chosen is not None:
                return chosen
        return None

    def retry_bases(self, cands: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The ``COARSER_RETRIES`` releases only the attacks or the suppression budget
        refused, by ``_retry_order`` of their scores on every split: those scored on the
        fewest splits are completed (the same splits, the first ones again) from the
        smallest batch excess up, until the bases are certain (a larger excess ranks
        after them whatever its accuracy); the others keep their fewest splits."""
        eligible = [c for c in cands if c["method"] == "bins" and c["failed"]
                    and set(c["failed"]) <= {*_ATTACKS, "suppression", "utility"}]
        found = 0
        for level in sorted({batch_excess(c["risks"]) for c in eligible}):
            if found >= COARSER_RETRIES:
                break
            for c in (c for c in eligible if batch_excess(c["risks"]) == level):
                if c["_planned_splits"] < self.repeats:
                    with self.steps.step(f"scoring {c['label']} on every split"):
                        self.score(c, self.repeats)
                found += "utility" not in c["failed"]
        return sorted((c for c in eligible if "utility" not in c["failed"]
                       and c["_planned_splits"] == self.repeats),
                      key=_retry_order)[:COARSER_RETRIES]

    def fallbacks(self, chosen: dict[str, Any], cands: list[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
        """The chosen release refitted with larger cells (``RUNG_FACTORS``), each
        measured and attacked as any candidate and joining ``cands``; those that pass
        every other check, finest first, are its recipe's fallbacks (``fallback_rung``).
        Their accuracy and intact rows (``_PER_BATCH``) are recorded, not required: a
        batch falls back only in the groups that need it, its shuffle keeps intact rows
        within the policy or refuses it, and the gate judges its accuracy. A refit equal
        to a finer rung is not kept; a step past the budget ends the list (the release
        is whole without fallbacks, its batches only refused more often)."""
        from astrid_airflow._errors import BudgetError

        if self.policy.max_suppressed_share >= 1:  # no budget to keep
            return []
        grouping = Grouping(chosen["grouping"])
        seen, rungs = {chosen["recipe"].to_json()}, []
        for factor in (f for f in RUNG_FACTORS if f > chosen["batch_factor"]):
            label = then(chosen["label"], f"fallback for {factor}k rows per cell")
            try:
                with self.steps.step(f"measuring {label}"):
                    c = self.evaluate(label, grouping, chosen["method"],
                                      chosen["max_bins"], factor, complete=True)
                if c["recipe"].to_json() in seen:
                    continue
                if set(c["failed"]) <= _PER_BATCH:
                    with self.steps.step(f"attacking {label}"):
                        risks, failed = self.attacked(c, grouping)
                    c["risks"].update(risks)
                    c["failed"] = [*c["failed"], *failed]
            except BudgetError:
                break
            seen.add(c["recipe"].to_json())
            ok = set(c["failed"]) <= _PER_BATCH
            c["fallback_rung"] = len(rungs) + 1 if ok else None
            cands.append(c)
            if ok:
                rungs.append(c)
        return rungs

    def release_utility(self, chosen: dict[str, Any]) -> dict[str, Any]:
        """The chosen release's accuracies: without remedies, with them, and without
        local suppression (the same splits: differences are the remedies' costs)."""
        from astrid_airflow.release import surrogate_utility

        grouping = Grouping(chosen["grouping"])
        common = {"target": self.target, "classifier": self.classifier,
                  "random_state": self.util_seed, "n_repeats": self.repeats,
                  "_original_hits": self.original_hits, "max_fit_rows": CHOICE_MAX_ROWS}
        with self.steps.step("utility of the raw release"):
            raw = surrogate_utility(self.table, grouping, remedies=False, **common)
        with self.steps.step("utility without local suppression"):
            kept = surrogate_utility(self.table, grouping, recipe_fitter=chosen["refit"],
                                     suppression=False, **common)
        remedied = chosen["accuracy_surrogate"]
        return {"accuracy_original": chosen["accuracy_original"],
                "accuracy_raw_release": raw.accuracy_surrogate,
                "accuracy_remedied_release": remedied,
                "remedy_cost": raw.accuracy_surrogate - remedied,
                "accuracy_unsuppressed_release": kept.accuracy_surrogate,
                "suppression_cost": kept.accuracy_surrogate - remedied,
                "accuracy_drop": chosen["accuracy_drop"],
                "accuracy_drop_se": chosen["accuracy_drop_se"],
                "scored": "out of sample: the recipe refitted on each split's "
                          "training part"}
