"""Concurrency: processes racing for the same store name or the same output file.

The races are forced, not hoped for: a wrapper holds each process at its first call of
the system call that publishes (``os.rename`` for a store version, ``os.link`` for a
surrogate) until every racer has arrived, so all of them have chosen the same version
number / checked the same absent output before any of them publishes.
(``tests/release/test_store.py`` races threads and processes through the Python API; these tests
race the real ``astrid`` command end to end.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from astrid_airflow import make_synthetic
from astrid_airflow.release._store import ArtefactStore

BARRIER = r"""
import os, sys, time
func, n, gate = sys.argv[1], int(sys.argv[2]), sys.argv[3]
real = getattr(os, func)
done = [False]
def hooked(*args, **kwargs):
    if not done[0]:
        done[0] = True
        open(os.path.join(gate, f"arrived-{os.getpid()}"), "w").close()
        deadline = time.monotonic() + 120
        while len(os.listdir(gate)) < n and time.monotonic() < deadline:
            time.sleep(0.01)
    return real(*args, **kwargs)
setattr(os, func, hooked)
from astrid_airflow.cli import main
sys.exit(main(sys.argv[4:]))
"""

# the raw release: these tests are about atomic writes, not the privacy choice
# (the synthetic table has no release within the default policy)
LEARN = ["--target", "class", "--classifier", "nb", "--r-search", "2", "--r-test", "3",
         "--quiet", "--no-remedies"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("race_data")
    make_synthetic(40, random_state=0).to_parquet(d / "syn.parquet", index=False)
    return d


def _race(argvs: list[list[str]], cwd: Path, func: str | None) -> list:
    gate = cwd / "gate"
    gate.mkdir()
    procs = []
    for argv in argvs:
        cmd = [sys.executable, "-m", "astrid_airflow.cli", *argv] if func is None else \
            [sys.executable, "-c", BARRIER, func, str(len(argvs)), str(gate), *argv]
        procs.append(subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=300)
        out.append((p.returncode, stdout, stderr))
    if func is not None:
        assert len(os.listdir(gate)) == len(argvs), "not every racer reached the barrier"
    return out


def _saved_version(stdout: str) -> str:
    m = re.search(r"saved artefact n@(v\d+)", stdout)
    assert m, stdout
    return m.group(1)


@pytest.mark.parametrize("forced", [True, False], ids=["forced-collision", "free-race"])
def test_learners_saving_to_one_name_get_distinct_complete_versions(data, tmp_path, forced):
    store = tmp_path / "store"
    n = 2 if forced else 3
    argvs = [["learn", str(data / "syn.parquet"), *LEARN, "--seed", str(seed),
              "--store", str(store), "--name", "n"] for seed in range(n)]
    results = _race(argvs, tmp_path, "rename" if forced else None)
    for rc, _, stderr in results:
        assert rc == 0, stderr
    versions = [_saved_version(stdout) for _, stdout, _ in results]
    assert sorted(versions) == [f"v{i:04d}" for i in range(1, n + 1)]
    s = ArtefactStore(store)
    assert s.versions("n") == sorted(versions)
    for seed, vid in enumerate(versions):  # each saver's version holds its own artefact
        assert s.load("n", vid).random_state == seed
        assert s.read_file("n", vid, "suite.json")
    assert all(row["error"] is None for row in s.list("n"))
    assert not [e for e in os.listdir(store / "n") if e.startswith(".")]  # no leftovers


def test_shufflers_racing_for_one_output_one_wins_the_other_fails_cleanly(data, tmp_path):
    store = tmp_path / "store"
    r = subprocess.run([sys.executable, "-m", "astrid_airflow.cli", "learn",
                        str(data / "syn.parquet"), *LEARN, "--seed", "0", "--store",
                        str(store), "--name", "n"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    base = ["shuffle", str(data / "syn.parquet"), "--artefact", str(store / "n"),
            "--no-utility", "--quiet"]  # stderr: the loser's one error line, no progress
    refs = {}
    for seed in (1, 2):  # what each racer would write alone
        ref = tmp_path / f"ref{seed}.parquet"
        r = subprocess.run([sys.executable, "-m", "astrid_airflow.cli", *base, "--seed",
                            str(seed), "--out", str(ref)], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stderr
        refs[seed] = ref.read_bytes()
    assert refs[1] != refs[2]
    out = tmp_path / "race" / "surrogate.parquet"
    results = _race([[*base, "--seed", str(seed), "--out", str(out)] for seed in (1, 2)],
                    tmp_path, "link")
    codes = sorted(rc for rc, _, _ in results)
    assert codes == [0, 2], results
    winner = 1 if results[0][0] == 0 else 2
    loser_err = results[2 - winner][2]
    assert loser_err.count("\n") == 1 and "Refusing to overwrite existing" in loser_err
    assert out.read_bytes() == refs[winner]  # complete, and the winner's, not a mix
    # the winner's metrics record beside it, nothing of the loser's
    assert sorted(p.name for p in out.parent.iterdir()) == ["surrogate.metrics.json",
                                                            "surrogate.parquet"]
    import json

    assert json.loads((out.parent / "surrogate.metrics.json").read_text())["seed"] == winner


def test_store_listing_while_a_learner_saves_never_sees_a_partial_version(data, tmp_path):
    """A reader polling the store during a save sees either nothing or a complete
    version, never a version directory without its artefact.json."""
    store = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-m", "astrid_airflow.cli", "learn",
                             str(data / "syn.parquet"), *LEARN, "--seed", "0", "--store",
                             str(store), "--name", "n"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen = 0
    while proc.poll() is None or seen == 0:
        if (store / "n").is_dir():
            for entry in os.listdir(store / "n"):
                if re.fullmatch(r"v\d{4,}", entry):
                    assert (store / "n" / entry / "artefact.json").is_file()
                    assert ArtefactStore(store).load("n", entry).random_state == 0
                    seen += 1
        if proc.poll() is not None and seen == 0:
            break
        time.sleep(0.002)
    assert proc.wait(60) == 0, proc.stderr.read()
    assert ArtefactStore(store).versions("n") == ["v0001"]
