"""`measure_risk` and `astrid risk`: JSON contract, given vs shadow control, exit 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from astrid_airflow import ArtefactStore, RiskReport, make_surrogate, make_synthetic, measure_risk
from astrid_airflow.cli import main
from tests.gate.test_gate import artefact_for

GROUPING = "a1,a2;a3;a4"
ATTACK_KEYS = {"risk", "ci", "n_attacks"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("risk")
    data = make_synthetic(200, random_state=0)
    control = make_synthetic(200, random_state=1)
    artefact = artefact_for(data, GROUPING)
    ArtefactStore(root / "store").save("synth", artefact)
    data.to_csv(root / "original.csv", index=False)
    control.to_csv(root / "control.csv", index=False)
    make_surrogate(data, artefact, random_state=1).to_parquet(root / "good.parquet")
    data.to_csv(root / "leaky.csv", index=False)
    data.iloc[:-1].to_csv(root / "short.csv", index=False)
    data.assign(**{"class": data["class"].sample(frac=1, random_state=0).to_numpy()}
                ).assign(**{"class": lambda d: d["class"].where(d.index > 5, 1)}
                         ).to_csv(root / "reclassed.csv", index=False)
    data.drop(columns=["a4"]).to_csv(root / "narrow.csv", index=False)
    return {"root": root, "original": str(root / "original.csv"),
            "control": str(root / "control.csv"), "good": str(root / "good.parquet"),
            "leaky": str(root / "leaky.csv"), "short": str(root / "short.csv"),
            "reclassed": str(root / "reclassed.csv"), "narrow": str(root / "narrow.csv"),
            "ref": f"{root / 'store'}/synth@latest", "data": data, "ctl": control}


def run(files, surrogate, *extra, original=None):
    try:
        return main(["risk", "--original", original or files["original"], "--surrogate",
                     surrogate, "--artefact", files["ref"], "--seed", "0", *extra])
    except SystemExit as exc:  # argparse rejects malformed flags itself
        return exc.code


def _check_contract(out: dict) -> None:
    assert {"groups", "pairs", "singling_out", "linkability", "inference"} <= set(out)
    assert [g["columns"] for g in out["groups"]] == [["a1", "a2"], ["a3"], ["a4"]]
    for g in out["groups"]:
        assert {"columns", "k_min", "share_below_k", "class_disclosure_share"} <= set(g)
    assert len(out["pairs"]) == 3
    for p in out["pairs"]:
        assert {"groups", "linked_share", "expected_linked_share"} <= set(p)
    for attack in (out["singling_out"], out["linkability"], *out["inference"]):
        assert ATTACK_KEYS <= set(attack)
        lo, hi = attack["ci"]
        assert 0.0 <= lo <= attack["risk"] <= hi <= 1.0
    assert isinstance(out["inference"], list)
    secrets = [i["secret"] for i in out["inference"]]
    assert secrets[0] == "class" and {"a1", "a2"} <= set(secrets)


def test_json_contract_with_control_given(files, capsys):
    assert run(files, files["good"], "--control", files["control"], "--json") == 0
    out = json.loads(capsys.readouterr().out)
    _check_contract(out)
    assert out["control"] == "given" and out["random_state"] == 0
    assert [v["variant"] for v in out["linkability"]["variants"]] == [
        "cut_largest_group", "random_split"]
    assert [v["variant"] for v in out["singling_out"]["variants"]] == [
        "univariate", "multivariate"]


def test_shadow_release_when_no_control_and_reproducible(files, capsys):
    assert run(files, files["good"], "--json") == 0
    first = json.loads(capsys.readouterr().out)
    _check_contract(first)
    assert first["control"] == "shadow"
    assert first["shadow"]["released_rows"] + first["shadow"]["control_rows"] == 400
    assert run(files, files["good"], "--json") == 0
    assert json.loads(capsys.readouterr().out) == first


def test_text_output(files, capsys):
    assert run(files, files["good"], "--control", files["control"]) == 0
    text = capsys.readouterr().out
    assert "per group" in text and "cross-group linkage" in text
    assert "linkability, cut_largest_group" in text and "inference of class" in text
    assert "control rows given" in text


def test_original_released_as_is_is_high_risk(files):
    data, ctl = files["data"], files["ctl"]
    report = measure_risk(data, data, target="class", grouping=GROUPING, control=ctl,
                          random_state=0)
    assert isinstance(report, RiskReport) and report.control == "given"
    link = max(report.linkability, key=lambda r: r.risk)
    assert link.ci[0] > 0.8
    member = [r for r in report.inference if r.variant == "group_member"]
    assert len(member) == 2 and all(r.ci[0] > 0.5 for r in member)
    assert max(p.linked_share for p in report.pairs) == 1.0


def test_measure_risk_seed_and_small_tables():
    t = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "y": [0, 0, 0, 1, 1, 1]})
    a = measure_risk(t, t, target="y", grouping="a", random_state=3)
    assert a == measure_risk(t, t, target="y", grouping="a", random_state=3)
    # one attribute: no linkability possible, said so
    (link,) = a.linkability
    assert link.n_attacks == 0 and "two attribute" in link.note
    assert a.to_dict()["linkability"]["ci"] == [0.0, 0.0]


@pytest.mark.parametrize("surrogate, extra, message", [
    pytest.param("short", [], "rows", id="surrogate-row-count"),
    pytest.param("reclassed", [], "class counts", id="surrogate-class-counts"),
    pytest.param("narrow", [], "missing column(s)", id="surrogate-missing-column"),
    pytest.param("good", ["--control", "narrow"], "--control", id="control-missing-column"),
    pytest.param("good", ["--seed", "-1"], "seed", id="negative-seed"),
    pytest.param("good", ["--n-attacks", "0"], "n-attacks", id="zero-attacks"),
    pytest.param("good", ["--control", "/nonexistent.csv"], "no such file",
                 id="missing-control"),
])
def test_bad_input_exits_2(files, capsys, surrogate, extra, message):
    extra = [files.get(x, x) for x in extra]
    assert run(files, files[surrogate], *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("astrid risk: error:") and err.count("\n") == 1
    assert message in err


def test_bad_original_and_ref_exit_2(files, capsys, tmp_path):
    assert run(files, files["good"], original=files["narrow"]) == 2
    assert "missing column(s)" in capsys.readouterr().err
    assert main(["risk", "--original", files["original"], "--surrogate", files["good"],
                 "--artefact", str(tmp_path / "nostore" / "x")]) == 2
    assert "astrid risk: error:" in capsys.readouterr().err


def test_measure_risk_bad_input(files):
    from astrid_airflow import DataError, ParameterError

    data, ctl = files["data"], files["ctl"]
    with pytest.raises(DataError, match="does not match the grouping"):
        measure_risk(data, data.drop(columns=["a4"]), target="class", grouping=GROUPING)
    with pytest.raises(DataError, match="control"):
        measure_risk(data, data, target="class", grouping=GROUPING,
                     control=ctl.rename(columns={"a4": "z"}))
    with pytest.raises(DataError, match="Target column"):
        measure_risk(data, data, target="nope", grouping=GROUPING)
    with pytest.raises(ParameterError):
        measure_risk(data, data, target="class", grouping=GROUPING, random_state=-1)
    with pytest.raises(ParameterError):
        measure_risk(data, data, target="class", grouping=GROUPING, n_attacks=0)


def test_risk_reads_a_remedied_release_as_the_gate_does(tmp_path, capsys):
    # A release's suppressed cells are published empty, so an integer column reads back
    # as float and binned values are the recipe's: `astrid risk` once refused such a
    # file ("should be integer (int64) but is float") that `astrid validate` passed.
    import numpy as np

    from astrid_airflow import ReleaseRecipe, shuffle_file
    from astrid_airflow.release import AttackerModel
    from tests.release.test_remedies import _artefact

    rng = np.random.default_rng(0)
    n = 400
    table = pd.DataFrame({"a": np.r_[rng.integers(0, 8, n - 5), [99] * 5],
                          "c": rng.choice(list("pqr"), n), "y": rng.choice(list("uv"), n)})
    # 48 distinct records: a declared row id tells their 400 people apart (exact copies
    # of a row are one person otherwise)
    recipe = ReleaseRecipe(k=5, target="y", steps=({
        "method": "suppress", "column": "a", "keep": list(range(8)),
        "published_type": "integer"},), attacker_model=AttackerModel(identifiers=("pid",)))
    artefact = _artefact(table, "a;c", release={"status": "given",
                                                   "recipe": recipe.to_dict(),
                                                   "policy": {"max_intact": 1.0}})
    ArtefactStore(tmp_path / "store").save("t", artefact)
    src = tmp_path / "t.csv"
    table.assign(pid=np.arange(n)).to_csv(src, index=False)
    out = shuffle_file(src, artefact, tmp_path / "release.csv", random_state=3)
    published = pd.read_csv(out)
    assert published["a"].isna().any() and published["a"].dtype == float  # suppressed
    assert main(["risk", "--original", str(src), "--surrogate", str(out), "--artefact",
                 f"{tmp_path / 'store'}/t@latest", "--seed", "0", "--n-attacks", "50",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["remedies"] == recipe.to_dict()
    published.assign(extra=1).to_csv(tmp_path / "wide.csv", index=False)
    assert main(["risk", "--original", str(src), "--surrogate", str(tmp_path / "wide.csv"),
                 "--artefact", f"{tmp_path / 'store'}/t@latest"]) == 2
    assert "unexpected column(s) ['extra']" in capsys.readouterr().err
