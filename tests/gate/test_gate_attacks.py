"""The gate's attack-based checks (issue 16; Giomi et al. 2023 on a shadow release):
upper 95 % bound vs threshold, enforced by default, naming the failing attack."""

from __future__ import annotations

import json

import numpy as np
import pytest

from astrid_airflow import GatePolicy, make_surrogate, make_synthetic, validate_surrogate
from astrid_airflow.gate._checks import judge_attack
from astrid_airflow.gate._registry import EXPECTATIONS as REGISTERED
from astrid_airflow.gate._registry import SYNTHESIS_CHECKS
from astrid_airflow.gate._suite import build_suite
from astrid_airflow.privacy._risk import SHADOW_RELEASES
from tests.gate.test_gate_privacy import ROOT, artefact_for, needs_uci, outcome, uci

#: The checks of a suite whose release synthesises no group.
EXPECTATIONS = {k: v for k, v in REGISTERED.items() if k not in SYNTHESIS_CHECKS}

SINGLING = "expect_surrogate_singling_out_risk_to_be_at_most"
LINKABILITY = "expect_surrogate_linkability_risk_to_be_at_most"
INFERENCE = "expect_surrogate_inference_risk_to_be_at_most"
ATTACKS = (SINGLING, LINKABILITY, INFERENCE)
SAME_ACCURACY = {"accuracy_original": 0.9, "accuracy_surrogate": 0.9}


@pytest.fixture(scope="module")
def synthetic():
    t = make_synthetic(500, random_state=0)
    return t, artefact_for(t, "a1,a2;a3;a4")


@needs_uci
def test_vehicle_learned_release_fails_the_attack_checks_naming_them():
    table, target = uci.load("vehicle")
    run = ROOT / "benchmarks" / "results" / "astrid_runs" / "adaptive_vehicle_svm_j1.json"
    art = artefact_for(table, json.loads(run.read_text())["result"]["grouping"], target)
    s = make_surrogate(table, art, random_state=2)
    r = validate_surrogate(table, s, art, random_state=0, metrics=SAME_ACCURACY)
    for name in ATTACKS:
        o = outcome(r, name)
        assert not o.success and o.category == "privacy"
        assert o.details["control"] == "shadow" and o.details["failing_attacks"]
        assert o.observed_value == o.details["ci"][1] > o.threshold
    link = outcome(r, LINKABILITY)
    assert link.details["attack"].startswith("linkability")
    assert link.details["ci"][0] > 0.2  # the 14-column group links people
    # the raw-release demo policy reports them only (the figures are still there)
    demo = validate_surrogate(table, s, art, random_state=0, metrics=SAME_ACCURACY,
                              policy=GatePolicy.raw_release_demo())
    for name in ATTACKS:
        assert outcome(demo, name).success
    assert outcome(demo, LINKABILITY).observed_value == link.observed_value


def test_coarsened_release_with_the_true_grouping_passes_the_attack_checks(synthetic):
    t, art = synthetic
    c = t.assign(a1=np.sign(t["a1"]), a2=np.sign(t["a2"]), a3=np.sign(t["a3"]),
                 a4=(t["a4"] > 0.5).astype(float))
    s = make_surrogate(c, art, random_state=1)
    r = validate_surrogate(c, s, art, random_state=0, metrics=SAME_ACCURACY)
    for name in ATTACKS:
        o = outcome(r, name)
        assert o.success, o
        # 500 attacks on each of the shadow releases, pooled
        assert o.observed_value <= o.threshold \
            and o.details["n_attacks"] == 500 * SHADOW_RELEASES
    again = validate_surrogate(c, s, art, random_state=0, metrics=SAME_ACCURACY)
    assert [outcome(again, n).details for n in ATTACKS] == \
        [outcome(r, n).details for n in ATTACKS]  # reproducible for a seed


def test_raw_release_fails_on_raw_values_and_passes_linkability(synthetic):
    t, art = synthetic
    s = make_surrogate(t, art, random_state=1)
    r = validate_surrogate(t, s, art, random_state=0, metrics=SAME_ACCURACY)
    assert not outcome(r, SINGLING).success and not outcome(r, INFERENCE).success
    assert outcome(r, LINKABILITY).success  # a 2-column group links nobody


