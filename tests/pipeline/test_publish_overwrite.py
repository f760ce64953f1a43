"""Issue 29, the overwrites that live in publish: a release never replaces an input or
an unrelated file, a release id names one archive forever, and the archive is never
written through a symbolic link. Each test failed before the fix."""

from __future__ import annotations

import hashlib
import json
import multiprocessing

import pandas as pd
import pytest

from astrid_airflow.cli import main
from tests.cli import test_publish_cli
from tests.cli.test_publish_cli import _receipt

staged = test_publish_cli.staged  # the fixture, shared


def _state(root):
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("target", ["original", "surrogate", "receipt"])
def test_a_destination_equal_to_an_input_is_refused(staged, capsys, target):
    tmp, src, surrogate = staged
    receipt = _receipt(surrogate, original=str(src))  # signed: what a gate would write
    dest = {"original": src, "surrogate": surrogate,
            "receipt": receipt.with_suffix(".parquet")}[target]
    if target == "receipt":  # the receipt named as the destination's manifest
        dest = receipt.parent / "surrogate.gate.parquet"
        receipt = receipt.rename(receipt.parent / "surrogate.gate.release.json")
    before = _state(tmp)
    assert main(["publish", str(surrogate), "--destination", str(dest), "--receipt",
                 str(receipt), "--release-id", "r1"]) == 2
    assert "input" in capsys.readouterr().err
    assert _state(tmp) == before


def test_a_destination_inside_the_artefact_store_is_refused(staged, capsys):
    tmp, _, surrogate = staged
    store = tmp / "store"
    receipt = _receipt(surrogate, store=str(store))  # signed: what a gate would write
    dest = store / "surrogate.parquet"
    assert main(["publish", str(surrogate), "--destination", str(dest), "--receipt",
                 str(receipt)]) == 2
    assert not dest.exists()


def test_a_first_release_refuses_an_unrelated_file_without_force(staged, capsys):
    tmp, _, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    dest.parent.mkdir()
    dest.write_bytes(b"someone else's table")
    argv = ["publish", str(surrogate), "--destination", str(dest), "--receipt",
            str(_receipt(surrogate)), "--release-id", "r1"]
    assert main(argv) == 2
    assert "not an ASTRID release" in capsys.readouterr().err
    assert dest.read_bytes() == b"someone else's table"
    assert main([*argv, "--force"]) == 0
    assert dest.read_bytes() != b"someone else's table"  # the release (canonical form)
    assert sorted(map(tuple, pd.read_parquet(dest).to_numpy().tolist())) == \
        sorted(map(tuple, pd.read_parquet(surrogate).to_numpy().tolist()))


def _publish_other_bytes(path: str, dest: str, barrier, queue) -> None:
    from pathlib import Path

    from astrid_airflow.pipeline import PublishRequest, publish_release

    barrier.wait()
    try:
        publish_release(PublishRequest(surrogate=Path(path), destination=Path(dest),
                                       release_id="same-id", force=True))
        queue.put("published")
    except Exception as exc:
        queue.put(type(exc).__name__)


def test_a_release_id_names_one_archive_forever_even_when_two_race(tmp_path, monkeypatch):
    """Two publishers of one release id with other bytes, at once, forced: one archive,
    never overwritten; the other publisher is refused."""
    from astrid_airflow.pipeline._integrity import canonical_of
    from astrid_airflow.release import seal_receipt

    key = "overwrite-race-key-0123456789"
    monkeypatch.setenv("ASTRID_SIGNING_KEY", key)  # receipts are trusted only when signed
    ctx = multiprocessing.get_context("fork")
    for rnd in range(8):
        dest = tmp_path / f"round{rnd}" / "published" / "t.csv"
        paths = []
        for i in range(2):
            p = tmp_path / f"round{rnd}" / f"stage{i}" / "t.csv"
            p.parent.mkdir(parents=True)
            p.write_text(f"a,class\n{i},x\n")
            p.with_name("t.gate.json").write_text(json.dumps(seal_receipt({
                "success": True, "surrogate": str(p), "expectations": [], "policy": {},
                "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}, stem="t",
                artefact_sha256=None, suite_sha256=None, gate_files={}, key=key.encode())))
            paths.append(p)
        barrier, queue = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_publish_other_bytes,
                             args=(str(p), str(dest), barrier, queue)) for p in paths]
        for p in procs:
            p.start()
        outcomes = sorted(queue.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=60)
        assert outcomes == ["ReleaseError", "published"]
        archived = (dest.parent / "releases" / "same-id" / "t.csv").read_bytes()
        assert dest.read_bytes() == archived
        published = {canonical_of(p.read_bytes(), ".csv", release_id="same-id",
                                  random_state=None, key=key.encode()).data: p for p in paths}
        assert archived in published  # the canonical form of one of the two
        receipt = json.loads((dest.parent / "releases" / "same-id" / "t.gate.json").read_text())
        assert receipt["sha256"] == hashlib.sha256(published[archived].read_bytes()).hexdigest()


def test_the_archive_is_never_written_through_a_symlinked_releases_dir(staged, capsys):
    tmp, _, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    dest.parent.mkdir()
    (dest.parent / "releases").symlink_to(elsewhere)
    assert main(["publish", str(surrogate), "--destination", str(dest), "--receipt",
                 str(_receipt(surrogate)), "--release-id", "r1"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == [] and not dest.exists()


@pytest.mark.parametrize("force", [False, True])
def test_no_destination_lies_inside_a_release_archive(staged, capsys, force):
    # A publication into releases/<id>/ with --force once replaced an archived file:
    # release r1 then no longer matched its manifest. An archive never changes.
    tmp, _, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    assert main(["publish", str(surrogate), "--destination", str(dest), "--receipt",
                 str(_receipt(surrogate)), "--release-id", "r1"]) == 0
    archive = dest.parent / "releases" / "r1"
    before = _state(dest.parent)
    for inside in (archive / "surrogate.parquet", archive / "sub" / "other.parquet"):
        argv = ["publish", str(surrogate), "--destination", str(inside), "--receipt",
                str(_receipt(surrogate)), "--release-id", "r2", *(["--force"] * force)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "inside the release archive" in err
    assert _state(dest.parent) == before
