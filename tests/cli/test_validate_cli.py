"""`astrid validate`: exit codes 0/1/2, JSON contract, run-time threshold overrides."""

from __future__ import annotations

import json

import pytest

from astrid_airflow import ArtefactStore, GatePolicy, make_surrogate, make_synthetic
from astrid_airflow.cli import main
from astrid_airflow.gate._suite import gate_extra_files
from tests.gate.test_gate import EXPECTATIONS, artefact_for


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Original CSV, a good surrogate (Parquet), the original as 'surrogate', a store."""
    root = tmp_path_factory.mktemp("cli")
    data = make_synthetic(500, random_state=0)
    artefact = artefact_for(data, "a1,a2;a3;a4")
    store = ArtefactStore(root / "store")
    # "good" is a raw surrogate (exact continuous values): it passes only the explicit
    # raw-release policy, which reports the per-group disclosure checks without enforcing
    store.save("synth", artefact,
               extra_files=gate_extra_files(artefact, GatePolicy.raw_release_demo()))
    data.to_csv(root / "original.csv", index=False)
    make_surrogate(data, artefact, random_state=1).to_parquet(root / "good.parquet")
    data.to_csv(root / "leaky.csv", index=False)
    return {"root": root, "original": str(root / "original.csv"),
            "good": str(root / "good.parquet"), "leaky": str(root / "leaky.csv"),
            "ref": f"{root / 'store'}/synth@latest"}


def run(files, surrogate, *extra):
    try:
        # the store keeps the raw-release policy: a weaker one, allowed explicitly
        return main(["validate", "--original", files["original"], "--surrogate", surrogate,
                     "--artefact", files["ref"], "--seed", "0", "--allow-weaker-policy",
                     *extra])
    except SystemExit as exc:  # argparse rejects malformed flags itself
        return exc.code


def test_passing_surrogate_exits_0_with_json_contract(files, capsys):
    assert run(files, files["good"], "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["success"] is True and out["failed"] == []
    assert [e["name"] for e in out["expectations"]] == list(EXPECTATIONS)
    for e in out["expectations"]:
        assert {"name", "category", "success", "observed_value", "threshold"} <= set(e)
    intact = out["expectations"][0]
    assert intact["threshold"] == 0.01 and intact["observed_value"] <= 0.01
    # written beside the surrogate
    assert out["validation_json"] == str(files["root"] / "good.validation.json")
    assert (files["root"] / "good.validation.html").is_file()


def test_failing_surrogate_exits_1_and_names_the_failure(files, capsys):
    assert run(files, files["leaky"]) == 1
    text = capsys.readouterr().out
    assert "FAIL  privacy   expect_surrogate_intact_row_proportion_to_be_at_most" in text
    assert "observed=1 threshold=0.01" in text and "gate FAILED (2 failed)" in text
    # every pair of groups is still aligned as in the original
    assert "FAIL  privacy   expect_surrogate_cross_group_linkage_to_be_at_most_expected" in text
    assert "3 pair(s) of groups still linked, worst: a1, a2 + a3" in text


def test_thresholds_are_overridden_on_the_command_line(files, capsys, tmp_path):
    # raising the privacy threshold lets the original through; a zero tolerance on
    # accuracy (with a drop of at least one held-out row) does not
    assert run(files, files["leaky"], "--max-intact", "1", "--max-linkage-excess", "1",
               "--json", "--out-dir", str(tmp_path), "--allow-weaker-policy") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"]["max_intact"] == 1.0 and out["expectations"][0]["threshold"] == 1.0
    assert out["allow_weaker_policy"] is True and out["policy_note"].startswith(
        "weaker than the default policy: max_intact 1 (default 0.01), ")
    assert "max_linkage_excess 1" in out["policy_note"]
    assert (tmp_path / "leaky.validation.json").is_file()
    metrics = tmp_path / "shuffle.json"
    metrics.write_text(json.dumps({"accuracy_original": 0.9, "accuracy_surrogate": 0.89,
                                   "rows": 1000}))
    assert run(files, files["good"], "--metrics", str(metrics), "--json",
               "--out-dir", str(tmp_path)) == 0
    assert run(files, files["good"], "--metrics", str(metrics), "--max-accuracy-drop",
               "0.005", "--json", "--out-dir", str(tmp_path)) == 1
    # the shuffle stage's record (<stem>.metrics.json) nests the same figures
    record = tmp_path / "staged.metrics.json"
    record.write_text(json.dumps({"seed": 1, "metrics": json.loads(metrics.read_text())}))
    assert run(files, files["good"], "--metrics", str(record), "--max-accuracy-drop",
               "0.005", "--json", "--out-dir", str(tmp_path)) == 1
    assert run(files, files["good"], "--metrics", str(record), "--json",
               "--out-dir", str(tmp_path)) == 0
    capsys.readouterr()


@pytest.mark.parametrize("args, message", [
    pytest.param(["--max-intact", "1.5"], "max_intact", id="threshold-out-of-range"),
    pytest.param(["--max-accuracy-drop", "x"], "invalid float", id="threshold-not-number"),
    pytest.param(["--metrics", "/nonexistent.json"], "no such file", id="missing-metrics"),
])
def test_bad_input_exits_2(files, capsys, args, message):
    assert run(files, files["good"], *args) == 2
    assert message in capsys.readouterr().err


def test_bad_tables_and_refs_exit_2(files, capsys, tmp_path):
    assert run(files, str(tmp_path / "missing.parquet")) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a1,a2,class\n1,2,0\n")
    assert main(["validate", "--original", str(bad), "--surrogate", files["good"],
                 "--artefact", files["ref"], "--allow-weaker-policy"]) == 2
    assert "missing column(s)" in capsys.readouterr().err
    assert main(["validate", "--original", files["original"], "--surrogate", files["good"],
                 "--artefact", str(tmp_path / "nostore" / "x")]) == 2
    assert "astrid validate: error:" in capsys.readouterr().err
