"""Issue 53: the ``astrid`` process ends with its own exit code, never SIGABRT.

Arrow's thread pools can abort a finished process in the interpreter's native teardown
(apache/arrow#34314); the console script now leaves with ``os._exit`` once Python's own
shutdown work has run. These tests pin what must survive that: the exit code, every
byte written to stdout and stderr, ``atexit`` handlers, ``weakref.finalize`` cleanups
(temporary directories) and non-daemon threads.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent("""
    import atexit, pathlib, sys, tempfile, threading, time
    out = pathlib.Path(sys.argv[1])
    atexit.register(lambda: (out / "atexit").write_text("ran"))
    kept = tempfile.TemporaryDirectory(dir=out)  # cleaned by its finaliser at exit
    (out / "tmpdir").write_text(kept.name)
    def late():
        time.sleep(0.3)
        (out / "thread").write_text("joined")
    threading.Thread(target=late).start()
    import pyarrow.parquet as pq, pyarrow as pa  # the thread pools the abort comes from
    pq.write_table(pa.table({"x": list(range(10_000))}), out / "t.parquet")
    pq.read_table(out / "t.parquet")
    sys.stdout.write("x" * 200_000)  # more than a pipe holds: must all be flushed
    sys.argv = ["astrid", *sys.argv[2:]]
    from astrid_airflow.cli import console
    console()
""")


@pytest.mark.parametrize("argv, code", [
    (["publish", "--help"], 0),  # argparse's own exit
    (["learn", "missing.csv", "--target", "class", "--store", "s"], 2),  # bad input
    (["no-such-command"], 2),  # a usage error
])
def test_the_console_exits_with_its_code_after_pythons_shutdown_work(tmp_path, argv, code):
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path), *argv],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == code, proc.stderr[-2000:]
    assert proc.stdout.startswith("x" * 200_000)
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "joined"
    assert not __import__("os").path.exists((tmp_path / "tmpdir").read_text())
    if code == 2 and argv[0] == "learn":
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("astrid learn: error:"), proc.stderr


def test_python_m_runs_the_same_console(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "astrid_airflow.cli", "learn",
                           "missing.csv", "--target", "class", "--store", "s"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr


def test_the_resource_trackers_warning_is_filtered_once_in_its_process(monkeypatch):
    # the tracker is its own process and inherits PYTHONWARNINGS; its warning is a
    # UserWarning raised in its module (what broke "one line on stderr" after SIGTERM)
    import os
    import subprocess
    import sys

    from astrid_airflow.cli import TRACKER_WARNINGS, _quiet_resource_tracker

    monkeypatch.setenv("PYTHONWARNINGS", "ignore::DeprecationWarning")
    _quiet_resource_tracker()
    _quiet_resource_tracker()  # every main() call: added once, the user's own kept
    held = os.environ["PYTHONWARNINGS"]
    assert held == f"ignore::DeprecationWarning,{TRACKER_WARNINGS}"
    code = ("import warnings; from joblib.externals.loky.backend import resource_tracker "
            "as rt; exec(compile(\"warnings.warn('resource_tracker: /loky-x: gone')\", "
            "rt.__file__, 'exec'), vars(rt))")
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "PYTHONWARNINGS": held})
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONWARNINGS": ""})
    assert "gone" in loud.stderr  # the warning shows without the filter
    assert quiet.stderr == ""
