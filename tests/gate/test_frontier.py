"""The frontier of the release choice (issue 49): every candidate measured as a
FrontierPoint, a refusal's nearest candidates with the single policy change that would
accept them, ``astrid learn --json``'s ``frontier`` and the report's frontier plot."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from astrid_airflow import GatePolicy
from astrid_airflow.gate import frontier_points, nearest_candidates, nearest_text

_ATTACKED = {"singling_out_upper": 0.05, "singling_out_gate_bound": 0.06,
             "linkability_upper": 0.12, "linkability_gate_bound": 0.13,
             "inference_upper": 0.3, "inference_gate_bound": 0.31}


def _cand(label, drop, failed, **risks):
    base = {"share_below_k": 0.0, "class_disclosure_share": 0.0, "suppressed_share": 0.01,
            "batch_suppressed_share": 0.02, "largest_group_unique_share": 0.01,
            "intact_row_proportion_after_swaps": 0.004,
            "expected_intact_row_proportion": 0.02, "class_from_one_column_upper": 0.1}
    return {"label": label, "grouping": [["a", "b"], ["c"]], "method": "bins",
            "max_bins": None, "remedies": [{"columns": ["a", "b"], "remedy": "4 bins"},
                                           {"columns": ["c"], "remedy": "unchanged"}],
            "risks": {**base, **risks}, "failed": failed, "accuracy_drop": drop,
            "accuracy_drop_se": 0.004, "utility_scored": "out of sample"}


def _candidates():
    return [_cand("chosen", 0.015, [], **{**_ATTACKED, "linkability_gate_bound": 0.08}),
            _cand("lossy", 0.031, ["utility"], **{**_ATTACKED, "linkability_gate_bound": 0.08}),
            _cand("linkable", 0.005, ["linkability"], **_ATTACKED),
            _cand("leaky", 0.001, ["share_below_k", "intact_rows"], share_below_k=0.04,
                  intact_row_proportion_after_swaps=0.08)]


def test_every_candidate_is_a_typed_frontier_point_with_its_worst_margin():
    policy = GatePolicy()
    points = frontier_points(_candidates(), policy, 0)
    assert [p.label for p in points] == ["chosen", "lossy", "linkable", "leaky"]
    chosen, lossy, linkable, leaky = points
    assert chosen.chosen and chosen.passed and not lossy.chosen and not lossy.passed
    # every privacy figure measured, the attacks on the gate's bound
    assert set(chosen.privacy) == {"share_below_k", "class_disclosure", "suppression",
                                   "largest_group_unique_share", "intact_rows",
                                   "class_from_one_column", "singling_out", "linkability",
                                   "inference"}
    assert chosen.privacy["suppression"] == 0.02  # the batches' share, the larger
    # worst margin: the smallest threshold minus figure (intact rows 0.01 - 0.004);
    # the zero bars of the k-anonymity checks, met exactly, count only failing
    assert chosen.worst_check == "intact_rows" and chosen.worst_margin == pytest.approx(0.006)
    assert leaky.worst_check == "intact_rows" and leaky.worst_margin == pytest.approx(-0.07)
    assert leaky.privacy["share_below_k"] == 0.04
    assert linkable.worst_check == "linkability" and linkable.worst_margin == \
        pytest.approx(0.1 - 0.13)
    assert leaky.unmeasured == ("singling_out", "linkability", "inference")
    assert "{a, b}: 4 bins" in chosen.recipe and "{c}" not in chosen.recipe
    d = chosen.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert isinstance(d["accuracy_drop"], float) and isinstance(d["accuracy_drop_se"], float)
    assert isinstance(d["worst_margin"], float) and d["grouping"] == [["a", "b"], ["c"]]
    assert isinstance(d["suppressed_share"], float) and d["failed"] == []
    # the record's policy dict judges the same as the policy
    assert [p.to_dict() for p in frontier_points(_candidates(), policy.to_dict(), 0)] == \
        [p.to_dict() for p in points]


def test_nearest_candidates_give_the_single_change_and_it_accepts_them():
    policy = GatePolicy()
    cands = _candidates()[1:]
    nearest = nearest_candidates(frontier_points(cands, policy, None), cands, policy)
    # fewest failed checks, then the least shortfall over the bars (0.011 < 0.03)
    assert [e["label"] for e in nearest] == ["lossy", "linkable", "leaky"]
    by = {e["label"]: e for e in nearest}
    assert by["lossy"]["change"] == {"field": "max_accuracy_drop", "value": 0.031}
    assert by["linkable"]["change"] == {"field": "max_linkability_risk", "value": 0.13}
    # two checks fail: no single change, every miss listed
    assert by["leaky"]["change"] is None
    assert [m["check"] for m in by["leaky"]["misses"]] == ["share_below_k", "intact_rows"]
    text = nearest_text(nearest)
    assert "lossy: accepted with max_accuracy_drop 0.031" in text
    assert "leaky: misses share_below_k 0.040 > 0.0, intact_rows 0.080 > 0.01" in text
    # applying the change to the policy: the candidate passes every check measured
    for e in nearest[:2]:
        changed = policy.with_overrides(**{e["change"]["field"]: e["change"]["value"]})
        assert all(m >= 0 for m in _margins(cands[e["index"]], changed).values())
        assert any(m < 0 for m in _margins(cands[e["index"]], policy).values())


def _margins(c, policy):
    from astrid_airflow.gate._frontier import (
        PRIVACY_CHECKS,
        UTILITY_CHECK,
        check_figure,
        privacy_margin,
    )

    checks = {**{k: f for k, (_, f) in PRIVACY_CHECKS.items()}, UTILITY_CHECK[0]:
              UTILITY_CHECK[1]}
    return {k: privacy_margin(check_figure(c, k), getattr(policy, f))
            for k, f in checks.items() if check_figure(c, k) is not None}


def _result(groups, target="y"):
    table = [{"k": len(g), "grouping": g} for g in groups]
    return {"grouping": groups[0], "k": len(groups[0]), "table": table, "target": target,
            "classifier": {"preset": "nb"}, "scoring": "accuracy", "alpha": 0.05,
            "n_search": 20, "n_test": 40, "random_state": 0}


@pytest.mark.filterwarnings("ignore::astrid_airflow.release._surrogate.ProtectsNothingWarning")
def test_a_refusal_names_the_nearest_change_and_the_choice_accepts_it_with_it():
    from astrid_airflow import choose_release

    rng = np.random.default_rng(0)
    n = 600
    y = rng.integers(0, 2, n)
    t = pd.DataFrame({"a": rng.normal(y, 1.0).round(3), "b": rng.normal(size=n).round(3),
                      "c": rng.integers(0, 1000, n), "y": y})
    result = _result([[["a", "b"], ["c"]], [["a"], ["b"], ["c"]]])
    strict = GatePolicy(max_accuracy_drop=0.0, max_linkability_risk=0.0, attack_n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = choose_release(t, result, policy=strict, random_state=1).release
    assert rel["status"] == "refused"
    assert 2 <= len(rel["nearest"]) <= 3 and "nearest candidates: " in rel["reason"]
    first = rel["nearest"][0]
    assert first["change"] is not None and first["unmeasured"] == []
    from astrid_airflow.gate._frontier import policy_change_text

    assert f"accepted with {policy_change_text(first['change'])}" in rel["reason"]
    # the strongest check: the policy with that one change accepts that candidate
    changed = strict.with_overrides(**{first["change"]["field"]: first["change"]["value"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = choose_release(t, result, policy=changed, random_state=1).release
    assert again["status"] == "chosen", again["reason"]
    assert again["candidates"][again["chosen"]]["label"] == first["label"]


@pytest.mark.filterwarnings("ignore::astrid_airflow.release._surrogate.ProtectsNothingWarning")
def test_cli_learn_json_carries_the_frontier_and_the_report_plots_it(tmp_path, capsys):
    from astrid_airflow import load_artefact, write_report
    from astrid_airflow.cli import main

    rng = np.random.default_rng(2)
    n = 500
    y = rng.integers(0, 2, n)
    t = pd.DataFrame({"a": rng.normal(y, 1.0).round(3), "b": rng.normal(size=n).round(3),
                      "c": rng.integers(0, 100, n), "y": y})
    src = tmp_path / "t.csv"
    t.to_csv(src, index=False)
    policy = tmp_path / "policy.json"
    policy.write_text(GatePolicy(max_accuracy_drop=0.1, attack_n=200).to_json())
    assert main(["learn", str(src), "--target", "y", "--classifier", "nb", "--r-search",
                 "5", "--r-test", "10", "--seed", "0", "--quiet", "--store",
                 str(tmp_path / "s"), "--name", "r", "--policy", str(policy),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    art = load_artefact(str(tmp_path / "s" / "r")).artefact
    cands = art.release["candidates"]
    assert out["release"]["status"] == "chosen" and out["nearest"] is None
    assert [p["label"] for p in out["frontier"]] == [c["label"] for c in cands]
    assert [p["index"] for p in out["frontier"] if p["chosen"]] == [art.release["chosen"]]
    for p in out["frontier"]:
        assert isinstance(p["accuracy_drop"], float) and isinstance(p["privacy"], dict)
        assert isinstance(p["worst_margin"], float) and isinstance(p["passed"], bool)
        assert isinstance(p["recipe"], str) and isinstance(p["suppressed_share"], float)
    assert out["frontier"][art.release["chosen"]]["passed"]
    written = write_report(art, tmp_path / "report")
    page = open(written.index, encoding="utf-8").read()
    assert "frontier.png" in written.files and "Privacy-utility frontier" in page


@pytest.mark.filterwarnings("ignore::astrid_airflow.release._surrogate.ProtectsNothingWarning")
def test_a_settled_candidate_draws_no_batches_and_is_scored_on_the_fewest_splits(monkeypatch):
    """A candidate a check other than the suppression budget refused can be neither
    released nor retried coarser: the choice draws no batches for it (the frontier lists
    them unmeasured) and averages its in-sample accuracy over the policy's fewest splits.
    Before, every candidate drew 100 batches and 14 splits at this size."""
    import astrid_airflow.release as release
    from astrid_airflow import choose_release

    real, repeats = release.surrogate_utility, []

    def spy(*args, **kw):
        repeats.append(kw["n_repeats"])
        return real(*args, **kw)

    monkeypatch.setattr(release, "surrogate_utility", spy)
    rng = np.random.default_rng(0)
    n = 600
    y = rng.integers(0, 2, n)
    t = pd.DataFrame({"a": rng.normal(y, 1.0).round(3), "b": rng.normal(size=n).round(3),
                      "c": rng.integers(0, 1000, n), "y": y})
    # the class from any one column is always above a bar of 0: every candidate settled
    policy = GatePolicy(max_class_from_one_column_risk=0.0, attack_n=200)
    # (no synthesis: a synthesised column is no one's value, and that check skips it)
    rel = choose_release(t, _result([[["a", "b"], ["c"]], [["a"], ["b"], ["c"]]]),
                         policy=policy, random_state=1, progress=False,
                         synthesis=False).release
    assert rel["status"] == "refused" and rel["candidates"]
    assert policy.utility_repeats_for(n) > 3 and repeats and set(repeats) == {3}
    for c, p in zip(rel["candidates"], frontier_points(rel["candidates"], policy, None)):
        assert "class_from_one_column" in c["failed"]
        assert not any(k.startswith("batch_") for k in c["risks"])
        assert "batch_suppression" in p.unmeasured and c["utility_scored"] == "in sample"