def test_policy_and_suite_carry_the_attack_thresholds(synthetic):
    _, art = synthetic
    p = GatePolicy()
    assert (p.attack_n, p.max_singling_out_risk, p.max_linkability_risk,
            p.max_inference_risk) == (500, 0.2, 0.1, 0.5)
    assert GatePolicy(attack_n=200.0).attack_n == 200
    demo = GatePolicy.raw_release_demo()
    assert (demo.max_singling_out_risk, demo.max_inference_risk,
            demo.max_linkability_risk) == (1.0, 1.0, 1.0)
    suite = build_suite(art, GatePolicy(attack_n=300))
    by_type = {e["type"]: e for e in suite["expectations"]}
    assert list(by_type) == list(EXPECTATIONS)
    for name in ATTACKS:
        assert by_type[name]["kwargs"]["n"] == {"$PARAMETER": "attack_n"}
        assert by_type[name]["meta"]["category"] == "privacy"
    assert by_type[LINKABILITY]["kwargs"]["threshold"] == {
        "$PARAMETER": "max_linkability_risk"}
    assert suite["meta"]["astrid"]["policy"]["attack_n"] == 300


def test_judge_attack():
    assert judge_attack(None, "linkability", 0.1)[0] is False
    assert "cannot be measured" in judge_attack(None, "linkability", 0.1)[2]["note"]
    values = {"control": "shadow", "linkability": [
        {"attack": "linkability", "variant": "cut_largest_group", "risk": 0.3,
         "ci": [0.2, 0.4], "n_attacks": 200},
        {"attack": "linkability", "variant": "random_split", "risk": 0.0,
         "ci": [0.0, 0.02], "n_attacks": 200}],
        "inference": [{"attack": "inference", "secret": "y", "aux_columns": ["a"],
                       "risk": 0.1, "ci": [0.0, 0.3], "n_attacks": 200}]}
    ok, observed, details = judge_attack(values, "linkability", 0.1)
    assert not ok and observed == 0.4
    assert details["failing_attacks"] == ["linkability, cut_largest_group"]
    ok, observed, details = judge_attack(values, "inference", 0.3)
    assert ok and observed == 0.3 and details["attack"] == "inference of y from a"


@pytest.mark.parametrize("flag, value, message", [
    ("--attack-n", "0", "attack_n"),
    ("--max-inference-risk", "1.5", "max_inference_risk"),
    ("--max-class-from-one-column-risk", "1.5", "max_class_from_one_column_risk"),
    ("--max-linkability-risk", "x", "invalid float"),
])
def test_validate_flags_for_the_attack_checks_exit_2_on_bad_values(
        synthetic, tmp_path, capsys, flag, value, message):
    from astrid_airflow import ArtefactStore
    from astrid_airflow.cli import main

    t, art = synthetic
    ArtefactStore(tmp_path / "store").save("synth", art)
    t.to_csv(tmp_path / "original.csv", index=False)
    try:
        code = main(["validate", "--original", str(tmp_path / "original.csv"),
                     "--surrogate", str(tmp_path / "original.csv"),
                     "--artefact", f"{tmp_path / 'store'}/synth@latest", flag, value])
    except SystemExit as exc:  # argparse rejects a non-number itself
        code = exc.code
    assert code == 2 and message in capsys.readouterr().err


def test_class_from_one_column_check_names_the_column_and_fails_safe():
    from astrid_airflow.gate._checks import judge_class_from_column

    risks = [{"attack": "inference", "secret": "y", "aux_columns": ["a"], "risk": 0.05,
              "ci": [0.04, 0.06], "n_attacks": 300},
             {"attack": "inference", "secret": "y", "aux_columns": ["b"], "risk": 0.18,
              "ci": [0.15, 0.21], "n_attacks": 300}]
    ok, observed, details = judge_class_from_column(risks, 0.2)
    assert not ok and observed == 0.21 and details["column"] == "b"
    assert details["failing_columns"] == ["b"]
    assert judge_class_from_column(risks, 0.25)[0]
    assert judge_class_from_column(None, 1.0)[0] is False  # not measured: fails safe
