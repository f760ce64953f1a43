"""Issue 30: a release honours the umask (published file, manifest, archive, Data Docs).

Temporary files are private (``mkstemp``: 0600) and used to keep that mode when renamed
into place, so nobody else could read a release under umask 022. Now every file of a
release gets ``0o666 & ~umask`` and every directory ``0o777 & ~umask``, never writable
by others (umask 000 once made the archive world-writable); the artefact
store stays stricter (read-only versions, private folders; docs/reliability.md).
"""

from __future__ import annotations

import os
import stat

import pytest

from astrid_airflow.cli import main
from tests.cli import test_publish_cli

staged = test_publish_cli.staged  # the fixture, shared


def gate_here(original, surrogate, artefact):
    """Gate ``surrogate`` (the demo policy, so it passes) and write its receipt."""
    import hashlib
    import json

    from astrid_airflow import GatePolicy, validate_surrogate
    from astrid_airflow.io import atomic_write_text, plain
    from astrid_airflow.pipeline import receipt_path, sealed_receipt_of

    result = validate_surrogate(str(original), str(surrogate), str(artefact),
                                policy=GatePolicy.raw_release_demo(),
                                out_dir=surrogate.parent, random_state=0)
    assert result.success, result.failed
    assert result.surrogate_sha256 == hashlib.sha256(surrogate.read_bytes()).hexdigest()
    # sealed and signed with the key the staged fixture configures, as validate does
    receipt = sealed_receipt_of(result, surrogate=surrogate, original=original,
                                artefact=str(artefact), out_dir=surrogate.parent)
    path = receipt_path(surrogate)
    atomic_write_text(path, json.dumps(plain(receipt)), overwrite=True)
    return path


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000, 0o002])
def test_release_files_and_directories_honour_the_umask(staged, capsys, umask):
    tmp, src, surrogate = staged
    dest = tmp / "published" / "surrogate.parquet"
    old = os.umask(umask)
    try:  # a real gate run writes the receipt, validation JSON and Data Docs
        receipt = gate_here(src, surrogate, tmp / "store" / "syn")
        code = main(["publish", str(surrogate), "--destination", str(dest), "--receipt",
                     str(receipt), "--release-id", "r1"])
    finally:
        os.umask(old)
    assert code == 0, capsys.readouterr()
    written = [surrogate.parent / n for n in ("surrogate.gate.json",
                                              "surrogate.validation.json",
                                              "surrogate.validation.html")]
    if code == 0:
        written += [p for p in (tmp / "published").rglob("*")]
        assert (tmp / "published" / "releases" / "r1" / "surrogate.parquet").is_file()
    files = [p for p in written if p.is_file() and not p.name.endswith(".lock")]
    assert len(files) >= 3
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask & ~0o002, p
    for p in written:
        if p.is_dir():  # no umask makes a release writable by others
            assert stat.S_IMODE(p.stat().st_mode) == 0o777 & ~umask & ~0o002, p
