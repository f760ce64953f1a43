"""``--identifiers --quasi-identifiers --sensitive`` on the command line (issue 49): each
bad declaration is one line and exit 2 with nothing written; a declared learn drops the
identifiers, records the model and says it; no declaration records what it always did."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from astrid_airflow.gate import GatePolicy

DIABETES = Path(__file__).resolve().parents[2] / "astrid_airflow" / "data" / "diabetes.csv"
FAST = ["--r-search", "10", "--r-test", "20", "--classifier", "nb", "--seed", "0",
        "--quiet"]


def astrid(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "astrid_airflow.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("roles")
    table = pd.read_csv(DIABETES)
    table.insert(0, "patient", [f"P{i:04d}" for i in range(len(table))])
    table.to_csv(root / "ref.csv", index=False)
    return root


KEY = {"ASTRID_SIGNING_KEY": "roles-test-key-0123456789abcdef"}
ROLES = ["--identifiers", "patient", "--quasi-identifiers", "age,preg,mass"]


@pytest.fixture(scope="module")
def declared(reference) -> subprocess.CompletedProcess:
    """The declared learn, once: a store signed with the key the later stages hold."""
    import os

    return subprocess.run([sys.executable, "-m", "astrid_airflow.cli", "learn", "ref.csv",
                           "--target", "class", "--store", "declared", "--name", "d",
                           "--json", *FAST, *ROLES], cwd=reference, capture_output=True,
                          text=True, timeout=900, env={**os.environ, **KEY})


def _learn(root: Path, store: str, *roles: str) -> subprocess.CompletedProcess:
    return astrid(["learn", "ref.csv", "--target", "class", "--store", store, "--name",
                   "d", "--json", *FAST, *roles], root)


@pytest.mark.parametrize("roles, message", [
    (["--quasi-identifiers", "age,pulse"], "unknown column(s) ['pulse']"),
    (["--quasi-identifiers", "age", "--sensitive", "age"], "declared both in"),
    (["--quasi-identifiers", "class"], "is the class"),
    (["--identifiers", "patient,preg,plas,pres,skin,insu,mass,pedi,age"],
     "every attribute is declared an identifier"),
    (["--sensitive", "mass", "--sensitive", "pedi"], "--sensitive given twice"),
    (["--identifiers", "patient,"], "no empty name"),
])
def test_a_bad_declaration_is_one_line_exit_2_and_writes_nothing(reference, roles, message):
    store = f"bad-{abs(hash(tuple(roles)))}"
    proc = _learn(reference, store, *roles)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not (reference / store).exists() and proc.stdout == ""


def test_a_role_in_the_policy_file_and_a_flag_is_given_twice(reference):
    (reference / "policy.json").write_text(json.dumps({"sensitive": ["mass"]}))
    proc = _learn(reference, "twice", "--policy", "policy.json", "--sensitive", "pedi")
    assert proc.returncode == 2 and "--sensitive given twice" in proc.stderr
    assert not (reference / "twice").exists()


def test_a_declared_learn_drops_the_identifiers_and_records_the_model(reference, declared):
    proc = declared
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    model = {"identifiers": ["patient"], "quasi_identifiers": ["age", "preg", "mass"],
             "sensitive": []}
    assert out["attacker_model"] == model
    assert "identifiers patient (dropped)" in out["attacker_model_line"]
    assert "patient" not in {c for g in out["grouping"] for c in g}
    from astrid_airflow.release import ArtefactStore

    # signed with the stages' key: read with it (another key is refused)
    art = ArtefactStore(reference / "declared",
                        signing_key=KEY["ASTRID_SIGNING_KEY"]).load("d")
    assert art.release["attacker_model"] == model
    assert GatePolicy.from_dict(art.release["policy"]).attacker_model.to_dict() == model
    assert "patient" not in art.columns


def test_no_declaration_says_every_column_is_known_and_records_no_roles(tmp_path):
    # a small table: the release choice runs (its record is what is checked) in seconds;
    # chosen or refused, a declared model would be recorded (pipeline._choice)
    table = pd.read_csv(DIABETES)[["plas", "mass", "age", "class"]].head(200)
    table.to_csv(tmp_path / "ref.csv", index=False)
    proc = _learn(tmp_path, "plain")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["attacker_model"]["quasi_identifiers"] is None
    assert "every column is a quasi-identifier" in out["attacker_model_line"]
    from astrid_airflow.release import ArtefactStore

    art = ArtefactStore(tmp_path / "plain").load("d")
    assert art.release is not None and out["release"]["status"] in ("chosen", "refused")
    assert "attacker_model" not in art.release
    assert not {"identifiers", "quasi_identifiers", "sensitive"} & set(art.release["policy"])


def test_the_learn_operator_takes_the_same_roles_and_refuses_a_bad_one(reference):
    """The operator's ``gate_policy`` carries the roles (lists or comma-separated, as
    templated); a bad declaration fails the task before anything is written."""
    import types

    from airflow.exceptions import AirflowFailException
    from astrid_airflow.operators.learn import AstridLearnOperator

    ti = types.SimpleNamespace(dag_id="d", run_id="r", task_id="learn", map_index=-1)
    bad = AstridLearnOperator(task_id="learn", reference=str(reference / "ref.csv"),
                              target="class", store=str(reference / "op-bad"), name="d",
                              gate_policy={"quasi_identifiers": "age,pulse"})
    with pytest.raises(AirflowFailException, match=r"unknown column\(s\) \['pulse'\]"):
        bad.execute({"ti": ti, "run_id": "r"})
    assert not (reference / "op-bad").exists()
    from operators._common import policy_overrides

    roles = policy_overrides({"identifiers": "patient", "quasi_identifiers": ["age", "mass"],
                              "max_intact": "0.01"})
    policy = GatePolicy.from_dict(roles)
    assert policy.identifiers == ("patient",) and policy.quasi_identifiers == ("age", "mass")


def test_publish_refuses_a_receipt_gated_under_another_stated_model(reference, declared):
    """The declared release through shuffle and validate; ``astrid publish`` with the
    model stated publishes it, with another model stated it refuses (exit 2)."""
    import os

    env = {**os.environ, **KEY}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "astrid_airflow.cli", *args],
                              cwd=reference, capture_output=True, text=True, timeout=600,
                              env=env)

    assert declared.returncode == 0, declared.stderr
    # a batch that still has the identifier column: dropped, and the output says so
    carrying = run("shuffle", "ref.csv", "--artefact", "declared/d", "--out", "x.parquet",
                   "--seed", "1")
    assert carrying.returncode == 0, carrying.stderr
    assert "dropped the declared identifier column(s) ['patient']" in carrying.stdout
    import pyarrow.parquet as pq

    assert "patient" not in pq.read_schema(reference / "x.parquet").names
    metrics = json.loads((reference / "x.metrics.json").read_text())
    assert metrics["metrics"]["dropped_identifiers"] == ["patient"]
    pd.read_csv(DIABETES).to_csv(reference / "batch.csv", index=False)
    assert run("shuffle", "batch.csv", "--artefact", "declared/d", "--out", "s.parquet",
               "--seed", "1").returncode == 0
    assert pq.read_table(reference / "s.parquet").equals(pq.read_table(reference / "x.parquet"))
    gated = run("validate", "--original", "ref.csv", "--surrogate", "s.parquet",
                "--artefact", "declared/d", "--seed", "2")  # the batch with its IDs
    assert gated.returncode == 0, gated.stderr
    other = run("publish", "s.parquet", "--destination", "public/other.parquet",
                "--receipt", "s.gate.json", "--identifiers", "patient",
                "--quasi-identifiers", "age")
    assert other.returncode == 2 and "another attacker model" in other.stderr
    assert not (reference / "public" / "other.parquet").exists()
    same = run("publish", "s.parquet", "--destination", "public/same.parquet",
               "--receipt", "s.gate.json", "--identifiers", "patient",
               "--quasi-identifiers", "age,preg,mass")
    assert same.returncode == 0, same.stderr
    assert (reference / "public" / "same.parquet").exists()
