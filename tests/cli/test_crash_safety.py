"""Crash safety: a learner or shuffler killed with SIGKILL mid-write publishes nothing partial.

Each test runs the real ``astrid`` command (``astrid_airflow.cli.main``) in a child
process and kills it with SIGKILL (no cleanup handlers run) at a chosen point:

* *fault injection*: the child wraps one system call the writers use (``os.fsync``,
  ``os.rename``, ``os.link``) and, at the k-th call, records where it is (the calling
  stack) and blocks; the test then kills it. Killing *before* the k-th
  ``fsync``/``rename``/``link`` covers every step of the atomic write: files half
  synced, a complete temporary directory not yet renamed, a renamed version whose
  directory is not yet synced. These children are forked from the test process after it
  has imported what a learn and a shuffle import, so each costs the command, not the
  interpreter's start;
* *after a delay*: a fresh ``python -m astrid_airflow.cli`` is killed at a few
  wall-clock times (importing, reading, fitting).

After every kill: no version or surrogate is visible unless it is complete (a visible
store version loads and validates; a visible surrogate is byte-identical to the one an
undisturbed run writes), and the next run (a forked child too) succeeds.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from astrid_airflow import make_synthetic
from astrid_airflow.cli import main
from astrid_airflow.release._store import ArtefactStore

# the raw release: these tests are about atomic writes, not the privacy choice
# (the synthetic table has no release within the default policy)
LEARN = ["--target", "class", "--classifier", "nb", "--r-search", "2", "--r-test", "3",
         "--seed", "0", "--quiet", "--no-remedies"]

_FORK = multiprocessing.get_context("fork")


def _shuffle_argv(data: Path, store: Path) -> list[str]:
    return ["shuffle", str(data / "syn.parquet"), "--artefact", str(store / "n"), "--seed",
            "3", "--no-utility", "--out"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The table, and a learn and a shuffle of it run here, in this process: the
    reference surrogate of the shuffler's tests, and every module those commands import
    loaded before a child is forked."""
    d = tmp_path_factory.mktemp("crash_data")
    make_synthetic(40, random_state=0).to_parquet(d / "syn.parquet", index=False)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["learn", str(d / "syn.parquet"), *LEARN, "--store", str(d / "store"),
                     "--name", "n"]) == 0
        assert main([*_shuffle_argv(d, d / "store"), str(d / "reference.parquet")]) == 0
    return d


def _inject(func: str, k: int, mark: Path) -> None:
    """Block at the k-th call of ``os.func``, after publishing where it was to ``mark``."""
    real = getattr(os, func)
    publish_mark = os.rename  # captured before any hook
    count = [0]

    def hooked(*args, **kwargs):
        count[0] += 1
        if count[0] == k:
            where = [f"{f.name}:{f.filename.rsplit('/', 1)[-1]}"
                     for f in traceback.extract_stack()[:-1]][-4:]
            with open(f"{mark}.tmp-mark", "w") as fh:
                fh.write(" < ".join(reversed(where)))
            publish_mark(f"{mark}.tmp-mark", mark)
            time.sleep(120)
        return real(*args, **kwargs)

    setattr(os, func, hooked)


def _child(argv: list[str], cwd: str, out: str, func: str | None, k: int,
           mark: str | None) -> None:
    """The forked child: ``astrid argv`` from ``cwd``, its output in ``out``.std{out,err}."""
    os.chdir(cwd)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = open(f"{out}.{name}", "w", buffering=1)  # open for the child's life
        os.dup2(stream.fileno(), fd)
        setattr(sys, name, stream)
    if func is not None:
        _inject(func, k, Path(mark))
    sys.exit(main(argv))


def _spawn(argv: list[str], cwd: Path, func: str | None = None, k: int = 0,
           mark: Path | None = None):
    """``astrid argv`` in a child forked from this process (its output in cwd/.child.*);
    with ``func``, killable at the k-th call of ``os.func`` (:func:`_kill_at`)."""
    proc = _FORK.Process(target=_child, args=(argv, str(cwd), str(cwd / ".child"), func, k,
                                              None if mark is None else str(mark)))
    proc.start()
    proc.out = cwd / ".child"
    return proc


