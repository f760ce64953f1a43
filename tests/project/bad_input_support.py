"""The bad-input matrix's machinery (tests/project/test_bad_input_matrix.py): the
working directory, the ``Case`` and ``Outcome`` records, the case-building helpers,
running a case and checking its outcome."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from astrid_airflow._errors import (
    AstridError,
)

REPO = Path(__file__).resolve().parents[2]
TARGET = "class"

# --------------------------------------------------------------------- working dir


def reference_table(n_per_class: int = 30) -> pd.DataFrame:
    """Synthetic example plus an integer and a categorical column."""
    from astrid_airflow import make_synthetic

    rng = np.random.default_rng(0)
    t = make_synthetic(n_per_class, random_state=0)
    t["a5"] = rng.integers(0, 9, len(t))
    t["a6"] = pd.Categorical(rng.choice(["x", "y"], len(t)), categories=["x", "y"])
    return t[["a1", "a2", "a3", "a4", "a5", "a6", TARGET]]


def _try_readonly_mount(path: Path) -> str:
    """Make ``path`` unwritable even for root: a read-only tmpfs mount if we may mount,
    else (non-root) mode 0555. Returns how, or "" when neither works."""
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") and os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
                           capture_output=True)
        if r.returncode == 0:
            return "mount"
    if os.geteuid() != 0:
        path.chmod(0o555)
        return "chmod"
    return ""


def release_readonly(path: Path, how: str) -> None:
    if how == "mount":
        subprocess.run(["umount", str(path)], capture_output=True)
    elif how == "chmod":
        path.chmod(0o755)


def make_workdir(root: Path) -> dict[str, Any]:
    """Inputs shared by every case: reference table, a learned artefact, a surrogate."""
    from astrid_airflow import GroupingArtefact, astrid
    from astrid_airflow.release._store import ArtefactStore
    from astrid_airflow.release._surrogate import shuffle_file

    root.mkdir(parents=True, exist_ok=True)
    t = reference_table()
    t.to_csv(root / "ref.csv", index=False)
    t.to_parquet(root / "ref.parquet", index=False)
    result = astrid(t, target=TARGET, classifier="nb", n_search=2, n_test=3, random_state=0,
                    progress=False)
    artefact = GroupingArtefact.from_result(result, t, created_at="2026-01-01T00:00:00Z")
    from astrid_airflow.gate._suite import gate_extra_files

    store = ArtefactStore(root / "store")
    store.save("m", artefact, extra_files=gate_extra_files(artefact))
    store.save("legacy", artefact)  # as saved before the gate existed: no suite.json
    (root / "artefact.json").write_text(artefact.to_json())
    shuffle_file(root / "ref.parquet", artefact, root / "surr.parquet", random_state=0)
    (root / "afile").write_text("a regular file")
    how = _try_readonly_mount(root / "ro")
    return {"root": root, "artefact": artefact, "table": t, "readonly": how}


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (hidden ones too) with size and mtime, and every file of
    the in-memory object store (``memory://...``, with size and a hash of its bytes).

    Empty directories (e.g. a staging directory an operator creates before it fails)
    are not outputs; a directory with anything in it shows through its files.
    """
    from fsspec.implementations.memory import MemoryFileSystem

    out = {}
    for key, f in list(MemoryFileSystem.store.items()):
        data = f.getvalue()
        out[f"memory://{key}"] = (len(data), hash(data))
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


# ------------------------------------------------------------------------- the cases

@dataclass(frozen=True)
class Case:
    """One bad input.

    ``prepare(work)`` writes what the case needs into the working dir and returns the
    argv (``cli``) or a thunk (``library``/``operator``). ``expect`` is an exception class,
    ``"exit 2"``, ``"warning"`` or ``"note"`` (accepted, but reported), ``"gate FAILED"``
    (a library call returning a failed :class:`GateResult`) or ``"exit 143"`` (a CLI
    command run in a subprocess and sent SIGTERM once its joblib workers run); ``match``
    is a regex the message must contain.
    """

    id: str
    layer: str
    input: str
    prepare: Callable[[dict], Any]
    expect: Any
    match: str
    bug: str | None = None
    needs_readonly: bool = False
    # for accepted cases: ``verify(root, new_files)`` inspects the outputs before they are
    # removed and returns what is wrong with them ("" when nothing is)
    verify: Callable[[Path, tuple], str] | None = None


def _csv(work, name, frame):
    frame.to_csv(work["root"] / name, index=False)
    return name


def _pq(work, name, table):
    if isinstance(table, pd.DataFrame):
        table.to_parquet(work["root"] / name, index=False)
    else:
        pq.write_table(table, work["root"] / name)
    return name


def _t(work):
    return work["table"].copy()


def _write(work, name, data):
    p = work["root"] / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return name


