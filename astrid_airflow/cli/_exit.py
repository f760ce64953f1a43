"""How the ``astrid`` process ends: Python's own shutdown, then no native teardown.

Arrow's thread pools can still be winding down when the interpreter finalises; their
C++ destructors then call ``std::terminate`` and the process dies with SIGABRT (exit
134, "terminate called without an active exception") after it printed its result
(apache/arrow#34314, open; seen here once under load on a bad-input exit 2). So the
console script runs what Python's shutdown runs for Python code (the ``threading``
shutdown: non-daemon threads joined, loky's and concurrent.futures' exit hooks; then the
``atexit`` handlers: ``weakref.finalize`` cleanups such as temporary directories,
``logging.shutdown``), flushes the standard streams and leaves with ``os._exit``, which
skips only the C-level finalisation where that abort happens.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def exit_process(code: int) -> NoReturn:
    """End the process with ``code`` once Python-level shutdown work is done."""
    shutdown = getattr(threading, "_shutdown", None)  # what Py_FinalizeEx calls first
    if shutdown is not None and threading.current_thread() is threading.main_thread():
        shutdown()
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            code = code or 1
    os._exit(code)


def run_console(main: Callable[[], int]) -> NoReturn:
    """``main()``'s exit code (argparse's ``SystemExit`` included) as the process's."""
    try:
        code = main()
    except SystemExit as exc:  # --help, usage errors: argparse has printed its text
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    exit_process(code)
