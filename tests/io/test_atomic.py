"""Atomic writes: complete file or nothing, no silent overwrite, local and fsspec URLs."""

from __future__ import annotations

import os
import uuid

import fsspec
import pytest

from astrid_airflow._errors import StoreError
from astrid_airflow.io import is_local
from astrid_airflow.io._atomic import (
    atomic_dir,
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
)


def _visible(directory) -> list[str]:
    return sorted(os.listdir(directory))


def test_write_bytes_and_text_local(tmp_path):
    out = tmp_path / "sub" / "a.bin"
    atomic_write_bytes(out, b"\x00\x01")
    assert out.read_bytes() == b"\x00\x01"
    atomic_write_text(tmp_path / "b.txt", "héllo")
    assert (tmp_path / "b.txt").read_text(encoding="utf-8") == "héllo"
    assert _visible(tmp_path) == ["b.txt", "sub"]  # no temp files left


def test_no_silent_overwrite(tmp_path):
    out = tmp_path / "a.txt"
    atomic_write_text(out, "first")
    with pytest.raises(StoreError, match="Refusing to overwrite"):
        atomic_write_text(out, "second")
    assert out.read_text() == "first"
    atomic_write_text(out, "second", overwrite=True)
    assert out.read_text() == "second"
    assert _visible(tmp_path) == ["a.txt"]


def test_atomic_path_exception_leaves_nothing(tmp_path):
    out = tmp_path / "data.parquet"
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(out) as tmp:
            with open(tmp, "wb") as fh:
                fh.write(b"partial")
            raise RuntimeError("boom")
    assert _visible(tmp_path) == []


def test_atomic_path_exception_keeps_old_file(tmp_path):
    out = tmp_path / "data.csv"
    out.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(out, overwrite=True) as tmp:
            open(tmp, "w").write("new but broken")
            raise RuntimeError("writer died")
    assert out.read_text() == "old"
    assert _visible(tmp_path) == ["data.csv"]


def test_atomic_path_with_pyarrow_writer(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    out = tmp_path / "t.parquet"
    table = pa.table({"x": [1, 2, 3]})
    with atomic_path(out) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path)  # same dir: the move is a rename
        pq.write_table(table, tmp)
    assert pq.read_table(out).equals(table)


def test_existing_destination_fails_before_work(tmp_path):
    out = tmp_path / "x"
    out.write_text("keep")
    ran = False
    with pytest.raises(StoreError, match="overwrite"):
        with atomic_path(out):
            ran = True
    assert not ran and out.read_text() == "keep"


def test_directory_destination_is_an_error(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        atomic_write_text(tmp_path, "x", overwrite=True)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_unwritable_directory(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="permission denied"):
            atomic_write_text(ro / "a.txt", "x")
    finally:
        ro.chmod(0o700)


def test_memory_url_round_trip_and_no_overwrite():
    root = f"memory://atomic-{uuid.uuid4().hex}"
    assert not is_local(root)
    atomic_write_bytes(f"{root}/d/a.bin", b"abc")
    fs = fsspec.filesystem("memory")
    assert fs.cat_file(f"{root}/d/a.bin") == b"abc"
    with pytest.raises(StoreError, match="Refusing to overwrite"):
        atomic_write_bytes(f"{root}/d/a.bin", b"xyz")
    atomic_write_bytes(f"{root}/d/a.bin", b"xyz", overwrite=True)
    assert fs.cat_file(f"{root}/d/a.bin") == b"xyz"
    with pytest.raises(RuntimeError):
        with atomic_path(f"{root}/d/b.bin") as tmp:
            open(tmp, "wb").write(b"half")
            raise RuntimeError("died")
    assert [p.rsplit("/", 1)[-1] for p in fs.ls(f"{root}/d", detail=False)] == ["a.bin"]


def test_atomic_dir_moves_whole_directory(tmp_path):
    dest = tmp_path / "v0001"
    with atomic_dir(dest) as tmp:
        assert not dest.exists()
        (open(os.path.join(tmp, "a.json"), "w")).write("{}")
    assert _visible(dest) == ["a.json"]
    with pytest.raises(FileExistsError):
        with atomic_dir(dest) as tmp:
            open(os.path.join(tmp, "b.json"), "w").write("{}")
    assert _visible(dest) == ["a.json"]
    assert _visible(tmp_path) == ["v0001"]


def test_atomic_dir_exception_leaves_nothing(tmp_path):
    with pytest.raises(KeyError):
        with atomic_dir(tmp_path / "v0001") as tmp:
            open(os.path.join(tmp, "a.json"), "w").write("{")
            raise KeyError("x")
    assert _visible(tmp_path) == []


def test_permission_denied_emulated(tmp_path, monkeypatch):
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "link", denied)
    monkeypatch.setattr(os, "replace", denied)
    with pytest.raises(StoreError, match="permission denied"):
        atomic_write_text(tmp_path / "a.txt", "x")
    assert _visible(tmp_path) == []


def test_a_folder_made_meanwhile_by_another_writer_is_not_a_file(tmp_path, monkeypatch):
    """make_dirs looks twice (is it a folder? is anything there?); a concurrent writer's
    mkdir between the looks made the folder wanted, not a file in its way (seen as
    "Not a directory" from concurrent first saves to one store)."""
    import os

    from astrid_airflow.io import _modes

    target = tmp_path / "store" / "name"
    target.mkdir(parents=True)  # made by the other writer ...
    real, first = os.path.isdir, []

    def isdir(path):  # ... just after this writer's first look
        if os.fspath(path) == str(target) and not first:
            first.append(path)
            return False
        return real(path)

    monkeypatch.setattr(_modes.os.path, "isdir", isdir)
    _modes.make_dirs(str(target))
    assert first and real(target)
    (tmp_path / "file").write_text("x")
    monkeypatch.undo()
    with pytest.raises(NotADirectoryError):  # a file in the way still refuses
        _modes.make_dirs(str(tmp_path / "file" / "sub"))