LEARN = ["--target", TARGET, "--classifier", "nb", "--r-search", "2", "--r-test", "3",
         "--seed", "0", "--quiet"]


def _learn(path, *extra):
    return ["learn", path, *LEARN, *extra]


def _shuffle(path, out="out.parquet", ref="store/m", *extra):
    return ["shuffle", path, "--artefact", ref, "--out", out, "--seed", "0", "--no-utility",
            *extra]


def _lib(fn):
    """A library call run with the working dir as cwd."""
    return fn


def _ctx():
    ti = types.SimpleNamespace(dag_id="bad_input", run_id="manual__1", task_id="t",
                               map_index=-1)
    return {"ti": ti, "run_id": "manual__1"}


def _op(kind, **kw):
    def thunk():
        if kind == "learn":
            from astrid_airflow.operators.learn import AstridLearnOperator as Op

            kw.setdefault("n_search", 2)
            kw.setdefault("n_test", 3)
            kw.setdefault("classifier", "nb")
            kw.setdefault("name", "m")
            kw.setdefault("random_state", 0)
        elif kind == "shuffle":
            from astrid_airflow.operators.shuffle import GoldenEyeShuffleOperator as Op

            kw.setdefault("artefact", "m@latest")
            kw.setdefault("utility", False)
        elif kind == "gate":
            from astrid_airflow.operators.gate import SurrogateGateOperator as Op

            kw.setdefault("artefact", "m@latest")
            kw.setdefault("original", "ref.parquet")
        else:
            from astrid_airflow.operators.publish import PublishSurrogateOperator as Op
        kw.setdefault("task_id", kind)
        if kind != "publish":
            kw.setdefault("store", "store")
        return Op(**kw).execute(_ctx())
    return thunk


def _fail():
    from astrid_airflow.operators._compat import AirflowFailException

    return AirflowFailException


BUG_ALL_NAN = ("missing check: an all-missing attribute column is accepted silently by "
               "check_table/astrid (expected DataError naming the column)")
BUG_CONSTANT = ("missing check: a constant attribute column is accepted silently "
                "(expected DataError naming it, suggesting --clean)")
BUG_DUP_CSV = ("read_table(CSV) lets pandas rename a duplicated header 'a2' to 'a2.1' "
               "silently (expected DataError: duplicated column name)")
BUG_DUP_PARQUET = ("read_table(Parquet) with duplicated column names raises a multi-line "
                   "ArrowInvalid dump (expected one line: duplicated column name)")
BUG_ID_LIKE = ("missing check: no warning that an ID-like column (all values unique) makes "
               "every row linkable")
BUG_CARDINALITY = ("missing check: a categorical with ~n/2 levels is one-hot encoded "
                   "(dense n x levels matrix) without a warning or error")
BUG_UNSEEN_NOTE = ("astrid shuffle drops the artefact check's notes: unseen categories in "
                   "a new batch are not reported (expected a note naming column and values)")
BUG_EMPTY_SURROGATE = ("make_surrogate accepts an empty table and returns an empty "
                       "surrogate (the CLI and operators reject it: 'The table is empty')")
BUG_NUMPY_REPR = ("check_table's single-class message shows the label as 'np.int64(1)' "
                  "(a NumPy repr; counts.index[0] is a NumPy scalar again after .tolist())")
BUG_GATE_MISSING = ("SurrogateGateOperator hashes the surrogate before checking it exists: "
                    "a missing file raises a raw, retryable FileNotFoundError")


_INTACT = "expect_surrogate_intact_row_proportion_to_be_at_most"


# ------------------------------------------------------------------------- running

@dataclass
class Outcome:
    kind: str  # "exit", "raise", "ok"
    type: str = ""
    message: str = ""
    lines: int = 0
    rc: Any = None
    stdout: str = ""
    warnings: tuple = ()
    new_files: tuple = ()
    changed_files: tuple = ()
    accepted_outputs: tuple = ()
    exc: Any = None
    verify_error: str = ""


