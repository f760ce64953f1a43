"""Issue 29, on the command line: the trial's attacks on a release, each of which
published sensitive data before (every test here fails on the code before the fix).

* covert channels in the published bytes (formatting of a staged file);
* row order (a "shuffle" that kept the source's order);
* forged receipts (unsigned; paths to the original, /etc/hostname, secrets/);
* store tampering (a loosened suite with its digest rewritten).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from astrid_airflow import ArtefactStore, GroupingArtefact, make_synthetic
from astrid_airflow.cli import main
from astrid_airflow.gate._policy import GatePolicy
from astrid_airflow.gate._suite import gate_extra_files
from astrid_airflow.release import seal_receipt
from tests.keys import without_any_key

KEY = "release-integrity-test-key-0123"
LENIENT = GatePolicy().with_overrides(
    max_intact=1.0, max_accuracy_drop=1.0, max_largest_group_unique_share=1.0,
    max_share_below_k=1.0, max_class_disclosure_share=1.0, max_linkage_excess=1.0,
    max_singling_out_risk=1.0, max_linkability_risk=1.0, max_inference_risk=1.0,
    max_class_from_one_column_risk=1.0, attack_n=20)


@pytest.fixture
def work(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ASTRID_SIGNING_KEY", KEY)
    table = make_synthetic(60, random_state=4)
    src = tmp_path / "original.csv"
    table.to_csv(src, index=False)
    result = {"grouping": [["a1", "a2"], ["a3"], ["a4"]], "k": 3, "table": [],
              "target": "class", "classifier": {"preset": "nb"}, "scoring": "accuracy",
              "alpha": 0.05, "n_search": 5, "n_test": 10, "random_state": 0}
    art = GroupingArtefact.from_result(result, table)
    ArtefactStore(tmp_path / "store").save("syn", art, extra_files=gate_extra_files(art,
                                                                                    LENIENT))
    (tmp_path / "staging").mkdir()
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "index.html").write_text("db password: hunter2")
    capsys.readouterr()
    return tmp_path, src, table


def _signed_receipt(staged: Path, key: str | None = KEY, **fields) -> Path:
    """The receipt a gate holding ``key`` writes (``key=None``: a forged, unsigned one)."""
    receipt = {"success": True, "surrogate": str(staged), "failed": [],
               "sha256": hashlib.sha256(staged.read_bytes()).hexdigest(),
               "artefact": "syn@v0001", "expectations": [], "policy": {}, **fields}
    path = staged.parent / f"{staged.stem}.gate.json"
    if key is not None:
        receipt = seal_receipt(receipt, stem=staged.stem, artefact_sha256=None,
                               suite_sha256=None, gate_files={}, key=key.encode())
    path.write_text(json.dumps(receipt))
    return path


def _publish(staged: Path, dest: Path, receipt: Path, release_id: str = "r1") -> int:
    return main(["publish", str(staged), "--destination", str(dest), "--receipt",
                 str(receipt), "--release-id", release_id])


# ------------------------------------------------------------------ covert channels

def _variants(table: pd.DataFrame, staging: Path) -> list[Path]:
    """The same values, written as the trial's carriers: trailing zeros, quoting, CRLF,
    exponent notation, another row order."""
    plain = staging / "plain" / "s.csv"
    plain.parent.mkdir()
    table.to_csv(plain, index=False)
    hidden = staging / "hidden" / "s.csv"
    hidden.parent.mkdir()
    rows = [",".join(f'"{c}"' for c in table.columns)]
    for i, row in enumerate(table.iloc[::-1].itertuples(index=False)):
        cells = []
        for v in row:
            if isinstance(v, float):  # one bit per cell: trailing zeros or exponent
                cells.append(f"{v:.17e}" if i % 2 else repr(v) + "000")
            else:
                cells.append(f'"{v}"')
        rows.append(",".join(cells))
    hidden.write_bytes(("\r\n".join(rows) + "\r\n").encode())
    return [plain, hidden]


def test_formatting_of_the_staged_file_never_reaches_the_release(work):
    tmp, _, table = work
    published = []
    for n, staged in enumerate(_variants(table, tmp / "staging")):
        dest = tmp / f"pub{n}" / "s.csv"
        assert _publish(staged, dest, _signed_receipt(staged)) == 0
        published.append(dest.read_bytes())
    assert published[0] == published[1]
    assert b"\r" not in published[0] and b"000," not in published[0]


def test_parquet_row_groups_never_reach_the_release(work):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp, _, table = work
    out = []
    for n, group in enumerate((1_000_000, 7)):
        staged = tmp / "staging" / f"p{n}" / "s.parquet"
        staged.parent.mkdir()
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), staged,
                       row_group_size=group)
        dest = tmp / f"pub{n}" / "s.parquet"
        assert _publish(staged, dest, _signed_receipt(staged)) == 0
        out.append(dest.read_bytes())
        assert pq.ParquetFile(dest).metadata.num_row_groups == 1
    assert out[0] == out[1]


# ------------------------------------------------------------------------ row order

def test_the_sources_row_order_is_never_published(work):
    tmp, _, table = work
    # a within-class "shuffle" that kept every row in place: class column identical
    staged = tmp / "staging" / "s.csv"
    table.to_csv(staged, index=False)
    dest = tmp / "pub" / "s.csv"
    assert _publish(staged, dest, _signed_receipt(staged)) == 0
    published = pd.read_csv(dest)
    assert published["class"].tolist() != table["class"].tolist()
    key = list(table.columns)
    pd.testing.assert_frame_equal(published.sort_values(key).reset_index(drop=True),
                                  table.sort_values(key).reset_index(drop=True),
                                  check_dtype=False)


# -------------------------------------------------------------------- forged receipts

def test_an_unsigned_receipt_publishes_nothing(work, monkeypatch, capsys):
    tmp, src, _ = work
    raw = tmp / "staging" / "raw.csv"
    raw.write_bytes(src.read_bytes())  # the raw original, never gated
    dest = tmp / "pub" / "raw.csv"
    forged = _signed_receipt(raw, key=None)
    assert _publish(raw, dest, forged) == 2
    assert "not signed" in capsys.readouterr().err
    without_any_key(monkeypatch, tmp)  # without a key no receipt is trusted
    assert _publish(raw, dest, forged) == 2
    assert "no signing key is configured" in capsys.readouterr().err
    assert not dest.exists() and not (tmp / "pub" / "releases").exists()


def test_receipt_paths_are_never_archived(work):
    tmp, src, table = work
    staged = tmp / "staging" / "s.csv"
    table.sample(frac=1, random_state=1).to_csv(staged, index=False)
    # even signed, the paths a receipt names are not what is archived
    receipt = _signed_receipt(staged, validation=str(src), data_docs="/etc/hostname",
                              report=str(tmp / "secrets" / "index.html"))
    dest = tmp / "pub" / "s.csv"
    assert _publish(staged, dest, receipt) == 0
    archived = {p.name: p.read_bytes() for p in (tmp / "pub").rglob("*")
                if p.is_file() and not p.name.endswith(".lock")}
    assert src.read_bytes() not in archived.values()
    assert not any(b"hunter2" in data for data in archived.values())
    assert set(archived) == {"s.csv", "s.gate.json", "s.release.json"}


# ----------------------------------------------------------------- store tampering

def test_a_loosened_suite_with_its_digest_rewritten_stops_validate(work, capsys):
    tmp, src, table = work
    vdir = tmp / "store" / "syn" / "v0001"
    suite = json.loads((vdir / "suite.json").read_text())
    suite["meta"]["astrid"]["policy"]["max_intact"] = 1.0
    raw = (json.dumps(suite, indent=2) + "\n").encode()
    art = json.loads((vdir / "artefact.json").read_text())
    art["files"]["suite.json"] = hashlib.sha256(raw).hexdigest()
    for name, data in (("suite.json", raw), ("artefact.json", json.dumps(art).encode())):
        (vdir / name).chmod(0o644)
        (vdir / name).write_bytes(data)
    staged = tmp / "staging" / "s.csv"
    table.to_csv(staged, index=False)
    assert main(["validate", "--original", str(src), "--surrogate", str(staged),
                 "--artefact", str(tmp / "store" / "syn"), "--seed", "0"]) == 2
    assert "does not match its digest" in capsys.readouterr().err
    assert not (tmp / "staging" / "s.gate.json").exists()


# ------------------------------------------------------- validate -> publish, signed

def _shuffled_and_validated(tmp: Path, src: Path) -> Path:
    """``staging/s.csv`` shuffled and gated by the command line (its receipt beside it)."""
    staged = tmp / "staging" / "s.csv"
    main(["shuffle", str(src), "--artefact", str(tmp / "store" / "syn"), "--out",
          str(staged), "--seed", "1", "--no-utility", "--json"])
    assert main(["validate", "--original", str(src), "--surrogate", str(staged),
                 "--artefact", str(tmp / "store" / "syn"), "--seed", "0",
                 "--allow-weaker-policy"]) == 0  # LENIENT is stored
    return staged


def test_validate_signs_a_receipt_publish_trusts_and_no_edit_survives(work, capsys):
    tmp, src, _ = work
    staged = _shuffled_and_validated(tmp, src)
    receipt_path = tmp / "staging" / "s.gate.json"
    receipt = json.loads(receipt_path.read_text())
    assert receipt["signature"]["algorithm"] == "hmac-sha256"
    assert set(receipt["files"]) == {"s.validation.json", "s.validation.html",
                                     "s.source_rows.parquet"}
    dest = tmp / "pub" / "s.csv"
    assert _publish(staged, dest, receipt_path) == 0
    manifest = json.loads((tmp / "pub" / "s.release.json").read_text())
    assert manifest["artefact_sha256"] == receipt["artefact_sha256"]
    assert manifest["suite_sha256"] == receipt["suite_sha256"] is not None
    assert manifest["validation"].endswith("releases/r1/s.validation.json")
    # the trial's forgery: point the receipt at the original
    receipt["validation"] = str(src)
    receipt_path.write_text(json.dumps(receipt))
    assert _publish(staged, tmp / "pub2" / "s.csv", receipt_path, "r2") == 2
    assert "changed after signing" in capsys.readouterr().err
    # a validation file replaced after the gate is refused too
    assert main(["validate", "--original", str(src), "--surrogate", str(staged),
                 "--artefact", str(tmp / "store" / "syn"), "--seed", "0",
                 "--allow-weaker-policy"]) == 0  # LENIENT is stored
    (tmp / "staging" / "s.validation.json").write_text(str(src.read_text()))
    assert _publish(staged, tmp / "pub3" / "s.csv", receipt_path, "r3") == 2
    assert not (tmp / "pub3" / "s.csv").exists()
    assert not (tmp / "pub3" / "releases" / "r3" / "s.csv").exists()


def test_a_receipt_moved_away_from_its_gate_files_publishes_nothing(work, capsys):
    tmp, src, _ = work
    staged = _shuffled_and_validated(tmp, src)
    moved = tmp / "elsewhere" / "s.gate.json"
    moved.parent.mkdir()
    moved.write_bytes((tmp / "staging" / "s.gate.json").read_bytes())  # still signed
    capsys.readouterr()
    dest = tmp / "pub" / "s.csv"
    assert _publish(staged, dest, moved) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not found beside it" in err[0] and "s.validation.json" in err[0]
    assert not dest.exists() and not (tmp / "pub" / "releases").exists()
    assert _publish(staged, dest, tmp / "staging" / "s.gate.json") == 0  # where it was
