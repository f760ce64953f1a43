"""The gate and publish stages through both doors: ``astrid`` and the operators.

``astrid validate`` / ``SurrogateGateOperator`` and ``astrid publish`` /
``PublishSurrogateOperator`` are adapters over one library stage each
(``gate_release``, ``publish_release``): on the same inputs and seed they must write
the same verdict, receipt, validation result, report, published bytes, archive and
manifest. What may differ is named where it is dropped, with why.
"""

from __future__ import annotations

import json
import shutil
import types
from pathlib import Path

import pytest
from airflow.sdk.execution_time.context import OutletEventAccessors
from astrid_airflow.operators._compat import AirflowFailException, AirflowSkipException
from astrid_airflow.operators.gate import SurrogateGateOperator
from astrid_airflow.operators.publish import PublishSurrogateOperator

from astrid_airflow import ArtefactStore, GroupingArtefact, astrid, make_synthetic
from astrid_airflow.cli import main
from astrid_airflow.gate import GatePolicy, gate_extra_files

pytestmark = pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")

KEY = "parity-test-key-0123456789"
SEED = 1
RUN_ID = "manual__2026-01-01T00:00:00+00:00"
# a raw release of a fixed grouping passes only a loosened policy (given to both doors)
POLICY = {"max_share_below_k": 1.0, "max_class_disclosure_share": 1.0,
          "max_largest_group_unique_share": 1.0, "max_singling_out_risk": 1.0,
          "max_linkability_risk": 1.0, "max_inference_risk": 1.0,
          "max_class_from_one_column_risk": 1.0, "max_accuracy_drop": 1.0,
          "max_linkage_excess": 1.0, "max_intact": 1.0, "max_suppressed_share": 1.0}

# Receipt fields that name where a door put things or when/which run it was: the CLI
# names local paths, the operator ObjectStoragePath URLs (file:///...), and only the
# operator has a run id; the signature covers them, so it differs with them.
PLACE_AND_TIME = {"surrogate", "original", "store", "artefact_path", "validation",
                  "data_docs", "report", "gated_at", "run_id", "signature",
                  # digests of the files that name those paths (compared apart below)
                  "files", "validation_sha256"}
# Manifest fields of the same kinds: paths, publication time, the run that published,
# and the digest of the validation JSON, which names the paths of its own files.
MANIFEST_PLACE_AND_TIME = {"published", "archived", "original", "validation", "data_docs",
                           "report", "run_id", "run_after", "published_at",
                           "validation_sha256"}


