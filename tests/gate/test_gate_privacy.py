"""The gate's disclosure checks (issue 16): per-group k-anonymity and class disclosure,
cross-group linkage, enforced by default; the leaky releases of the issue fail them,
naming the group or pair; a coarsened release with the true grouping passes. The
shadow attacks, which depend on the original, not on the surrogate judged, are computed
once per original and setting (``tests/gate/gate_work.py``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import (
    GatePolicy,
    GroupingArtefact,
    ParameterError,
    make_surrogate,
    make_synthetic,
    validate_surrogate,
)
from astrid_airflow.engine._grouping import Grouping
from astrid_airflow.gate._checks import (
    judge_group_disclosure,
    judge_linkage,
    linkage_values,
)
from astrid_airflow.gate._registry import EXPECTATIONS as REGISTERED
from astrid_airflow.gate._registry import SYNTHESIS_CHECKS
from astrid_airflow.gate._suite import build_suite
from astrid_airflow.release import AttackerModel, ReleaseRecipe
from tests.gate.gate_work import shared_gate_work  # noqa: F401 (the module fixture)

#: The checks of a suite whose release synthesises no group.
EXPECTATIONS = {k: v for k, v in REGISTERED.items() if k not in SYNTHESIS_CHECKS}

pytestmark = pytest.mark.usefixtures("shared_gate_work")


BELOW_K = "expect_surrogate_group_share_below_k_to_be_at_most"
CLASS_DISC = "expect_surrogate_group_class_disclosure_share_to_be_at_most"
LINKAGE = "expect_surrogate_cross_group_linkage_to_be_at_most_expected"
UNIQUE = "expect_surrogate_largest_group_unique_share_to_be_at_most"
INTACT = "expect_surrogate_intact_row_proportion_to_be_at_most"
# precomputed accuracies: these tests are about privacy, not the utility refit
SAME_ACCURACY = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_uci", ROOT / "benchmarks" / "uci.py")
uci = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(uci)
needs_uci = pytest.mark.skipif(not (uci.data_dir() / "vehicle.arff").exists(),
                               reason="UCI benchmark files not available "
                                      "(set ASTRID_UCI_DIR)")


def artefact_for(table: pd.DataFrame, groups, target: str = "class") -> GroupingArtefact:
    g = Grouping(groups) if not isinstance(groups, str) else Grouping.parse(groups)
    result = {"grouping": g.to_list(), "k": g.k, "table": [], "target": target,
              "classifier": "svm", "scoring": "accuracy", "alpha": 0.05, "n_search": 20,
              "n_test": 40, "random_state": 0}
    return GroupingArtefact.from_result(result, table, created_at="2026-01-01T00:00:00Z")


def outcome(result, name):
    (found,) = [e for e in result.expectations if e.name == name]
    return found


def shuffle_one_column(table: pd.DataFrame, column: str, target: str, seed: int
                       ) -> pd.DataFrame:
    """The original with one column permuted within class, every other column aligned."""
    rng = np.random.default_rng(seed)
    out = table.copy()
    for _, idx in table.groupby(target, sort=False).indices.items():
        out.loc[out.index[idx], column] = table[column].to_numpy()[rng.permutation(idx)]
    return out


@pytest.fixture(scope="module")
def synthetic():
    t = make_synthetic(500, random_state=0)
    return t, artefact_for(t, "a1,a2;a3;a4")


@pytest.fixture(scope="module")
def coarsened(synthetic):
    """The synthetic table with a1, a2, a3 rounded to their sign and a4 to one of two
    halves (2 levels each), its release under the true grouping, and that artefact.

    Only 32 distinct records: exact copies of a row count as one person, unless a
    declared identifier tells them apart, so the batch carries a row id ``person``."""
    t, art = synthetic
    c = t.assign(a1=np.sign(t["a1"]), a2=np.sign(t["a2"]), a3=np.sign(t["a3"]),
                 a4=(t["a4"] > 0.5).astype(float), person=np.arange(len(t)))
    recipe = ReleaseRecipe(k=5, steps=(), target="class",
                           attacker_model=AttackerModel(identifiers=("person",)))
    art = dataclasses.replace(art, release={"status": "given", "recipe": recipe.to_dict(),
                                            "policy": {"max_suppressed_share": 1.0}})
    return c, make_surrogate(c, art, random_state=1), art


@pytest.fixture(scope="module")
def vehicle():
    table, target = uci.load("vehicle")
    run = ROOT / "benchmarks" / "results" / "astrid_runs" / "adaptive_vehicle_svm_j1.json"
    grouping = json.loads(run.read_text())["result"]["grouping"]  # one group of 14
    return table, artefact_for(table, grouping, target)


# -------------------------------------------------------------- the releases

@needs_uci
def test_vehicle_learned_release_fails_naming_the_large_group(vehicle):
    table, art = vehicle
    s = make_surrogate(table, art, random_state=2)
    r = validate_surrogate(table, s, art, random_state=0, metrics=SAME_ACCURACY)
    assert not r.success and not r.category_success("privacy")
    assert r.category_success("integrity")
    large = max(art.grouping.groups, key=len)
    assert len(large) == 14
    for name in (BELOW_K, CLASS_DISC):
        o = outcome(r, name)
        assert not o.success and o.observed_value == 1.0
        assert tuple(o.details["group"]) == large  # named by its columns
        assert list(large) in o.details["failing_groups"]
    assert outcome(r, LINKAGE).success  # a genuine shuffle: groups independent


@needs_uci
def test_vehicle_one_column_shuffled_release_fails_linkage_naming_the_pair(vehicle):
    table, art = vehicle
    large = max(art.grouping.groups, key=len)
    column = max(large, key=lambda c: table[c].nunique())  # few rows stay intact
    s = shuffle_one_column(table, column, "class", seed=0)
    r = validate_surrogate(table, s, art, random_state=0, metrics=SAME_ACCURACY)
    link = outcome(r, LINKAGE)
    assert not link.success and link.observed_value > 0.5  # linked 1.0, expected ~0.3
    named = [tuple(map(tuple, p)) for p in link.details["failing_pairs"]]
    # every pair not involving the large group is still aligned row for row
    others = [g for g in art.grouping.groups if g != large]
    assert len(named) == len(others) * (len(others) - 1) // 2
    assert all(large not in p for p in named)


@needs_uci
def test_vehicle_original_fails_per_group_and_linkage(vehicle):
    table, art = vehicle
    r = validate_surrogate(table, table.copy(), art, random_state=0, metrics=SAME_ACCURACY)
    assert not outcome(r, BELOW_K).success and not outcome(r, CLASS_DISC).success
    link = outcome(r, LINKAGE)
    assert not link.success and link.details["n_failing_pairs"] == 10  # all 5*4/2 pairs
    assert link.details["linked_share"] == 1.0


def test_synthetic_one_column_shuffled_and_original_fail(synthetic):
    t, art = synthetic
    s = shuffle_one_column(t, "a4", "class", seed=0)
    r = validate_surrogate(t, s, art, random_state=0, metrics=SAME_ACCURACY,
                           policy=GatePolicy.raw_release_demo())
    link = outcome(r, LINKAGE)
    assert r.failed == [LINKAGE]  # the intact-row check alone misses it
    assert outcome(r, INTACT).observed_value < 0.01
    assert link.details["failing_pairs"] == [[["a1", "a2"], ["a3"]]]
    r = validate_surrogate(t, t.copy(), art, random_state=0, metrics=SAME_ACCURACY)
    assert {BELOW_K, CLASS_DISC, LINKAGE, UNIQUE, INTACT} <= set(r.failed)


def test_coarsened_release_with_the_true_grouping_passes_the_per_group_checks(coarsened):
    c, s, art = coarsened
    r = validate_surrogate(c, s, art, random_state=0, metrics=SAME_ACCURACY)
    for name in (BELOW_K, CLASS_DISC, UNIQUE, LINKAGE):
        assert outcome(r, name).success, outcome(r, name)
    groups = outcome(r, BELOW_K).details["groups"]
    assert [g["columns"] for g in groups] == art.grouping.to_list()
    assert min(g["k_min"] for g in groups) >= 5
    # few distinct records: most rows are intact, but under the declared model (the row
    # id an identifier) only the intact rows that disclose count, and none does
    intact = outcome(r, INTACT)
    assert intact.success and intact.details["intact_row_proportion_all_rows"] > 0.5


def test_raw_surrogate_fails_the_default_gate_and_passes_the_demo_policy(synthetic):
    t, art = synthetic
    s = make_surrogate(t, art, random_state=1)
    r = validate_surrogate(t, s, art, random_state=0, metrics=SAME_ACCURACY)
    # exact values, as published (the attack checks see the same raw-value leaks)
    assert set(r.failed) == {UNIQUE, BELOW_K, CLASS_DISC,
                             "expect_surrogate_singling_out_risk_to_be_at_most",
                             "expect_surrogate_inference_risk_to_be_at_most",
                             "expect_surrogate_class_from_one_column_risk_to_be_at_most"}
    demo = validate_surrogate(t, s, art, random_state=0, metrics=SAME_ACCURACY,
                              policy=GatePolicy.raw_release_demo())
    assert demo.success, demo.failed
    # the figures are still reported under the demo policy
    assert outcome(demo, CLASS_DISC).observed_value == 1.0


# --------------------------------------------------------------- policy and suite

def test_policy_fields_defaults_and_validation():
    p = GatePolicy()
    assert (p.disclosure_k, p.max_share_below_k, p.max_class_disclosure_share,
            p.max_linkage_excess, p.max_largest_group_unique_share,
            p.max_suppressed_share) == (5, 0.0, 0.0, 0.03, 0.05, 0.05)
    assert GatePolicy.from_json(p.to_json()) == p
    assert GatePolicy(disclosure_k=3.0).disclosure_k == 3  # templated params are floats
    with pytest.raises(ParameterError, match="disclosure_k"):
        GatePolicy(disclosure_k=0)
    with pytest.raises(ParameterError, match="disclosure_k"):
        GatePolicy(disclosure_k=2.5)
    with pytest.raises(ParameterError, match="max_linkage_excess"):
        GatePolicy(max_linkage_excess=2)
    demo = GatePolicy.raw_release_demo(max_intact=0.02)
    assert (demo.max_share_below_k, demo.max_class_disclosure_share,
            demo.max_largest_group_unique_share, demo.max_intact,
            demo.max_linkage_excess) == (1.0, 1.0, 1.0, 0.02, 0.03)
    assert p.parameters()["disclosure_k"] == 5


def test_suite_holds_the_privacy_expectations_with_parameters(synthetic):
    _, art = synthetic
    suite = build_suite(art, GatePolicy(disclosure_k=7))
    by_type = {e["type"]: e for e in suite["expectations"]}
    assert list(by_type) == list(EXPECTATIONS)
    assert by_type[BELOW_K]["kwargs"]["k"] == {"$PARAMETER": "disclosure_k"}
    assert by_type[CLASS_DISC]["kwargs"]["threshold"] == {
        "$PARAMETER": "max_class_disclosure_share"}
    assert by_type[LINKAGE]["meta"]["category"] == "privacy"
    assert suite["meta"]["astrid"]["policy"]["disclosure_k"] == 7


def test_k_is_applied_at_run_time(coarsened):
    c, s, art = coarsened
    loose = validate_surrogate(c, s, art, metrics=SAME_ACCURACY, random_state=0)
    strict = validate_surrogate(c, s, art, metrics=SAME_ACCURACY, random_state=0,
                                policy={"disclosure_k": 200})
    assert outcome(loose, BELOW_K).details["k"] == 5
    assert outcome(strict, BELOW_K).details["k"] == 200
    assert outcome(strict, BELOW_K).observed_value > outcome(loose, BELOW_K).observed_value
    assert not outcome(strict, BELOW_K).success
    # without the row id, the 32 records are 32 people: each cell is below k
    alone = dataclasses.replace(art, release=None)
    counted = validate_surrogate(c.drop(columns="person"), s, alone,
                                 metrics=SAME_ACCURACY, random_state=0)
    assert outcome(counted, BELOW_K).observed_value == 1.0


# ------------------------------------------------------------------------ judging

def test_judges_fail_when_nothing_can_be_measured_and_pass_one_group():
    assert judge_group_disclosure(None, "share_below_k", 0.05)[0] is False
    assert judge_linkage(None, 0.03)[0] is False
    assert judge_linkage([], 0.03)[:2] == (True, 0.0)
    t = pd.DataFrame({"a": [1, 2], "b": [3, 4], "y": [0, 1]})
    assert linkage_values(t, t.drop(columns="y"), "y", [["a"], ["b"]]) is None


def test_linkage_tolerance_grows_with_the_sd():
    pairs = [{"groups": [["a"], ["b"]], "linked_share": 0.5, "expected_linked_share": 0.4,
              "sd_linked_share": 0.02, "excess": 0.1, "n_rows": 100}]
    ok, observed, details = judge_linkage(pairs, 0.03)
    assert ok and observed == pytest.approx(0.1)
    assert details["tolerance"] == pytest.approx(0.12)  # 6 sd > 0.03
    pairs[0]["sd_linked_share"] = 0.01
    ok, _, details = judge_linkage(pairs, 0.03)
    assert not ok and details["failing_pairs"] == [[["a"], ["b"]]]


def test_data_docs_show_the_risk_per_group_and_the_linked_pairs(synthetic, tmp_path):
    t, art = synthetic
    s = shuffle_one_column(t, "a4", "class", seed=0)
    r = validate_surrogate(t, s, art, random_state=0, metrics=SAME_ACCURACY,
                           out_dir=tmp_path)
    page = open(r.data_docs, encoding="utf-8").read()
    assert "Disclosure per group" in page and "class disclosure share" in page
    for g in ("a1, a2", "a3", "a4"):
        assert f"<td>{g}</td>" in page
    assert 'class="bar over"' in page  # every group is above the 0.05 threshold
    assert "Pairs of groups still linked as in the original" in page
    assert "<td>a1, a2 + a3</td>" in page
