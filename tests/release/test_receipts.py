"""Sealed gate receipts (astrid_airflow.release._receipt): what a receipt is bound to,
when publish may trust one, and which files a release may archive (issue 29)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astrid_airflow._errors import ReleaseError
from astrid_airflow.io import signing
from astrid_airflow.release import (
    checked_bytes,
    gate_file_sources,
    receipt_trusted,
    seal_receipt,
)

KEY = b"0123456789abcdef0123456789abcdef"


def _sealed(key=KEY, **over):
    receipt = {"success": True, "surrogate": "/s/out.parquet", "sha256": "a" * 64,
               "policy": {"max_intact": 0.01}, "failed": [], **over}
    return seal_receipt(receipt, stem="out", artefact_sha256="b" * 64,
                        suite_sha256="c" * 64,
                        gate_files={"out.validation.json": b"{}",
                                    "out.report/index.html": b"<html>"}, key=key)


def test_a_signed_receipt_is_trusted_and_bound():
    r = _sealed()
    assert receipt_trusted(r, KEY)
    assert r["validation_sha256"] == hashlib.sha256(b"{}").hexdigest()
    assert r["artefact_sha256"] == "b" * 64 and r["suite_sha256"] == "c" * 64


@pytest.mark.parametrize("field", ["success", "sha256", "artefact_sha256", "suite_sha256",
                                   "policy", "validation_sha256", "files", "surrogate"])
def test_any_edit_of_a_signed_receipt_is_refused(field):
    r = _sealed()
    r[field] = {"policy": {"max_intact": 1.0}, "files": {}}.get(field, "forged")
    with pytest.raises(ReleaseError, match="changed after signing"):
        receipt_trusted(r, KEY)


def test_unsigned_or_foreign_receipts_are_never_trusted():
    forged = {"success": True, "surrogate": "/s/out.parquet", "sha256": "a" * 64}
    with pytest.raises(ReleaseError, match="not signed"):
        receipt_trusted(forged, KEY)
    with pytest.raises(ReleaseError, match="another key"):
        receipt_trusted(_sealed(key=b"x" * 32), KEY)
    # without a key no receipt is trusted: publish gates again
    assert receipt_trusted(_sealed(), None) is False
    with signing(KEY):
        from astrid_airflow.io import signing_key

        assert receipt_trusted(_sealed(), signing_key())


@pytest.mark.parametrize("name", ["../original.csv", "/etc/hostname", "secrets/key",
                                  "out.report/../../x", "out.report/sub/x", "other.validation.json",
                                  "out.report/.hidden"])
def test_only_files_the_gate_writes_may_be_archived(tmp_path, name):
    r = _sealed()
    r["files"] = {name: "0" * 64}
    with pytest.raises(ReleaseError, match="not a file the gate writes"):
        gate_file_sources(r, tmp_path)
    with pytest.raises(ReleaseError, match="not a file the gate writes"):
        seal_receipt({"policy": {}}, stem="out", artefact_sha256=None, suite_sha256=None,
                     gate_files={name: b""}, key=None)


def test_sources_are_beside_the_receipt_and_must_match(tmp_path):
    r = _sealed()
    sources = gate_file_sources(r, tmp_path)
    assert [(n, p) for n, p, _ in sources] == [
        ("out.report/index.html", tmp_path / "out.report" / "index.html"),
        ("out.validation.json", tmp_path / "out.validation.json")]
    digest = dict((n, d) for n, _, d in sources)["out.validation.json"]
    assert checked_bytes(b"{}", digest, "x") == b"{}"
    with pytest.raises(ReleaseError, match="not the file the gate wrote"):
        checked_bytes(b'{"success": true}', digest, "x")
    with pytest.raises(ReleaseError, match="lists no files"):
        gate_file_sources({"success": True}, Path("."))


@settings(max_examples=50, deadline=None)
@given(field=st.sampled_from(["sha256", "artefact_sha256", "suite_sha256",
                              "validation_sha256"]),
       position=st.integers(0, 63), char=st.sampled_from("0123456789abcdef"))
def test_any_changed_digest_character_breaks_the_signature(field, position, char):
    r = _sealed()
    text = r[field]
    changed = text[:position] + char + text[position + 1:]
    r[field] = changed
    if changed == text:
        assert receipt_trusted(r, KEY)
    else:
        with pytest.raises(ReleaseError):
            receipt_trusted(r, KEY)