def ctx(run_id: str = RUN_ID) -> dict:
    ti = types.SimpleNamespace(dag_id="d", run_id=run_id, task_id="t", map_index=-1)
    return {"ti": ti, "run_id": run_id, "outlet_events": OutletEventAccessors()}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """An artefact (a short search) and one staged surrogate, copied into a
    directory per door, each gated there: by ``astrid validate`` and by the operator."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ASTRID_SIGNING_KEY", KEY)
        root = tmp_path_factory.mktemp("parity")
        table = make_synthetic(60, random_state=4)
        original = root / "original.parquet"
        table.to_parquet(original)
        result = astrid(table, target="class", n_search=5, n_test=10, random_state=0)
        artefact = GroupingArtefact.from_result(result, table)
        # saved with its gate suite and the loosened policy, as a learn does: every gate
        # reads the stored suite (a gate run by publish takes no overrides)
        ArtefactStore(root / "store").save(
            "syn", artefact, extra_files=gate_extra_files(artefact, GatePolicy(**POLICY)))
        staged = root / "staged" / "surrogate.parquet"
        assert main(["shuffle", str(original), "--artefact", str(root / "store" / "syn"),
                     "--out", str(staged), "--seed", "1", "--no-utility"]) == 0
        doors = {}
        for door in ("cli", "op"):
            (root / door).mkdir()
            doors[door] = root / door / "surrogate.parquet"
            shutil.copyfile(staged, doors[door])
        overrides = [a for k, v in POLICY.items()
                     for a in (f"--{k.replace('_', '-')}", str(v))]
        code = main(["validate", "--original", str(original), "--surrogate",
                     str(doors["cli"]), "--artefact", str(root / "store" / "syn"),
                     "--seed", str(SEED), *overrides, "--allow-weaker-policy", "--json",
                     "--quiet"])
        gate = SurrogateGateOperator(task_id="gate", original=str(original),
                                     surrogate=str(doors["op"]), store=str(root / "store"),
                                     artefact="syn", random_state=SEED, policy=POLICY,
                                     allow_weaker_policy=True)
        try:
            xcom, op_passed = gate.execute(ctx()), True
        except AirflowFailException:
            xcom, op_passed = None, False
        yield types.SimpleNamespace(root=root, original=original, doors=doors, code=code,
                                    xcom=xcom, op_passed=op_passed, mp=mp)


def _receipt(surrogate: Path) -> dict:
    return json.loads(surrogate.with_name(f"{surrogate.stem}.gate.json").read_text())


def _without(record: dict, keys: set) -> dict:
    return {k: v for k, v in record.items() if k not in keys}


def _validation(surrogate: Path) -> dict:
    """The validation result JSON minus what names a place, a time or a GX run (its
    ids, its data asset's random name, its timestamps, the paths of the files written)."""
    data = json.loads(surrogate.with_name(f"{surrogate.stem}.validation.json").read_text())

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if k not in {"id", "reference", "validation_json", "data_docs"}
                    and not k.endswith(("_time", "_id"))}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return strip(data)


def test_the_gate_gives_one_verdict_receipt_and_result_through_both_doors(work):
    cli, op = work.doors["cli"], work.doors["op"]
    cli_receipt, op_receipt = _receipt(cli), _receipt(op)
    # the verdict: the exit code and the task's outcome
    assert work.code == (0 if cli_receipt["success"] else 1)
    assert work.op_passed is cli_receipt["success"] is op_receipt["success"]
    assert _without(cli_receipt, PLACE_AND_TIME) == _without(op_receipt, PLACE_AND_TIME)
    assert cli_receipt["sha256"] == op_receipt["sha256"]  # the same bytes judged
    assert cli_receipt["expectations"] and cli_receipt["random_state"] == SEED
    assert op_receipt["run_id"] == RUN_ID and cli_receipt["run_id"] is None
    assert _validation(cli) == _validation(op)
    # both doors write the release report, and the receipt binds its files
    for door, receipt in (("cli", cli_receipt), ("op", op_receipt)):
        index = work.root / door / "surrogate.report" / "index.html"
        assert index.is_file(), door
        assert Path(receipt["report"].removeprefix("file://")) == index
        assert any(name.startswith("surrogate.report/") for name in receipt["files"])
    assert set(cli_receipt["files"]) == set(op_receipt["files"])
    # the report's figures name no path: the same bytes from both doors
    figures = [name for name in cli_receipt["files"] if name.endswith(".png")]
    assert figures and all(cli_receipt["files"][f] == op_receipt["files"][f] for f in figures)


def _archive(dest: Path, release_id: str) -> list[str]:
    archive = dest.parent / "releases" / release_id
    return sorted(str(p.relative_to(archive)) for p in archive.rglob("*") if p.is_file())