def _output(proc) -> tuple[str, str]:
    return tuple(Path(f"{proc.out}.{n}").read_text() for n in ("stdout", "stderr"))


def _kill_at(proc, mark: Path, timeout: float = 90) -> str | None:
    """Wait until the hook reports it is blocking, then SIGKILL; None if it never did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mark.exists():
            proc.kill()  # SIGKILL
            proc.join(30)
            assert proc.exitcode == -signal.SIGKILL, proc.exitcode
            return mark.read_text()
        if proc.exitcode is not None:
            assert proc.exitcode == 0, f"the process failed by itself: {_output(proc)[1][-2000:]}"
            return None  # finished before the k-th call: nothing to kill
        time.sleep(0.005)
    proc.kill()
    raise AssertionError("the process neither reached the kill point nor finished")


def _kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        return True


def _fresh(argv: list[str], cwd: Path) -> subprocess.Popen:
    """``python -m astrid_airflow.cli argv``: the command from the interpreter's start."""
    return subprocess.Popen([sys.executable, "-m", "astrid_airflow.cli", *argv], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """``astrid argv`` to its end, in a forked child."""
    proc = _spawn(argv, cwd)
    proc.join(180)
    if proc.exitcode is None:
        proc.kill()
        raise AssertionError(f"astrid {argv[0]} did not finish in 180 s")
    return subprocess.CompletedProcess(argv, proc.exitcode, *_output(proc))


def _check_store(root: Path, name: str) -> list[str]:
    """Every visible version is complete and valid; returns the visible versions."""
    if not (root / name).exists():
        return []
    store = ArtefactStore(root)
    try:
        versions = store.versions(name)
    except Exception:  # no visible version at all
        versions = []
    for row in store.list(name) if versions else []:
        assert row["error"] is None, row
        artefact = store.load(name, row["version"])
        assert artefact.target == "class"
        # the gate suite is written before artefact.json, so it is there too
        json.loads(store.read_file(name, row["version"], "suite.json"))
    for entry in os.listdir(root / name):
        if entry.startswith("v"):
            assert (root / name / entry / "artefact.json").is_file(), \
                f"partial version directory visible: {entry}"
    return versions


# -------------------------------------------------------------------------- learner

LEARN_POINTS = [("fsync", 1), ("fsync", 2), ("fsync", 3), ("fsync", 4), ("fsync", 5),
                ("fsync", 6), ("rename", 1)]


@pytest.mark.parametrize("func,k", LEARN_POINTS, ids=[f"{f}{k}" for f, k in LEARN_POINTS])
def test_learner_killed_mid_write_leaves_no_partial_version(data, tmp_path, func, k):
    store = tmp_path / "store"
    mark = tmp_path / "mark"
    argv = ["learn", str(data / "syn.parquet"), *LEARN, "--store", str(store), "--name", "n"]
    where = _kill_at(_spawn(argv, tmp_path, func, k, mark), mark)
    assert where is not None and "_store.py" in where, where  # killed inside the save
    visible = _check_store(store, "n")
    # fsync 1-4: the four files of the temporary directory (artefact, suite, learn record,
    # the manifest last); fsync 5: that directory; rename 1: the complete temporary directory
    # not yet renamed -> nothing visible. fsync 6: renamed, parent directory not yet
    # synced -> the complete version is visible.
    assert visible == (["v0001"] if (func, k) == ("fsync", 6) else []), (where, visible)
    after = _run(argv, tmp_path)
    assert after.returncode == 0, after.stderr
    # a complete version left visible is the same learn of the same table: reused
    assert _check_store(store, "n") == ["v0001"]
    assert ("reused artefact n@v0001" in after.stdout) == bool(visible)


def test_learner_kill_points_hit_the_store_write(data, tmp_path):
    """The injected kill points really land inside the store's atomic write (so the test
    above tests what it claims): the temporary directory exists, complete or not, and
    no version is visible."""
    store = tmp_path / "store"
    mark = tmp_path / "mark"
    argv = ["learn", str(data / "syn.parquet"), *LEARN, "--store", str(store), "--name", "n"]
    where = _kill_at(_spawn(argv, tmp_path, "rename", 1, mark), mark)
    assert where is not None and "_save_local" in where, where
    hidden = [e for e in os.listdir(store / "n") if e.startswith(".saving-")]
    assert len(hidden) == 1  # the complete temporary version, never renamed
    assert sorted(os.listdir(store / "n" / hidden[0])) == ["artefact.json", "learn.json",
                                                       "manifest.json", "suite.json"]
    assert _check_store(store, "n") == []
    assert ArtefactStore(store).names() == []


@pytest.mark.parametrize("delay", [0.5, 2.0, 4.0])
def test_learner_killed_after_a_delay(data, tmp_path, delay):
    store = tmp_path / "store"
    argv = ["learn", str(data / "syn.parquet"), *LEARN, "--store", str(store), "--name", "n"]
    _kill_after(_fresh(argv, tmp_path), delay)
    visible = _check_store(store, "n")
    after = _run(argv, tmp_path)
    assert after.returncode == 0, after.stderr
    assert _check_store(store, "n") == ["v0001"]  # a visible version is reused
    assert ("reused artefact n@v0001" in after.stdout) == bool(visible)


# ------------------------------------------------------------------------- shuffler

@pytest.fixture(scope="module")
def shuffle_setup(data):
    """The shuffle's arguments (but the output) and the surrogate an undisturbed run
    writes (the reference)."""
    return _shuffle_argv(data, data / "store"), (data / "reference.parquet").read_bytes()


SHUFFLE_POINTS = [("fsync", 1), ("fsync", 2), ("link", 1)]


@pytest.mark.parametrize("func,k", SHUFFLE_POINTS, ids=[f"{f}{k}" for f, k in SHUFFLE_POINTS])
def test_shuffler_killed_mid_write_leaves_no_partial_surrogate(shuffle_setup, tmp_path, func,
                                                               k):
    argv, reference = shuffle_setup
    out = tmp_path / "out" / "surrogate.parquet"
    mark = tmp_path / "mark"
    where = _kill_at(_spawn([*argv, str(out)], tmp_path, func, k, mark), mark)
    assert where is not None, "the shuffler finished before the kill point"
    assert "atomic" in where or "_publish_local" in where or "_fsync" in where, where
    # Visible output: none, or the complete file.
    if out.exists():
        assert out.read_bytes() == reference
    else:
        assert func != "fsync" or k == 1 or "_fsync_dir" in where
    visible = [p.name for p in out.parent.iterdir() if not p.name.startswith(".")] \
        if out.parent.exists() else []
    assert visible in ([], ["surrogate.parquet"])
    again = [*argv, str(out)] + (["--overwrite"] if out.exists() else [])
    r = _run(again, tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference


def test_shuffler_killed_before_publish_leaves_only_a_hidden_temporary(shuffle_setup,
                                                                       tmp_path):
    argv, reference = shuffle_setup
    out = tmp_path / "surrogate.parquet"
    mark = tmp_path / "mark"
    where = _kill_at(_spawn([*argv, str(out)], tmp_path, "link", 1, mark), mark)
    assert where is not None and "_publish_local" in where, where
    assert not out.exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".surrogate")]
    assert len(leftovers) == 1 and leftovers[0].endswith(".tmp")  # hidden, never published
    r = _run([*argv, str(out)], tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference


@pytest.mark.parametrize("delay", [0.5, 2.5])
def test_shuffler_killed_after_a_delay(shuffle_setup, tmp_path, delay):
    argv, reference = shuffle_setup
    out = tmp_path / "surrogate.parquet"
    _kill_after(_fresh([*argv, str(out)], tmp_path), delay)
    assert not out.exists() or out.read_bytes() == reference
    r = _run([*argv, str(out)] + (["--overwrite"] if out.exists() else []), tmp_path)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == reference


# ------------------------------------------------------------- retried Airflow tasks

def _ctx(task_id: str) -> dict:
    import types

    ti = types.SimpleNamespace(dag_id="publish", run_id="scheduled__2026-03-01T00:00:00",
                               task_id=task_id, map_index=-1)
    return {"ti": ti, "run_id": ti.run_id}


def _without_clock(text: str) -> str:
    """Artefact JSON without the fields that record *when* and *how long*, and without
    ``files`` (the store adds it on saving: the suite's digest, which holds created_at)."""
    d = json.loads(text)
    d.pop("created_at")
    d.pop("files", None)
    d["result"].pop("seconds")
    d["result"].pop("estimate", None)  # the cost estimate and its actual time
    return json.dumps(d, sort_keys=True)


@pytest.mark.filterwarnings("ignore:.*cannot be called outside of the Task Runner")
def test_retried_learn_and_shuffle_tasks_reproduce_artefact_and_surrogate(data, tmp_path,
                                                                          monkeypatch):
    """Attempt 1 of each task dies mid-way (a non-AstridError, so Airflow retries); the
    retry with the same task-instance context reproduces the artefact (identical JSON
    apart from ``created_at`` and ``result.seconds``) and the surrogate byte for byte."""
    from astrid_airflow.operators.learn import AstridLearnOperator
    from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator

    from astrid_airflow.release import _surrogate

    def learn(store):
        return AstridLearnOperator(task_id="learn", reference=str(data / "syn.parquet"),
                                   store=str(store), name="n", classifier="nb", n_search=3,
                                   n_test=5, remedies=False).execute(_ctx("learn"))

    # attempt 1 computes the artefact, then the worker dies while saving it
    captured = {}
    real_save = ArtefactStore.save

    def dying_save(self, name, artefact, **kw):
        captured["json"] = artefact.to_json()
        raise RuntimeError("worker lost")

    monkeypatch.setattr(ArtefactStore, "save", dying_save)
    with pytest.raises(RuntimeError, match="worker lost"):
        learn(tmp_path / "store")
    monkeypatch.setattr(ArtefactStore, "save", real_save)
    retry = learn(tmp_path / "store")
    assert retry["learned"] and retry["version"] == "v0001"
    saved = (tmp_path / "store" / "n" / "v0001" / "artefact.json").read_text()
    assert _without_clock(saved) == _without_clock(captured["json"])
    # a second retry (the first retry's XCom push failed, say) does not learn again
    again = learn(tmp_path / "store")
    assert not again["learned"] and again["version"] == "v0001"
    assert ArtefactStore(tmp_path / "store").versions("n") == ["v0001"]
    # a fresh store with the same run gives the same artefact (same derived seed)
    other = learn(tmp_path / "store2")
    assert _without_clock((tmp_path / "store2" / "n" / "v0001" / "artefact.json")
                          .read_text()) == _without_clock(saved)

    def shuffle(out):
        return GoldenEyeShuffleOperator(task_id="shuffle", table=str(data / "syn.parquet"),
                                        store=str(tmp_path / "store"), artefact="n@v0001",
                                        out=str(out), utility=False).execute(_ctx("shuffle"))

    # attempt 1 dies half-way through writing the surrogate
    out = tmp_path / "staging" / "surrogate.parquet"
    real_write = _surrogate._write_shuffled
    calls = []

    def dying_write(*args, **kw):
        calls.append(1)
        real_write(*args, **kw)
        raise RuntimeError("worker lost")

    monkeypatch.setattr(_surrogate, "_write_shuffled", dying_write)
    with pytest.raises(RuntimeError, match="worker lost"):
        shuffle(out)
    assert calls and not out.exists()
    monkeypatch.setattr(_surrogate, "_write_shuffled", real_write)
    first = shuffle(out)
    bytes_first = out.read_bytes()
    second = shuffle(out)  # a retry after a successful attempt overwrites with the same
    assert out.read_bytes() == bytes_first
    assert first["seed"] == second["seed"]
    clean = shuffle(tmp_path / "clean" / "surrogate.parquet")
    assert (tmp_path / "clean" / "surrogate.parquet").read_bytes() == bytes_first
    assert clean["metrics"]["intact_row_proportion"] == first["metrics"][
        "intact_row_proportion"]
    assert other["version"] == "v0001"
