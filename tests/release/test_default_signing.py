"""Stores are signed by default (issue 53).

Without a signing key, the command line's default, a store's manifest was only a
checksum: a store writer removed a recipe step, rewrote every digest, and shuffle,
validate and publish then passed a raw column. Now the first save creates a key file
outside the store, readable by its owner only, and a reader refuses a store that no key
in force signed unless unsigned stores are allowed explicitly (``--allow-unsigned``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astrid_airflow import ArtefactStore, ParameterError, StoreError, make_synthetic
from astrid_airflow.cli import main
from astrid_airflow.io import allowing_unsigned, key_file, signing_key_or_new
from tests.keys import without_any_key
from tests.release.test_store import make_artefact
from tests.release.test_store_integrity import rewrite_manifest


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"astrid key id\0" + key).hexdigest()[:16]


def _edit(path: Path, change) -> None:
    path.chmod(0o644)
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_the_first_save_creates_an_owner_only_key_outside_the_store(tmp_path, monkeypatch):
    without_any_key(monkeypatch, tmp_path)
    old = os.umask(0)  # no umask may widen the key's modes
    try:
        ArtefactStore(tmp_path / "store").save("s", make_artefact())
    finally:
        os.umask(old)
    path = key_file()
    assert path.is_file() and not path.is_relative_to(tmp_path / "store")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    manifest = json.loads((tmp_path / "store" / "s" / "v0001" / "manifest.json").read_text())
    assert manifest["signature"]["key_id"] == _key_id(path.read_bytes().strip())
    ArtefactStore(tmp_path / "store").save("s", make_artefact(1))  # the same key again
    assert ArtefactStore(tmp_path / "store").load("s", "v0001") == make_artefact()


def _first_key(path: str, queue) -> None:
    os.environ["ASTRID_KEY_FILE"] = path
    os.environ.pop("ASTRID_SIGNING_KEY", None)
    queue.put(signing_key_or_new())


def test_concurrent_first_savers_agree_on_one_key(tmp_path):
    path = str(tmp_path / "keys" / "signing.key")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_first_key, args=(path, queue)) for _ in range(6)]
    for w in workers:
        w.start()
    keys = {queue.get(timeout=60) for _ in workers}
    for w in workers:
        w.join(60)
    assert keys == {Path(path).read_bytes().strip()}
    assert os.listdir(Path(path).parent) == ["signing.key"]  # no temporary file left


def test_a_key_file_others_can_read_is_refused(tmp_path, monkeypatch, capsys):
    without_any_key(monkeypatch, tmp_path)
    signing_key_or_new()
    key_file().chmod(0o644)
    with pytest.raises(ParameterError, match=r"owner-only permissions .*mode 644"):
        ArtefactStore(tmp_path / "store").save("s", make_artefact())
    make_synthetic(30, random_state=0).to_csv(tmp_path / "t.csv", index=False)
    code = main(["learn", str(tmp_path / "t.csv"), "--target", "class", "--quiet",
                 "--store", str(tmp_path / "store"), "--name", "n"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "chmod 600" in err, err
    assert not (tmp_path / "store").exists()


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A store the command line learned with its default key, and a batch."""
    tmp = tmp_path_factory.mktemp("signed")
    make_synthetic(120, random_state=3).to_csv(tmp / "t.csv", index=False)
    assert main(["learn", str(tmp / "t.csv"), "--target", "class", "--classifier", "nb",
                 "--r-search", "2", "--r-test", "3", "--seed", "0", "--quiet", "--store",
                 str(tmp / "store"), "--name", "n", "--allow-weaker-policy", "--policy",
                 _policy(tmp)]) == 0
    return tmp


def _policy(tmp: Path) -> str:
    (tmp / "lenient.json").write_text(json.dumps({"max_accuracy_drop": 1.0}))
    return str(tmp / "lenient.json")


def _tampered(learned: Path, tmp_path: Path, *, keep_signature: bool = False,
              edit: bool = True) -> Path:
    """A copy of the store whose artefact lost its release recipe (every remedy: raw
    columns published), every digest rewritten as a writer without the key can;
    ``edit=False``: only the signature dropped, as in a store saved before signing was
    the default."""
    import shutil

    store = shutil.copytree(learned / "store", tmp_path / "store")
    vdir = store / "n" / "v0001"
    if edit:
        _edit(vdir / "artefact.json", lambda a: {**a, "release": None})
    rewrite_manifest(vdir, keep_signature=keep_signature)
    return store


@pytest.mark.parametrize("keep_signature", [False, True])
def test_a_store_rewritten_without_the_key_is_refused_by_every_stage(
        learned, tmp_path, capsys, keep_signature):
    store = _tampered(learned, tmp_path, keep_signature=keep_signature)
    staged = tmp_path / "staging" / "s.csv"
    shuffle = ["shuffle", str(learned / "t.csv"), "--artefact", f"{store}/n", "--out",
               str(staged), "--seed", "1", "--no-utility"]
    capsys.readouterr()
    assert main(shuffle) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert ("it is not signed" in err and "--allow-unsigned" in err) if not keep_signature \
        else "its signature does not match its content" in err
    assert not staged.exists()
    code = main(["validate", "--original", str(learned / "t.csv"), "--surrogate",
                 str(learned / "t.csv"), "--artefact", f"{store}/n", "--seed", "0"])
    assert code == 2 and "signature does not hold" in capsys.readouterr().err