def test_publish_writes_the_same_release_through_both_doors(work, capsys):
    if not _receipt(work.doors["cli"])["success"]:
        pytest.skip("the gate failed on this surrogate: nothing to publish")
    dest = {door: work.root / f"published-{door}" / "surrogate.parquet"
            for door in ("cli", "op")}
    capsys.readouterr()
    assert main(["publish", str(work.doors["cli"]), "--destination", str(dest["cli"]),
                 "--receipt", str(_receipt_path(work.doors["cli"])), "--release-id", "r1",
                 "--json"]) == 0
    cli_out = json.loads(capsys.readouterr().out)
    op_out = PublishSurrogateOperator(task_id="publish", surrogate=str(work.doors["op"]),
                                      destination=str(dest["op"]), release_id="r1"
                                      ).execute(ctx())
    assert dest["cli"].read_bytes() == dest["op"].read_bytes()  # the canonical release
    assert _archive(dest["cli"], "r1") == _archive(dest["op"], "r1")
    assert "surrogate.report/index.html" in _archive(dest["cli"], "r1")
    manifests = {door: json.loads((d.parent / "surrogate.release.json").read_text())
                 for door, d in dest.items()}
    assert set(manifests["cli"]) == set(manifests["op"])
    assert _without(manifests["cli"], MANIFEST_PLACE_AND_TIME) == \
        _without(manifests["op"], MANIFEST_PLACE_AND_TIME)
    assert manifests["cli"]["receipt_trust"] == "signed"
    assert _without(cli_out, {"published", "archived", "manifest", "receipt"}) == \
        _without(op_out, {"published", "archived", "manifest"})


def _receipt_path(surrogate: Path) -> Path:
    return surrogate.with_name(f"{surrogate.stem}.gate.json")


class FakeTable:
    """A database table in memory: the table writers of both doors write here.

    Like the real writers it runs ``guard`` on the current comment before loading, and
    keeps the release's bytes, comment and the staged file the column types come from.
    """

    def __init__(self) -> None:
        self.comment: str | None = None
        self.loads: list[dict] = []

    def publish(self, local_file, *, comment, lock_timeout, guard, types_from):
        import pandas as pd

        guard(self.comment)
        frame = pd.read_parquet(local_file)
        self.comment = json.dumps(comment)
        self.loads.append({"data": Path(local_file).read_bytes(), "comment": comment,
                           "types_from": Path(types_from).read_bytes(),
                           "lock_timeout": lock_timeout})
        return {"table": "public.released", "rows": len(frame),
                "columns": list(frame.columns), "swap_seconds": 0.0}


@pytest.fixture
def tables(work, monkeypatch):
    """One fake table per door, behind each door's own table writer."""
    from astrid_airflow.operators import publish as operator_publish

    from astrid_airflow.pipeline import SqlTableWriter

    fakes = {"cli": FakeTable(), "op": FakeTable()}
    monkeypatch.setattr(SqlTableWriter, "publish",
                        lambda self, *a, **k: fakes["cli"].publish(*a, **k))
    monkeypatch.setattr(operator_publish._ConnectionTableWriter, "publish",
                        lambda self, *a, **k: fakes["op"].publish(*a, **k))
    return fakes


def test_a_table_release_is_the_same_through_both_doors(work, tables, capsys):
    if not _receipt(work.doors["cli"])["success"]:
        pytest.skip("the gate failed on this surrogate: nothing to publish")
    capsys.readouterr()
    url = "postgresql://astrid@localhost:5432/db?table=public.released"
    argv = ["publish", str(work.doors["cli"]), "--destination", url, "--receipt",
            str(_receipt_path(work.doors["cli"])), "--release-id", "t1", "--json"]
    assert main(argv) == 0
    cli_out = json.loads(capsys.readouterr().out)
    op = PublishSurrogateOperator(task_id="publish", surrogate=str(work.doors["op"]),
                                  destination="conn://astrid_pg/public.released",
                                  release_id="t1", lock_timeout=5)
    op_out = op.execute(ctx())
    cli_load, op_load = tables["cli"].loads[0], tables["op"].loads[0]
    assert cli_load["data"] == op_load["data"]  # the same canonical bytes loaded
    assert cli_load["types_from"] == op_load["types_from"] == \
        work.doors["op"].read_bytes()  # the types come from the staged file
    assert _without(cli_load["comment"], {"run_id", "run_after", "published_at"}) == \
        _without(op_load["comment"], {"run_id", "run_after", "published_at"})
    manifests = {door: json.loads((work.root / door / "surrogate.release.json").read_text())
                 for door in ("cli", "op")}
    assert set(manifests["cli"]) == set(manifests["op"])
    # one manifest schema: the file release's keys and the table's own
    file_keys = set(json.loads(
        (work.root / "published-cli" / "surrogate.release.json").read_text())) \
        if (work.root / "published-cli").exists() else set()
    assert file_keys <= set(manifests["cli"])
    assert {"table", "rows", "columns", "swap_seconds"} <= set(manifests["cli"])
    assert _without(manifests["cli"], MANIFEST_PLACE_AND_TIME) == \
        _without(manifests["op"], MANIFEST_PLACE_AND_TIME)
    assert cli_out["rows"] == op_out["rows"] == manifests["op"]["rows"] > 0
    assert "astrid@localhost" in cli_out["published"]
    # the same release again: decided on the table's comment, nothing loaded
    assert main(argv) == 0 and "not publishing" in capsys.readouterr().out
    with pytest.raises(AirflowSkipException):
        op.execute(ctx())
    assert len(tables["cli"].loads) == len(tables["op"].loads) == 1


