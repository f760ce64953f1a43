"""One stage, two doors: ``astrid learn`` / ``astrid shuffle`` and the learn / shuffle
operators run the same library stage (``learn_release``, ``stage_release``), so on the
same inputs and seed they write the same files and decide the same reuse."""

from __future__ import annotations

import json
import types

import pytest
from astrid_airflow.operators.demo import bundled_table
from astrid_airflow.operators.learn import AstridLearnOperator
from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

from astrid_airflow.cli import main

pytestmark = [pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner"),
              pytest.mark.filterwarnings(
                  "ignore::astrid_airflow.release._surrogate.ProtectsNothingWarning")]

REFERENCE = bundled_table("synthetic.csv")
BATCH = bundled_table("synthetic_batch.csv")
# a short learn (naive Bayes, R' = 5, R = 9) and no remedies: the release choice only
# measures the learned grouping's candidates, a few seconds in all
LEARN_FLAGS = ["--target", "class", "--classifier", "nb", "--r-search", "5", "--r-test", "9",
               "--seed", "0", "--sample", "none", "--exact", "--no-remedies",
               "--max-seconds", "14400", "--quiet", "--json"]
LEARN_KW = dict(target="class", classifier="nb", n_search=5, n_test=9, random_state=0,
                sample=None, adaptive=False, remedies=False, max_seconds=14400)
# what differs between two runs of the same learn, even through one door: when it ran
# and how long its steps took (never what was learned)
TIMING = ("created_at", "seconds", "estimate")


def ctx(run_id: str = "manual__1", task_id: str = "t") -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": run_id}


def cli(argv: list[str], capsys) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def without_timing(artefact: dict) -> dict:
    out = {k: v for k, v in artefact.items() if k not in TIMING and k != "files"}
    out["result"] = {k: v for k, v in artefact["result"].items() if k not in TIMING}
    return out


def undated(obj):
    """``obj`` without its ``created_at`` stamps (the suite quotes the artefact's)."""
    if isinstance(obj, dict):
        return {k: undated(v) for k, v in obj.items() if k != "created_at"}
    return [undated(v) for v in obj] if isinstance(obj, list) else obj


def version_files(store, name: str = "syn", version: str = "v0001") -> dict:
    d = store / name / version
    return {"artefact": json.loads((d / "artefact.json").read_text()),
            "suite": undated(json.loads((d / "suite.json").read_text())),
            "learn": (d / "learn.json").read_bytes()}


def test_learn_through_both_doors_writes_the_same_version_and_reuses_it(tmp_path, capsys):
    cli_store, op_store = tmp_path / "cli", tmp_path / "op"
    argv = ["learn", REFERENCE, *LEARN_FLAGS, "--store", str(cli_store), "--name", "syn"]
    first = cli(argv, capsys)
    op = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(op_store),
                             name="syn", **LEARN_KW)
    xcom = op.execute(ctx(task_id="learn"))
    assert first["artefact"]["version"] == xcom["version"] == "v0001"
    assert first["artefact"]["reused"] is False and xcom["learned"] is True
    by_cli, by_op = version_files(cli_store), version_files(op_store)
    assert without_timing(by_cli["artefact"]) == without_timing(by_op["artefact"])
    assert by_cli["suite"] == by_op["suite"] and by_cli["learn"] == by_op["learn"]
    # a second run of the same learn on the same table: both doors keep v0001
    again = cli(argv, capsys)
    assert again["artefact"] == {"store": str(cli_store), "name": "syn",
                                 "version": "v0001", "reused": True}
    assert again["grouping"] == first["grouping"]  # the version's result, as recorded
    reop = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(op_store),
                               name="syn", **LEARN_KW)
    assert reop.execute(ctx(run_id="manual__2", task_id="learn"))["learned"] is False
    for store in (cli_store, op_store):
        assert sorted(p.name for p in (store / "syn").iterdir()) == ["v0001"]
    # another classifier is another learn: both doors learn v0002
    other = [a if a != "nb" else "svm" for a in argv]
    assert cli(other, capsys)["artefact"] == {"store": str(cli_store), "name": "syn",
                                              "version": "v0002", "reused": False}
    svm = AstridLearnOperator(task_id="learn", reference=REFERENCE, store=str(op_store),
                              name="syn", **{**LEARN_KW, "classifier": "svm"})
    assert svm.execute(ctx(task_id="learn"))["version"] == "v0002"


def test_stage_through_both_doors_writes_the_same_surrogate_and_metrics(tmp_path, capsys):
    store = tmp_path / "store"
    cli(["learn", REFERENCE, *LEARN_FLAGS, "--store", str(store), "--name", "syn"], capsys)
    out = tmp_path / "staging" / "surrogate.parquet"
    record = tmp_path / "staging" / "surrogate.metrics.json"
    printed = cli(["shuffle", BATCH, "--artefact", f"{store}/syn@v0001", "--out", str(out),
                   "--seed", "7", "--no-remedies", "--json"], capsys)
    assert printed["out"] == str(out) and printed["seed"] == 7
    by_cli = (out.read_bytes(), json.loads(record.read_text()))
    op = GoldenEyeShuffleOperator(task_id="shuffle", table=BATCH, store=str(store),
                                  artefact="syn@v0001", out=str(out), random_state=7,
                                  remedies=False)
    xcom = op.execute(ctx(task_id="shuffle"))
    by_op = (out.read_bytes(), json.loads(record.read_text()))
    assert by_cli[0] == by_op[0]  # the same surrogate bytes
    assert xcom == by_op[1]  # the XCom is the record
    # "seconds" is how long this stage took: the one key two runs never share
    assert {k: v for k, v in by_cli[1].items() if k != "seconds"} == \
        {k: v for k, v in by_op[1].items() if k != "seconds"}
    assert by_cli[1]["surrogate"] == f"file://{out}" and by_cli[1]["artefact"] == "syn@v0001"
    assert by_cli[1]["metrics"]["rows"] == printed["rows"]
