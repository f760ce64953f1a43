"""A store that notices tampering (issue 29): manifests, signatures, links, hand-made
versions. Each attack here passed ``load`` before manifests."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid

import fsspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow._errors import StoreError
from astrid_airflow.gate._policy import GatePolicy
from astrid_airflow.gate._suite import gate_extra_files
from astrid_airflow.io._signing import signing
from astrid_airflow.release._artefact_ref import load_artefact
from astrid_airflow.release._manifest import MANIFEST_FILE
from astrid_airflow.release._store import ArtefactStore
from tests.release.test_store import make_artefact

KEY = b"k" * 32


def _loosen(version_dir) -> None:
    """The trial's attack: a weaker suite, its new digest written into artefact.json."""
    suite_path, art_path = version_dir / "suite.json", version_dir / "artefact.json"
    suite = json.loads(suite_path.read_text())
    suite["meta"]["astrid"]["policy"]["max_intact"] = 1.0
    raw = (json.dumps(suite, indent=2) + "\n").encode()
    art = json.loads(art_path.read_text())
    art["files"]["suite.json"] = hashlib.sha256(raw).hexdigest()
    for path, data in ((suite_path, raw), (art_path, json.dumps(art).encode())):
        path.chmod(0o644)
        path.write_bytes(data)


def rewrite_manifest(version_dir, *, keep_signature: bool = False,
                     name: str | None = None) -> None:
    """What a store writer without the key can do to a version's manifest: make every
    digest match the files again, drop the signature (``keep_signature``: keep the old
    one) and rename it (``name``: a copied version), written as the store writes it."""
    path = version_dir / MANIFEST_FILE
    manifest = json.loads(path.read_text())
    for f in manifest["files"]:
        manifest["files"][f] = hashlib.sha256((version_dir / f).read_bytes()).hexdigest()
    if not keep_signature:
        manifest.pop("signature", None)
    if name is not None:
        manifest["name"] = name
    path.chmod(0o644)
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def unsign(version_dir) -> None:
    """Drop the manifest's signature, as the store wrote manifests before signing was
    the default."""
    rewrite_manifest(version_dir)


def _saved(tmp_path, **kw) -> ArtefactStore:
    store = ArtefactStore(tmp_path / "store", **kw)
    store.save("diab", make_artefact(), extra_files=gate_extra_files(make_artefact(),
                                                                     GatePolicy()))
    return store


def test_a_loosened_suite_with_its_digest_rewritten_is_refused(tmp_path):
    store = _saved(tmp_path)
    _loosen(tmp_path / "store" / "diab" / "v0001")
    with pytest.raises(StoreError, match=r"artefact\.json does not match its digest"):
        store.load("diab")
    with pytest.raises(StoreError, match="does not match its digest"):
        load_artefact(tmp_path / "store" / "diab" / "v0001" / "artefact.json")