@pytest.mark.postgres
def test_a_postgres_table_release_is_the_same_through_both_doors(work, monkeypatch, capsys):
    """The real writers: ``io.publish_table`` by URL and the operator's connection."""
    from tests.io.test_sql import postgres_url

    url = postgres_url()  # skips without a server (fails under CI)
    if not _receipt(work.doors["cli"])["success"]:
        pytest.skip("the gate failed on this surrogate: nothing to publish")
    import uuid

    import psycopg

    schema = f"t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    monkeypatch.setenv("AIRFLOW_CONN_ASTRID_PARITY_PG", url)
    try:
        assert main(["publish", str(work.doors["cli"]), "--destination",
                     f"{url}?table={schema}.released_cli", "--receipt",
                     str(_receipt_path(work.doors["cli"])), "--release-id", "p1"]) == 0
        PublishSurrogateOperator(task_id="publish", surrogate=str(work.doors["op"]),
                                 destination=f"conn://astrid_parity_pg/{schema}.released_op",
                                 release_id="p1").execute(ctx())
        with psycopg.connect(url, autocommit=True) as conn:
            rows = {door: conn.execute(f"SELECT * FROM {schema}.released_{door}").fetchall()
                    for door in ("cli", "op")}
            comments = {door: json.loads(conn.execute(
                "SELECT obj_description(%s::regclass)", (f"{schema}.released_{door}",)
            ).fetchone()[0]) for door in ("cli", "op")}
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert rows["cli"] == rows["op"] and rows["cli"]  # same rows, same order
    assert comments["cli"]["sha256"] == comments["op"]["sha256"]
    assert comments["cli"]["astrid_release"] == comments["op"]["astrid_release"] == "p1"


def test_the_cli_gates_here_and_publishes_into_a_table(work, tables, capsys, tmp_path):
    """Without a receipt, ``astrid publish`` gates the staged file itself (the library's
    one gate stage) before the table release; the manifest says so."""
    surrogate = tmp_path / "surrogate.parquet"
    shutil.copyfile(work.doors["cli"], surrogate)
    capsys.readouterr()
    code = main(["publish", str(surrogate), "--destination",
                 "postgresql://astrid@localhost:5432/db?table=public.gated", "--original",
                 str(work.original), "--artefact", str(work.root / "store" / "syn"),
                 "--seed", str(SEED), "--release-id", "g1"])
    # publish's own gate writes beside the staged file, in <stem>.publish-gate/
    receipt = json.loads((tmp_path / "surrogate.publish-gate" / "surrogate.gate.json"
                          ).read_text())
    assert code == 0 and receipt["success"]
    assert receipt["sha256"] == _receipt(work.doors["cli"])["sha256"]
    manifest = json.loads((tmp_path / "surrogate.release.json").read_text())
    assert manifest["receipt_trust"] == "gated here" and manifest["table"]
    assert tables["cli"].loads[0]["comment"]["astrid_release"] == "g1"
