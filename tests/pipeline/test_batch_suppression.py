"""An honest new batch is refused by the suppression budget at most 1 % of the time.

The shuffle refuses a batch whose local suppression exceeds ``max_suppressed_share`` in
some group (issue 28). A batch's counts vary around the reference's, so the release
choice checks each candidate on bootstrap batches like the reference and keeps it only
when at most ``BATCH_REFUSAL_RATE`` of them exceed the budget.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow.pipeline._choice_checks import (
    BATCH_REFUSAL_RATE,
    _until_over,
    allowed_over,
    batch_suppressed_share,
)
from tests.gate.test_gate_privacy import needs_uci, uci

BUDGET = 0.05  # GatePolicy().max_suppressed_share


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=300))
def test_a_batch_share_within_the_budget_means_at_most_the_rate_of_batches_over_it(shares):
    """The invariant the choice's batch check rests on: when the statistic is within a
    budget, at most ``BATCH_REFUSAL_RATE`` of the bootstrap batches exceed it."""
    stat = batch_suppressed_share(shares)
    for budget in (BUDGET, stat):
        if stat <= budget:
            assert sum(x > budget for x in shares) <= BATCH_REFUSAL_RATE * len(shares)
    assert stat in shares


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.01, 0.04, 0.05, 0.06, 0.2]), min_size=1,
                max_size=300))
def test_a_batch_check_stopped_once_certain_reaches_the_full_checks_verdict(shares):
    """A built batch check draws its batches only until more than the rate's allowance
    exceed the budget: its verdict (figure over the budget) is the full check's, and a
    check that was not stopped has the full check's figure."""
    drawn = _until_over(iter(shares), BUDGET, allowed_over(len(shares)))
    assert drawn == shares[:len(drawn)]
    stopped = batch_suppressed_share(drawn, len(shares))
    full = batch_suppressed_share(shares)
    assert (stopped > BUDGET) == (full > BUDGET)
    if len(drawn) < len(shares):
        assert stopped > BUDGET and stopped <= full
    else:
        assert stopped == full


def _bootstrap(table, target: str, n: int, rng: np.random.Generator):
    """A batch of ``n`` rows drawn with replacement within class, in the table's class
    proportions: a new batch of the same population."""
    parts = [rng.choice(idx, round(n * idx.size / len(table)))
             for idx in table.groupby(target, observed=True).indices.values()]
    return table.iloc[np.sort(np.concatenate(parts))]


@needs_uci
def test_new_batches_of_the_chosen_release_stay_within_the_suppression_budget():
    """diabetes: the release chosen on one half, batches of the other half's size drawn
    from the whole table (seeds the choice never used). It fails on the code before
    (cells of 2k rows, three batches checked)."""
    from sklearn.model_selection import train_test_split

    from astrid_airflow import GatePolicy, Grouping, choose_release
    from astrid_airflow.release import release_domain

    table, target = uci.load("diabetes")
    ref, batch = train_test_split(table, test_size=0.5, stratify=table[target],
                                  random_state=0)
    ref = ref.reset_index(drop=True)
    learned = Grouping.parse("plas;pedi;insu;pres;mass;skin;age;preg")
    result = {"grouping": learned.to_list(), "k": learned.k, "target": target,
              "classifier": "svm", "scoring": "accuracy", "alpha": 0.05,
              "n_search": 100, "n_test": 250, "random_state": 0,
              "table": [{"k": 6, "grouping": Grouping.parse(
                  "plas;pedi;insu;pres;mass,skin;age,preg").to_list()}]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the bins' batches and fallbacks (a synthesised group suppresses nothing)
        art = choose_release(ref, result, random_state=0, policy=GatePolicy(),
                             created_at="2026-01-01T00:00:00Z", progress=False,
                             synthesis=False)
    if art.recipe is None:
        pytest.fail(f"the choice refused diabetes: {art.release['reason']}")
    chosen = art.release["candidates"][art.release["chosen"]]
    # the calibrated step ran on it: 10 refits, each judged on 100 batches
    assert (chosen["risks"]["batch_refits"], chosen["risks"]["batch_resamples"]) == \
        (10, 1000)
    assert chosen["risks"]["batch_over_budget"] <= BATCH_REFUSAL_RATE
    # its coarser fallbacks passed every privacy check of the choice, attacks included
    fallbacks = [art.release["candidates"][i] for i in art.release["fallbacks"]]
    assert len(fallbacks) == len(art.recipe.fallbacks) >= 1
    for rung, c in enumerate(fallbacks, 1):
        assert c["fallback_rung"] == rung and "singling_out_upper" in c["risks"]
        assert set(c["failed"]) <= {"utility", "intact_rows"}, c["failed"]
    rng = np.random.default_rng(2026)
    over = [release_domain(_bootstrap(table, target, len(batch), rng), art.recipe, target,
                           art.grouping)[1].to_dict()["max_suppressed_share"] > BUDGET
            for _ in range(200)]
    # 1 % expected; 6 of 200 or more has a chance below 2 % at a true rate of 1 %
    assert sum(over) <= 5, f"{sum(over)} of 200 new batches over the budget"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60))
def test_the_recorded_rate_bound_is_an_upper_bound(rates):
    """The rate's upper bound the calibrated step records (``batch_over_budget_upper``):
    never below the rates' mean, at most 1, and the mean itself only when the refits
    agree (or there is one)."""
    from astrid_airflow.pipeline._choice_checks import batch_rate_upper

    upper = batch_rate_upper(rates)
    assert np.mean(rates) - 1e-12 <= upper <= 1.0
    if len(rates) > 1 and np.std(rates) > 1e-9:
        assert upper > np.mean(rates)
    assert batch_rate_upper([rates[0]] * len(rates)) == pytest.approx(rates[0])


def test_a_refusal_by_the_batch_check_names_the_nearest_miss():
    """Among candidates failing as many checks, the refusal names the one nearest to the
    batch check, with the rate's recorded bound, not a more accurate one over the budget
    on 89 % of batches (credit-a at 0.07 with 40 refits named that one). It fails on the
    code before (accuracy alone)."""
    from astrid_airflow import GatePolicy
    from astrid_airflow.pipeline._choice_reasons import refusal_reason

    def cand(label, acc, over, upper):
        return {"label": label, "failed": ["suppression"], "accuracy_surrogate": acc,
                "accuracy_drop": 0.05, "risks": {
                    "suppressed_share": 0.0, "batch_over_budget": over,
                    "batch_over_budget_upper": upper,
                    "worst_suppressed_group": {"columns": ["a"]}}}

    why = refusal_reason([cand("far", 0.85, 0.89, 0.93), cand("near", 0.80, 0.009, 0.014),
                          {**cand("useless", 0.5, 0.0, 0.0), "failed": ["suppression", "utility"]}],
                         GatePolicy(max_accuracy_drop=0.07))
    assert "closest: near: " in why and "0.9% (95 % upper bound 1.4%)" in why, why