def run_case(case: Case, work: dict) -> Outcome:
    """Run one case in the working dir and describe what happened."""
    root = work["root"]
    with contextlib.chdir(root):
        action = case.prepare(work)
        before = snapshot(root)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if case.layer == "cli" and case.expect == "exit 143":
                out = _run_cli_terminated(action, root)
            elif case.layer == "cli":
                out = _run_cli(action)
            else:
                try:
                    value = action()
                except Exception as exc:  # the point: what comes out
                    out = Outcome("raise", type=type(exc).__name__, message=str(exc),
                                  lines=len(str(exc).splitlines()))
                    out.exc = exc
                else:
                    notes = getattr(value, "notes", None)
                    out = Outcome("ok", message="; ".join(notes) if notes else "")
                    if hasattr(value, "success") and hasattr(value, "failed"):  # GateResult
                        out.message = ("gate PASSED" if value.success else
                                       f"gate FAILED: {', '.join(value.failed)}")
        after = snapshot(root)
    out.warnings = tuple(str(w.message) for w in caught
                         if not _ignorable_warning(str(w.message)))
    out.new_files = tuple(sorted(set(after) - set(before)))
    expect = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    if out.kind in ("ok", "exit") and out.rc in (None, 0) and \
            ({"note", "warning"} & set(expect)):
        # accepted on purpose: its outputs are fine, but must not leak into other cases
        if case.verify is not None:
            out.verify_error = case.verify(root, out.new_files)
        for rel in sorted(out.new_files, reverse=True):
            (root / rel).unlink()
        out.accepted_outputs, out.new_files = out.new_files, ()
    out.changed_files = tuple(sorted(k for k in before if k in after and before[k] != after[k]))
    return out


def _ignorable_warning(text: str) -> bool:
    # Airflow's own notices when operators run outside a task runner.
    return "outside of the Task Runner" in text or "Task Runner" in text


def _run_cli(argv: list[str]) -> Outcome:
    from astrid_airflow.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
    text = err.getvalue()
    return Outcome("exit", rc=rc, message=text.strip(), lines=len(text.splitlines()),
                   stdout=out.getvalue())


def _run_cli_terminated(argv: list[str], root: Path) -> Outcome:
    """Run ``astrid ARGV`` in a subprocess and send SIGTERM once its joblib workers run.

    The child's temporary directory (``TMPDIR``, ``JOBLIB_TEMP_FOLDER``) is under
    ``root``, so a memory-mapped folder or file left behind shows as an output.
    """
    import signal

    temp = root / ".sigterm-tmp"
    temp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(temp), JOBLIB_TEMP_FOLDER=str(temp))
    proc = subprocess.Popen([sys.executable, "-m", "astrid_airflow.cli", *argv], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(p.name.startswith("astrid-fits-") for p in temp.iterdir()):
            if proc.poll() is not None or time.monotonic() > deadline:
                break  # finished (or never started) before its workers: check() says so
            time.sleep(0.05)
        else:
            time.sleep(1.5)  # the workers are fitting, their arrays memory-mapped
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return Outcome("exit", rc=proc.returncode, message=err.strip(),
                   lines=len(err.splitlines()), stdout=out)


def check(case: Case, out: Outcome) -> None:
    """Assert ``out`` is the behaviour ``case`` requires."""
    assert not out.new_files, f"output written: {out.new_files}"
    assert not out.changed_files, f"files changed: {out.changed_files}"
    assert not out.verify_error, out.verify_error
    expect = case.expect if isinstance(case.expect, tuple) else (case.expect,)
    if expect == ("exit 143",):  # terminated, not bad input: 128 + SIGTERM
        assert out.rc == 143, (out.rc, out.message)
        assert out.lines == 1, f"expected one line on stderr, got {out.lines}: {out.message}"
        assert "leaked" not in out.message and "Traceback" not in out.message, out.message
        assert out.stdout == "", out.stdout
        assert re.search(case.match, out.message), out.message
        return
    if expect == ("gate FAILED",):
        assert out.kind == "ok", (out.type, out.message)
        assert re.search(case.match, out.message), out.message
        return
    if case.layer == "cli" and "note" in expect:
        assert out.rc == 0, (out.rc, out.message)
        assert re.search(case.match, out.message + "\n" + out.stdout), (out.message,
                                                                        out.stdout)
        return
    if case.layer == "cli":
        assert out.rc == 2, (out.rc, out.message)
        assert out.lines == 1, f"expected one line on stderr, got {out.lines}: {out.message}"
        assert "Traceback" not in out.message and out.stdout == "", out.stdout
        assert re.match(r"astrid [a-z]+: error: ", out.message), out.message
        assert re.search(case.match, out.message), out.message
        return
    if "warning" in expect or "note" in expect:
        texts = list(out.warnings) + ([out.message] if out.kind == "ok" else [])
        hit = any(re.search(case.match, t) for t in texts)
        errors = [e for e in expect if isinstance(e, type)]
        if out.kind == "raise" and errors:
            assert any(out.type == e.__name__ for e in errors), (out.type, out.message)
            assert re.search(case.match, out.message), out.message
            return
        assert out.kind == "ok", (out.type, out.message)
        assert hit, texts
        return
    assert out.kind == "raise", f"accepted silently: {out}"
    assert out.lines == 1, f"message is not one line: {out.message!r}"
    assert re.search(case.match, out.message), out.message
    if expect == ("fail",):
        assert out.type == "AirflowFailException", (out.type, out.message)
    else:
        (cls,) = expect
        assert isinstance(out.exc, cls) and isinstance(out.exc, AstridError), out.type
