"""The artefact store: versioning, latest, immutability, atomicity, concurrency, refs, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid

import fsspec
import pytest

from astrid_airflow._errors import ArtefactError, ParameterError, StoreError
from astrid_airflow.cli import main
from astrid_airflow.release._artefact import GroupingArtefact
from astrid_airflow.release._artefact_ref import load_artefact, parse_artefact_ref
from astrid_airflow.release._store import ArtefactStore
from tests.release.test_artefact import reference_table, result_dict


def make_artefact(seed: int = 0) -> GroupingArtefact:
    d = result_dict()
    d["random_state"] = seed
    return GroupingArtefact.from_result(d, reference_table(),
                                        created_at=f"2026-01-01T00:00:{seed % 60:02d}Z")


@pytest.fixture
def mem_root():
    root = f"memory://store-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def _visible(root, name) -> list[str]:
    return sorted(os.listdir(os.path.join(root, name)))


# ------------------------------------------------------------------------ versioning

@pytest.mark.parametrize("kind", ["local", "memory"])
def test_save_versions_latest_load(tmp_path, mem_root, kind):
    root = str(tmp_path / "store") if kind == "local" else mem_root
    store = ArtefactStore(root)
    a1, a2, a3 = make_artefact(1), make_artefact(2), make_artefact(3)
    assert store.save("credit", a1) == "v0001"
    assert store.save("credit", a2) == "v0002"
    assert store.save("other", a3, extra_files={"suite.json": b"{}"}) == "v0001"
    assert store.names() == ["credit", "other"]
    assert store.versions("credit") == ["v0001", "v0002"]
    assert store.latest("credit") == "v0002"
    assert store.load("credit") == a2
    assert store.load("credit", "v0001") == a1
    assert store.load("credit", 1) == a1 and store.load("credit", "1") == a1
    assert store.read_file("other", "latest", "suite.json") == b"{}"
    assert store.path_of("credit", "latest").endswith("/credit/v0002")
    rows = store.list()
    assert [(r["name"], r["version"]) for r in rows] == [
        ("credit", "v0001"), ("credit", "v0002"), ("other", "v0001")]
    assert rows[1]["k"] == 3 and rows[1]["target"] == "class" and rows[1]["error"] is None
    assert rows[1]["fingerprint"] == a2.fingerprint
    assert rows[1]["created_at"] == a2.created_at
    assert [r["version"] for r in store.list("other")] == ["v0001"]


def test_versions_are_never_overwritten(tmp_path):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact(1))
    before = (tmp_path / "n" / "v0001" / "artefact.json").read_bytes()
    store.save("n", make_artefact(2))
    assert (tmp_path / "n" / "v0001" / "artefact.json").read_bytes() == before
    assert store.add_file("n", 1, "suite.json", b"1").endswith("/n/v0001/suite.json")
    with pytest.raises(StoreError, match="Refusing to overwrite"):
        store.add_file("n", 1, "suite.json", b"2")
    assert store.read_file("n", 1, "suite.json") == b"1"
    with pytest.raises(ParameterError, match=r"other than 'artefact\.json'"):
        store.add_file("n", 1, "artefact.json", b"{}", overwrite=True)
    mode = os.stat(tmp_path / "n" / "v0001" / "artefact.json").st_mode & 0o777
    assert mode == 0o444  # read-only once written


def test_numbering_continues_after_gaps_and_foreign_entries(tmp_path):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact())
    (tmp_path / "n" / "v0007").mkdir()  # a foreign, incomplete directory: invisible
    (tmp_path / "n" / "notes.txt").write_text("x")
    assert store.versions("n") == ["v0001"]
    assert store.save("n", make_artefact()) == "v0008"
    assert store.versions("n") == ["v0001", "v0008"]


@pytest.mark.parametrize("bad", ["", "a/b", "..", "a..b", ".hidden", "x" * 201, "a\\b", 3])
def test_bad_names(tmp_path, bad):
    with pytest.raises(ParameterError, match="Invalid artefact name"):
        ArtefactStore(tmp_path).save(bad, make_artefact())


def test_missing_root_name_version(tmp_path):
    with pytest.raises(StoreError, match="No artefact store at"):
        ArtefactStore(tmp_path / "nope").names()
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact())
    with pytest.raises(StoreError, match=r"No artefact named 'm'.*names there: \['n'\]"):
        store.load("m")
    with pytest.raises(StoreError, match=r"No version v0005 of 'n'.*\['v0001'\]"):
        store.load("n", "v0005")
    with pytest.raises(ParameterError, match="Invalid version"):
        store.load("n", "newest")


def test_corrupt_artefact_on_load_and_in_list(tmp_path):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact())
    store.save("n", make_artefact())
    path = tmp_path / "n" / "v0002" / "artefact.json"
    path.chmod(0o644)
    path.write_text(path.read_text()[:50])
    # the manifest catches it before the parser (issue 29: tampering is refused)
    with pytest.raises(StoreError, match=r"v0002: artefact.json does not match its digest"):
        store.load("n")
    rows = store.list()
    assert rows[0]["error"] is None and "does not match its digest" in rows[1]["error"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_unwritable_root(tmp_path):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="permission denied"):
            ArtefactStore(tmp_path / "store").save("n", make_artefact())
    finally:
        tmp_path.chmod(0o700)


def test_root_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreError, match="Cannot write to store"):
        ArtefactStore(f).save("n", make_artefact())


# --------------------------------------------------------------------------- atomicity

class Boom(RuntimeError):
    pass


def _fail_on(monkeypatch, module_attr, when):
    """Make ``module_attr`` raise once ``when(args)`` is true."""
    import importlib

    mod_name, attr = module_attr.rsplit(".", 1)
    mod = importlib.import_module(mod_name)
    real = getattr(mod, attr)

    def wrapper(*args, **kwargs):
        if when(args):
            raise Boom("disk died mid-write")
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, attr, wrapper)


def test_local_failure_mid_write_leaves_no_version(tmp_path, monkeypatch):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact(1))
    # Die after the extra file is written, while writing artefact.json.
    real_chmod = os.chmod
    calls = []

    def chmod(path, mode, *a, **k):
        calls.append(path)
        if str(path).endswith("artefact.json"):
            raise Boom("disk died mid-write")
        return real_chmod(path, mode, *a, **k)

    monkeypatch.setattr(os, "chmod", chmod)
    with pytest.raises(Boom):
        store.save("n", make_artefact(2), extra_files={"suite.json": b"{}"})
    monkeypatch.undo()
    assert any(str(c).endswith("suite.json") for c in calls)  # really mid-write
    assert store.versions("n") == ["v0001"]
    assert _visible(tmp_path, "n") == ["v0001"]  # no temporary directory left either
    assert store.save("n", make_artefact(3)) == "v0002"
    assert store.load("n").random_state == 3


def test_local_failure_at_rename_leaves_no_version(tmp_path, monkeypatch):
    store = ArtefactStore(tmp_path)
    _fail_on(monkeypatch, "os.rename", lambda args: True)
    with pytest.raises(Boom):
        store.save("n", make_artefact())
    monkeypatch.undo()
    assert _visible(tmp_path, "n") == []
    with pytest.raises(StoreError, match="No artefact named"):
        store.versions("n")
    assert store.save("n", make_artefact()) == "v0001"


def test_remote_failure_mid_write_leaves_no_version(mem_root, monkeypatch):
    store = ArtefactStore(mem_root)
    store.save("n", make_artefact(1))
    import astrid_airflow.release._store as store_mod

    real = store_mod.fs_write_bytes

    def failing(fs, path, data, **kw):
        if path.endswith("artefact.json"):
            raise Boom("connection lost")
        return real(fs, path, data, **kw)

    monkeypatch.setattr(store_mod, "fs_write_bytes", failing)
    with pytest.raises(Boom):
        store.save("n", make_artefact(2), extra_files={"suite.json": b"{}"})
    monkeypatch.undo()
    fs = fsspec.filesystem("memory")
    assert [p.rsplit("/", 1)[-1] for p in fs.ls(f"{mem_root}/n", detail=False)] == ["v0001"]
    assert store.versions("n") == ["v0001"]
    assert store.save("n", make_artefact(3)) == "v0002"


def test_remote_crash_leftovers_are_invisible_and_skipped(mem_root):
    store = ArtefactStore(mem_root)
    fs = fsspec.filesystem("memory")
    # A saver crashed after claiming v0001 and writing an extra file.
    fs.pipe_file(f"{mem_root}/n/v0001/.claim-dead", b"")
    fs.pipe_file(f"{mem_root}/n/v0001/suite.json", b"{}")
    with pytest.raises(StoreError, match="No artefact named"):
        store.versions("n")
    assert store.save("n", make_artefact()) == "v0002"
    assert store.versions("n") == ["v0002"]


# -------------------------------------------------------------------------- concurrency

@pytest.mark.parametrize("kind", ["local", "memory"])
def test_concurrent_saves_get_distinct_complete_versions(tmp_path, mem_root, kind,
                                                         monkeypatch):
    root = str(tmp_path) if kind == "local" else mem_root
    n = 8
    # Widen the race window between choosing a number and claiming it, so that savers
    # really collide; count the numbering rounds to prove they did.
    real_numbers = ArtefactStore._numbers
    rounds = []

    def slow_numbers(self, name, *, complete):
        out = real_numbers(self, name, complete=complete)
        if not complete:
            rounds.append(1)
            time.sleep(0.005)
        return out

    monkeypatch.setattr(ArtefactStore, "_numbers", slow_numbers)
    barrier = threading.Barrier(n)
    out: dict[int, str] = {}
    errors = []

    def work(i):
        try:
            store = ArtefactStore(root)
            barrier.wait()
            out[i] = store.save("race", make_artefact(i),
                                extra_files={"suite.json": str(i).encode()})
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(rounds) > n  # some savers lost a race and retried
    store = ArtefactStore(root)
    assert sorted(out.values()) == [f"v{i:04d}" for i in range(1, n + 1)]
    for i, vid in out.items():  # each version is complete and is the one its saver wrote
        assert store.load("race", vid).random_state == i
        assert store.read_file("race", vid, "suite.json") == str(i).encode()


def test_concurrent_saves_from_processes(tmp_path):
    code = ("import sys; sys.path.insert(0, 'tests/release');"
            "from test_store import make_artefact;"
            "from astrid_airflow.release._store import ArtefactStore;"
            "s = ArtefactStore(sys.argv[1]);"
            "print(' '.join(s.save('p', make_artefact(i)) for i in range(5)))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    ids = []
    for p in procs:
        stdout, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        ids += stdout.split()
    assert sorted(ids) == [f"v{i:04d}" for i in range(1, 16)]
    store = ArtefactStore(tmp_path)
    assert len(store.list("p")) == 15 and all(r["error"] is None for r in store.list("p"))


# ------------------------------------------------------------------------------- refs

@pytest.mark.parametrize("kind", ["local", "memory"])
def test_refs(tmp_path, mem_root, kind):
    root = str(tmp_path / "s") if kind == "local" else mem_root
    store = ArtefactStore(root)
    a1, a2 = make_artefact(1), make_artefact(2)
    store.save("n", a1)
    store.save("n", a2)
    v1 = store.path_of("n", 1)
    for ref, expected, version in [
        (f"{root}/n", a2, "v0002"),
        (f"{root}/n@latest", a2, "v0002"),
        (f"{root}/n@v0001", a1, "v0001"),
        (f"{root}/n@1", a1, "v0001"),
        (v1, a1, "v0001"),
        (f"{v1}/artefact.json", a1, "v0001"),
    ]:
        artefact, loc = load_artefact(ref)
        assert artefact == expected, ref
        assert (loc.name, loc.version) == ("n", version), ref
        assert loc.root == store.root and loc.directory == store.path_of("n", version)
        assert loc.path == f"{loc.directory}/artefact.json"
    with pytest.raises(StoreError, match="No version v0009"):
        load_artefact(f"{root}/n@9")
    with pytest.raises(StoreError, match="No artefact named 'zz'"):
        load_artefact(f"{root}/zz")


def test_ref_outside_a_store(tmp_path):
    path = tmp_path / "my.json"
    path.write_text(make_artefact().to_json())
    artefact, loc = load_artefact(str(path))
    assert artefact == make_artefact()
    assert loc.root is None and loc.directory == str(tmp_path) and loc.path == str(path)
    assert parse_artefact_ref(path).path == str(path)
    path.write_text("{")
    with pytest.raises(ArtefactError, match=r"my\.json: Corrupt or truncated"):
        load_artefact(path)
    with pytest.raises(StoreError, match="No artefact store at"):
        load_artefact(tmp_path / "missing" / "n")
    with pytest.raises(ParameterError, match="Invalid artefact reference"):
        parse_artefact_ref("")


# -------------------------------------------------------------------------------- CLI

def test_cli_list(tmp_path, capsys):
    store = ArtefactStore(tmp_path)
    store.save("credit", make_artefact(1))
    store.save("credit", make_artefact(2))
    store.save("adult", make_artefact(3))
    assert main(["artefacts", "list", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(v["name"], v["version"]) for v in out["versions"]] == [
        ("adult", "v0001"), ("credit", "v0001"), ("credit", "v0002")]
    assert out["versions"][0]["k"] == 3 and out["root"] == str(tmp_path)
    assert main(["artefacts", "list", str(tmp_path), "--name", "credit"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split()[:2] == ["NAME", "VERSION"] and len(text) == 3
    assert text[2].split()[:2] == ["credit", "v0002"]


def test_cli_list_errors_exit_2(tmp_path, capsys):
    assert main(["artefacts", "list", str(tmp_path / "missing"), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No artefact store at" in err
    ArtefactStore(tmp_path).save("n", make_artefact())
    assert main(["artefacts", "list", str(tmp_path), "--name", "a/b"]) == 2
    assert "Invalid artefact name" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["artefacts"])
    assert info.value.code == 2


def test_remote_saver_backs_off_when_a_rival_claims_the_same_number(mem_root, monkeypatch):
    from fsspec.implementations.memory import MemoryFileSystem

    real_pipe = MemoryFileSystem.pipe_file
    rival = f"{mem_root}/n/v0001/.claim-rival"

    def pipe_file(self, path, value, *args, **kwargs):
        out = real_pipe(self, path, value, *args, **kwargs)
        if "/v0001/.claim-" in path and not path.endswith("rival"):
            real_pipe(self, rival.split("://", 1)[1], b"")  # rival lands at the same time
        return out

    monkeypatch.setattr(MemoryFileSystem, "pipe_file", pipe_file)
    store = ArtefactStore(mem_root)
    assert store.save("n", make_artefact()) == "v0002"
    fs = fsspec.filesystem("memory")
    assert [p.rsplit("/", 1)[-1] for p in fs.ls(f"{mem_root}/n/v0001", detail=False)] == [
        ".claim-rival"]  # ours was withdrawn; the rival's number is left to the rival
    assert store.versions("n") == ["v0002"]


def test_permission_denied_is_a_store_error(tmp_path, monkeypatch):
    # Emulated, so that it also runs as root (which ignores file modes).
    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "makedirs", denied)
    monkeypatch.setattr(os, "mkdir", denied)  # io.make_dirs creates level by level
    with pytest.raises(StoreError, match="permission denied"):
        ArtefactStore(tmp_path / "store").save("n", make_artefact())


# ----------------------------------------------- names, versions and links (issue 18)

@pytest.mark.parametrize("bad", ["nl\n", "m\n", "x\r", "m ", "٣", "a\u0663b"])
def test_names_fullmatch_ascii(tmp_path, bad):
    # `$` matched before a trailing newline and `\d` non-ASCII digits
    with pytest.raises(ParameterError, match="Invalid artefact name"):
        ArtefactStore(tmp_path).save(bad, make_artefact())
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("bad", ["v٠٠٠١", "٣", "1\n", "v0001\n", "latest\n"])
def test_version_refs_fullmatch_ascii(tmp_path, bad):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact())
    if bad.strip() != bad:  # surrounding whitespace of a ref is stripped on purpose
        assert store.resolve("n", bad) == "v0001"
        return
    with pytest.raises(ParameterError, match="Invalid version"):
        store.load("n", bad)


def test_planted_non_ascii_version_is_ignored(tmp_path):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact(1))
    planted = tmp_path / "n" / "v٠٠٠٩"
    planted.mkdir()
    (planted / "artefact.json").write_text("{corrupt")
    assert store.versions("n") == ["v0001"] and store.latest("n") == "v0001"
    assert [r["version"] for r in store.list()] == ["v0001"]
    assert store.save("n", make_artefact(2)) == "v0002"  # not v0010


def test_symlinked_version_and_name_are_never_followed(tmp_path):
    root = tmp_path / "store"
    store = ArtefactStore(root)
    store.save("n", make_artefact(1))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "artefact.json").write_text(make_artefact(2).to_json())
    (root / "n" / "v0005").symlink_to(outside, target_is_directory=True)
    (root / "alias").symlink_to(root / "n", target_is_directory=True)
    assert store.versions("n") == ["v0001"] and store.names() == ["n"]
    for call in (lambda: store.load("n", 5), lambda: store.location("n", "v0005"),
                 lambda: store.load("alias"),
                 lambda: store.add_file("alias", 1, "x.json", b"{}"),
                 lambda: store.save("alias", make_artefact(3)),
                 lambda: load_artefact(root / "n" / "v0005"),
                 lambda: load_artefact(root / "n" / "v0005" / "artefact.json")):
        with pytest.raises(StoreError, match="symbolic link inside the artefact store"):
            call()
    assert sorted(p.name for p in outside.iterdir()) == ["artefact.json"]
    # claiming skips the linked number: the next version is v0006, never through v0005
    assert store.save("n", make_artefact(4)) == "v0006"
    # a linked artefact.json inside a real version directory is refused too
    (root / "n" / "v0007").mkdir()
    (root / "n" / "v0007" / "artefact.json").symlink_to(outside / "artefact.json")
    assert store.versions("n") == ["v0001", "v0006"]


def test_symlink_loops_are_one_line_errors(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(StoreError, match="Too many levels of symbolic links"):
        ArtefactStore(tmp_path / "loop").names()
    store = ArtefactStore(tmp_path / "s")
    store.save("n", make_artefact())
    (tmp_path / "s" / "x").symlink_to("x")
    (tmp_path / "s" / "n" / "v0002").symlink_to("v0002")
    assert store.names() == ["n"] and store.versions("n") == ["v0001"]


def test_list_reports_a_deep_json_version_and_goes_on(tmp_path, capsys):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact(1))
    store.save("n", make_artefact(2))
    path = tmp_path / "n" / "v0001" / "artefact.json"
    path.chmod(0o644)
    path.write_text("[" * 100_000 + "]" * 100_000)
    rows = store.list()
    # the manifest's digest refuses it before any parser sees it
    assert "does not match its digest" in rows[0]["error"] and rows[1]["error"] is None
    assert main(["artefacts", "list", str(tmp_path)]) == 0
    assert "does not match its digest" in capsys.readouterr().out


def test_writes_into_a_store_are_refused_except_through_it(tmp_path):
    from astrid_airflow.io import check_outside_store
    from astrid_airflow.io._atomic import atomic_write_bytes

    store = ArtefactStore(tmp_path / "s")
    store.save("n", make_artefact())
    for inside in ("s/n/v0001/x.csv", "s/n/v0001/sub/x.csv", "s/n/x.csv",
                   "s/n/.saving-x.tmp/x.csv"):
        with pytest.raises(StoreError, match="inside the artefact store"):
            check_outside_store(tmp_path / inside)
        with pytest.raises(StoreError, match="inside the artefact store"):
            atomic_write_bytes(tmp_path / inside, b"x")
    (tmp_path / "via").symlink_to(tmp_path / "s" / "n" / "v0001")
    with pytest.raises(StoreError, match="version directory"):
        check_outside_store(tmp_path / "via" / "x.csv")
    check_outside_store(tmp_path / "s" / "x.csv")  # beside the names: not a version
    check_outside_store(tmp_path / "v0001" / "x.csv")  # a look-alike, not a store
    assert store.add_file("n", 1, "extra.json", b"{}").endswith("extra.json")


def test_writes_into_a_store_on_an_object_store_are_refused_except_through_it():
    import uuid

    from astrid_airflow.io import check_outside_store
    from astrid_airflow.io._atomic import atomic_write_bytes

    url = f"memory://outside-{uuid.uuid4().hex[:8]}/s"
    store = ArtefactStore(url)
    store.save("n", make_artefact())
    for inside in ("n/v0001/x.csv", "n/v0001/sub/x.csv", "n/x.csv"):
        with pytest.raises(StoreError, match="inside the artefact store"):
            check_outside_store(f"{url}/{inside}")
        with pytest.raises(StoreError, match="inside the artefact store"):
            atomic_write_bytes(f"{url}/{inside}", b"x")
    with pytest.raises(StoreError, match="version directory"):  # a store inside a version
        ArtefactStore(f"{url}/n/v0001").save("m", make_artefact())
    check_outside_store(f"{url}/x.csv")  # beside the names: not a version
    check_outside_store(f"{url}-other/v0001/x.csv")  # a look-alike, not a store
    assert store.add_file("n", 1, "extra.json", b"{}").endswith("extra.json")
    assert [r["version"] for r in store.list()] == ["v0001"]


def test_list_survives_odd_names_and_unreadable_name_dirs(tmp_path, monkeypatch):
    store = ArtefactStore(tmp_path)
    store.save("n", make_artefact(1))
    store.save("z", make_artefact(2))
    planted = tmp_path / "a..b" / "v0001"  # matches the pattern, refused as a name
    planted.mkdir(parents=True)
    (planted / "artefact.json").write_text(make_artefact(3).to_json())
    assert store.names() == ["n", "z"]
    real = os.listdir

    def listdir(path):
        if str(path).endswith(os.sep + "z"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    rows = store.list()
    assert [(r["name"], r["version"]) for r in rows] == [("n", "v0001"), ("z", None)]
    assert "permission denied" in rows[1]["error"]


def test_a_store_nested_in_a_version_is_refused(tmp_path):
    outer = ArtefactStore(tmp_path / "outer")
    outer.save("n", make_artefact())
    for root in ("outer/n/v0001", "outer/n/v0001/inner", "outer/n"):
        with pytest.raises(StoreError, match="inside the artefact store"):
            ArtefactStore(tmp_path / root).save("m", make_artefact())
    assert sorted(os.listdir(tmp_path / "outer" / "n")) == ["v0001"]
    assert sorted(os.listdir(tmp_path / "outer" / "n" / "v0001")) == ["artefact.json",
                                                                       "manifest.json"]
    assert outer.save("n", make_artefact()) == "v0002"  # the store's own saves pass