def test_an_unsigned_store_is_published_only_with_the_flag_and_the_manifest_says_so(
        learned, tmp_path, capsys):
    store = _tampered(learned, tmp_path, edit=False)  # unsigned, as stores before this
    staged, dest = tmp_path / "staging" / "s.csv", tmp_path / "pub" / "s.csv"
    flag = ["--allow-unsigned"]
    assert main(["shuffle", str(learned / "t.csv"), "--artefact", f"{store}/n", "--out",
                 str(staged), "--seed", "1", "--no-utility", *flag]) == 0
    validate = ["validate", "--original", str(learned / "t.csv"), "--surrogate", str(staged),
                "--artefact", f"{store}/n", "--seed", "0", "--allow-weaker-policy"]
    assert main(validate) == 2  # no flag: refused
    assert main([*validate, *flag]) == 0
    receipt = json.loads((staged.parent / "s.gate.json").read_text())
    assert receipt["allow_unsigned"] is True
    publish = ["publish", str(staged), "--destination", str(dest), "--release-id", "r1",
               "--receipt", str(staged.parent / "s.gate.json")]
    capsys.readouterr()
    assert main(publish) == 2  # the gate allowed it: publishing needs the flag as well
    assert "needs --allow-unsigned" in capsys.readouterr().err and not dest.exists()
    assert main([*publish, *flag]) == 0
    manifest = json.loads((tmp_path / "pub" / "s.release.json").read_text())
    assert manifest["unsigned_store_allowed"] is True


def test_the_default_signed_store_publishes_and_says_it_was_signed(learned, tmp_path):
    staged, dest = tmp_path / "staging" / "s.csv", tmp_path / "pub" / "s.csv"
    assert main(["shuffle", str(learned / "t.csv"), "--artefact", f"{learned}/store/n",
                 "--out", str(staged), "--seed", "1", "--no-utility"]) == 0
    assert main(["validate", "--original", str(learned / "t.csv"), "--surrogate",
                 str(staged), "--artefact", f"{learned}/store/n", "--seed", "0",
                 "--allow-weaker-policy"]) == 0
    receipt = json.loads((staged.parent / "s.gate.json").read_text())
    assert receipt["allow_unsigned"] is False and "signature" in receipt
    # the signed receipt is trusted: publish does not gate again
    assert main(["publish", str(staged), "--destination", str(dest), "--release-id", "r1",
                 "--receipt", str(staged.parent / "s.gate.json")]) == 0
    manifest = json.loads((tmp_path / "pub" / "s.release.json").read_text())
    assert manifest["receipt_trust"] == "signed"
    assert manifest["unsigned_store_allowed"] is False


def test_with_no_key_anywhere_a_signed_store_is_read_only_when_allowed(tmp_path,
                                                                        monkeypatch):
    monkeypatch.setenv("ASTRID_SIGNING_KEY", "a key of the machine that saved it")
    ArtefactStore(tmp_path / "store").save("s", make_artefact())
    without_any_key(monkeypatch, tmp_path)
    with pytest.raises(StoreError, match="no signing key is configured here"):
        ArtefactStore(tmp_path / "store").load("s")
    assert not key_file().exists()  # a reader never creates a key
    with allowing_unsigned():
        assert ArtefactStore(tmp_path / "store").load("s") == make_artefact()


_FILES = st.sampled_from(["artefact.json", "suite.json", "extra.bin"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=st.lists(st.tuples(_FILES, st.binary(min_size=1, max_size=64)), min_size=1,
                      max_size=3),
       keep_signature=st.booleans(), delete=st.booleans())
def test_property_no_version_changed_without_the_key_is_read(edits, keep_signature,
                                                             delete):
    """Whatever a store writer without the key changes in a version's files, with the
    manifest's digests made to match again (its signature kept or dropped, or a file
    deleted and unlisted), no reader accepts the version unless unsigned stores are
    allowed."""
    with tempfile.TemporaryDirectory() as tmp:
        store = ArtefactStore(Path(tmp) / "store")
        store.save("s", make_artefact(), extra_files={"suite.json": b"{}",
                                                      "extra.bin": b"\x00" * 8})
        vdir = Path(tmp) / "store" / "s" / "v0001"
        for name, data in edits:
            (vdir / name).chmod(0o644)
            (vdir / name).write_bytes((vdir / name).read_bytes() + data)
        if delete:
            os.remove(vdir / "extra.bin")
            manifest = json.loads((vdir / "manifest.json").read_text())
            del manifest["files"]["extra.bin"]
            (vdir / "manifest.json").chmod(0o644)
            (vdir / "manifest.json").write_text(json.dumps(manifest, indent=2,
                                                           sort_keys=True) + "\n")
        rewrite_manifest(vdir, keep_signature=keep_signature)
        with pytest.raises(StoreError, match="signature does not hold"):
            store.verified_files("s", "v0001")