def test_with_a_key_even_a_rewritten_manifest_is_refused(tmp_path):
    store = _saved(tmp_path, signing_key=KEY)
    vdir = tmp_path / "store" / "diab" / "v0001"
    _loosen(vdir)
    manifest = json.loads((vdir / MANIFEST_FILE).read_text())
    for f in manifest["files"]:  # the attacker recomputes every digest, cannot sign
        manifest["files"][f] = hashlib.sha256((vdir / f).read_bytes()).hexdigest()
    (vdir / MANIFEST_FILE).chmod(0o644)
    # written as the store writes it, so only the signature can tell
    (vdir / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    with pytest.raises(StoreError, match="signature does not hold: its signature does not "
                                         "match"):
        store.load("diab")
    # without the key the store cannot tell (documented): the key is what it rests on,
    # so with none configured the store is refused unless unsigned stores are allowed
    with pytest.raises(StoreError, match="signed with another key"):
        ArtefactStore(tmp_path / "store").load("diab")  # the default key file's


@pytest.mark.parametrize("key", [KEY, None])
def test_a_reformatted_manifest_is_refused(tmp_path, key):
    """The same document in other whitespace is not the manifest the store wrote (the
    signature covers the parsed document, so the bytes are checked too)."""
    store = _saved(tmp_path, signing_key=key)
    path = tmp_path / "store" / "diab" / "v0001" / MANIFEST_FILE
    path.chmod(0o644)
    path.write_text(json.dumps(json.loads(path.read_text()), indent=4, sort_keys=True) + "\n")
    with pytest.raises(StoreError, match="not byte for byte as the store writes it"):
        store.load("diab")


def test_a_key_refuses_unsigned_and_foreign_manifests(tmp_path, monkeypatch):
    store = _saved(tmp_path)
    unsign(tmp_path / "store" / "diab" / "v0001")  # as a store of before default signing
    with pytest.raises(StoreError, match="it is not signed"):
        ArtefactStore(tmp_path / "store", signing_key=KEY).load("diab")
    monkeypatch.setenv("ASTRID_SIGNING_KEY", "another key of enough bytes")
    store.save("diab", make_artefact())
    with signing(KEY), pytest.raises(StoreError, match="signed with another key"):
        store.load("diab", "v0002")
    assert store.load("diab", "v0002") == make_artefact()  # the env key signed it


def test_a_hand_made_next_version_never_becomes_latest(tmp_path):
    store = _saved(tmp_path)
    base = tmp_path / "store" / "diab"
    shutil.copytree(base / "v0001", base / "v0002")
    os.remove(base / "v0002" / MANIFEST_FILE)
    assert store.latest("diab") == "v0001"
    with pytest.raises(StoreError, match=r"v0002 .* no manifest\.json: .*not written by "
                                         r"ArtefactStore\.save"):
        store.load("diab", "v0002")
    rows = store.list("diab")  # listed, never hidden, with the reason
    assert [r["version"] for r in rows] == ["v0001", "v0002"]
    assert rows[0]["error"] is None and "not written by" in rows[1]["error"]


def test_a_copied_version_with_its_manifest_is_refused(tmp_path):
    store = _saved(tmp_path, signing_key=KEY)
    base = tmp_path / "store" / "diab"
    shutil.copytree(base / "v0001", base / "v0002")  # e.g. an old, weaker version replayed
    assert store.latest("diab") == "v0002"
    with pytest.raises(StoreError, match=r"manifest is for diab@v0001, not diab@v0002"):
        store.load("diab")


def test_links_in_a_version_are_refused(tmp_path):
    store = _saved(tmp_path)
    art = tmp_path / "store" / "diab" / "v0001" / "artefact.json"
    os.link(art, tmp_path / "other-name.json")
    with pytest.raises(StoreError, match="2 hard links"):
        store.load("diab")
    os.remove(tmp_path / "other-name.json")
    assert store.load("diab") == make_artefact()
    suite = art.parent / "suite.json"
    shutil.copy(suite, tmp_path / "suite.json")
    os.remove(suite)
    os.symlink(tmp_path / "suite.json", suite)
    with pytest.raises(StoreError, match="symbolic link"):
        store.load("diab")


def test_a_deleted_file_and_a_deleted_manifest_are_refused(tmp_path):
    store = _saved(tmp_path)
    vdir = tmp_path / "store" / "diab" / "v0001"
    os.remove(vdir / "suite.json")
    with pytest.raises(StoreError, match=r"suite\.json is listed but missing"):
        store.load("diab")


def test_pre_manifest_versions_are_refused_with_the_way_out(tmp_path):
    store = _saved(tmp_path)
    os.remove(tmp_path / "store" / "diab" / "v0001" / MANIFEST_FILE)
    with pytest.raises(StoreError, match="resave_unverified"):
        store.load("diab")
    assert store.resave_unverified("diab", "v0001") == "v0002"
    assert store.load("diab") == make_artefact()
    assert "suite.json" in store.verified_files("diab")


def test_object_store_versions_have_a_verified_manifest():
    root = f"memory://integrity-{uuid.uuid4().hex}"
    try:
        store = ArtefactStore(root, signing_key=KEY)
        store.save("diab", make_artefact())
        fs = fsspec.filesystem("memory")
        inner = f"{root.removeprefix('memory://')}/diab/v0001"
        assert json.loads(fs.cat_file(f"{inner}/{MANIFEST_FILE}"))["version"] == "v0001"
        assert store.load("diab") == make_artefact()
        fs.pipe_file(f"{inner}/artefact.json", fs.cat_file(f"{inner}/artefact.json") + b" ")
        with pytest.raises(StoreError, match="does not match its digest"):
            store.load("diab")
    finally:
        fsspec.filesystem("memory").rm(root.removeprefix("memory://"), recursive=True)


@settings(max_examples=25, deadline=None)
@given(offset=st.integers(min_value=0), flip=st.integers(min_value=1, max_value=255),
       target=st.sampled_from(["artefact.json", "suite.json", MANIFEST_FILE]))
def test_any_changed_byte_is_refused(offset, flip, target):
    """Property: changing any one byte of any file of a version makes load refuse it."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        store = _saved(Path(tmp), signing_key=KEY)
        path = Path(tmp) / "store" / "diab" / "v0001" / target
        data = bytearray(path.read_bytes())
        data[offset % len(data)] ^= flip
        path.chmod(0o644)
        path.write_bytes(bytes(data))
        with pytest.raises(StoreError):
            store.load("diab")
