"""`astrid publish`: the release protocol on the command line (issue 20)."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from astrid_airflow import ArtefactStore, GroupingArtefact, make_synthetic
from astrid_airflow.cli import main

KEY = "publish-cli-test-key-0123456789"


@pytest.fixture
def staged(tmp_path, capsys, monkeypatch):
    # receipts are trusted only when signed (issue 29): the tests run with a key
    monkeypatch.setenv("ASTRID_SIGNING_KEY", KEY)
    table = make_synthetic(60, random_state=4)
    src = tmp_path / "original.parquet"
    table.to_parquet(src)
    result = {"grouping": [["a1", "a2"], ["a3"], ["a4"]], "k": 3, "table": [],
              "target": "class", "classifier": {"preset": "nb"}, "scoring": "accuracy",
              "alpha": 0.05, "n_search": 5, "n_test": 10, "random_state": 0}
    ArtefactStore(tmp_path / "store").save("syn", GroupingArtefact.from_result(result, table))
    surrogate = tmp_path / "staging" / "surrogate.parquet"
    assert main(["shuffle", str(src), "--artefact", str(tmp_path / "store" / "syn"),
                 "--out", str(surrogate), "--seed", "1", "--no-utility", "--json"]) == 0
    capsys.readouterr()
    return tmp_path, src, surrogate


def _receipt(surrogate, success=True, sha=None, **fields):
    """A receipt signed with the test key, as a gate holding it would write."""
    from astrid_airflow.release import seal_receipt

    path = surrogate.parent / f"{surrogate.stem}.gate.json"
    path.write_text(json.dumps(seal_receipt({
        "success": success, "surrogate": str(surrogate), "failed": [] if success else ["x"],
        "sha256": sha or hashlib.sha256(surrogate.read_bytes()).hexdigest(),
        "artefact": "syn@v0001", "expectations": [], "policy": {}, **fields},
        stem=surrogate.stem,
        artefact_sha256=None, suite_sha256=None, gate_files={}, key=KEY.encode())))
    return path


def test_publish_with_a_passing_receipt_archives_then_promotes(staged, capsys):
    tmp, _, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    code = main(["publish", str(surrogate), "--destination", str(dest),
                 "--receipt", str(_receipt(surrogate)), "--release-id", "r1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    # the release is the staged values in their canonical form, never the staged bytes
    staged_rows = pd.read_parquet(surrogate)
    published_rows = pd.read_parquet(dest)
    key = list(staged_rows.columns)
    pd.testing.assert_frame_equal(
        staged_rows.sort_values(key).reset_index(drop=True),
        published_rows.sort_values(key).reset_index(drop=True), check_dtype=False)
    assert (tmp / "published" / "releases" / "r1" / "surrogate.parquet").read_bytes() == \
        dest.read_bytes()
    assert (tmp / "published" / "releases" / "r1" / "surrogate.gate.json").exists()
    manifest = json.loads((tmp / "published" / "surrogate.release.json").read_text())
    assert manifest["sha256"] == out["sha256"] == hashlib.sha256(dest.read_bytes()).hexdigest()
    assert manifest["staged_sha256"] == hashlib.sha256(surrogate.read_bytes()).hexdigest()
    assert manifest["release_id"] == "r1" and manifest["receipt_trust"] == "signed"


@pytest.mark.parametrize(("receipt_kw", "code"), [
    pytest.param({"success": False}, 1, id="failed gate: exit 1, nothing published"),
    pytest.param({"sha": "0" * 64}, 2, id="stale receipt: exit 2"),
])
def test_publish_refuses_without_a_matching_passing_receipt(staged, capsys, receipt_kw, code):
    tmp, _, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    assert main(["publish", str(surrogate), "--destination", str(dest),
                 "--receipt", str(_receipt(surrogate, **receipt_kw))]) == code
    assert not dest.exists()


@pytest.mark.parametrize("argv", [
    pytest.param([], id="neither receipt nor gate inputs"),
    pytest.param(["--receipt", "r.json", "--original", "o.csv", "--artefact", "a"],
                 id="both"),
    pytest.param(["--receipt", "missing.gate.json"], id="no such receipt"),
    pytest.param(["--receipt", "RECEIPT", "--release-id", "../x"], id="unsafe release id"),
])
def test_bad_input_exits_2_with_one_line(staged, capsys, argv):
    tmp, _, surrogate = staged
    argv = [str(_receipt(surrogate)) if a == "RECEIPT" else a for a in argv]
    assert main(["publish", str(surrogate), "--destination",
                 str(tmp / "p" / "surrogate.parquet"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("astrid publish: error:") and "\n" not in err


def test_publish_gates_here_and_writes_the_receipt(staged, capsys):
    tmp, src, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    code = main(["publish", str(surrogate), "--destination", str(dest), "--original",
                 str(src), "--artefact", str(tmp / "store" / "syn"), "--seed", "0"])
    own = surrogate.parent / "surrogate.publish-gate"
    receipt = json.loads((own / "surrogate.gate.json").read_text())
    assert receipt["sha256"] == hashlib.sha256(surrogate.read_bytes()).hexdigest()
    assert code == (0 if receipt["success"] else 1)
    assert dest.exists() == receipt["success"]
    assert (own / "surrogate.validation.json").is_file()


def test_publish_gating_again_never_rewrites_the_gate_tasks_files(staged, capsys):
    # Without a trusted receipt publish gates the file again; it once wrote over the
    # gate's validation files and receipt, so the gate's Data Docs link showed publish's
    tmp, src, surrogate = staged
    ref = str(tmp / "store" / "syn")
    assert main(["validate", "--original", str(src), "--surrogate", str(surrogate),
                 "--artefact", ref, "--seed", "3", "--max-accuracy-drop", "1",
                 "--allow-weaker-policy"]) in (0, 1)
    gate_files = {p.name: p.read_bytes() for p in surrogate.parent.iterdir() if p.is_file()
                  and p.name != surrogate.name}
    assert {"surrogate.gate.json", "surrogate.validation.json"} <= set(gate_files)
    dest = tmp / "published" / "surrogate.parquet"
    code = main(["publish", str(surrogate), "--destination", str(dest), "--original",
                 str(src), "--artefact", ref, "--seed", "0", "--release-id", "r1"])
    after = {p.name: p.read_bytes() for p in surrogate.parent.iterdir() if p.is_file()
             and p.name != surrogate.name}
    assert after == gate_files  # the gate task's files, byte for byte
    receipt = json.loads((surrogate.parent / "surrogate.publish-gate" /
                          "surrogate.gate.json").read_text())
    assert code == (0 if receipt["success"] else 1)
    if code == 0:  # the release archives and names publish's own validation
        manifest = json.loads((dest.parent / "surrogate.release.json").read_text())
        assert manifest["validation"].startswith(str(dest.parent / "releases" / "r1"))


def test_a_receipt_for_a_superseded_version_publishes_with_a_warning(staged, caplog):
    import logging

    tmp, _, surrogate = staged
    store = ArtefactStore(tmp / "store")
    receipt = _receipt(surrogate, store=str(tmp / "store"))  # gated against syn@v0001
    with caplog.at_level(logging.WARNING, logger="astrid_airflow"):
        assert main(["publish", str(surrogate), "--destination",
                     str(tmp / "a" / "surrogate.parquet"), "--receipt", str(receipt)]) == 0
    assert not [r for r in caplog.records if "learned since" in r.getMessage()]
    store.save("syn", store.load("syn", "v0001"))  # a newer version is learned
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="astrid_airflow"):
        assert main(["publish", str(surrogate), "--destination",
                     str(tmp / "b" / "surrogate.parquet"), "--receipt", str(receipt)]) == 0
    (line,) = [r.getMessage() for r in caplog.records if "learned since" in r.getMessage()]
    assert "syn@v0001" in line and "syn@v0002" in line
    assert (tmp / "b" / "surrogate.parquet").exists()  # published all the same
