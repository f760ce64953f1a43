"""Small helpers shared by the subcommands' handlers (their options: ``_options``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (NaN becomes null)."""
    from astrid_airflow.io import plain

    sys.stdout.write(json.dumps(plain(obj), indent=2, sort_keys=False) + "\n")


def warn_loudly(command: str, message: str) -> None:
    """A warning not to be missed in a long log: between two bars on stderr."""
    bar = "!" * 78
    print(f"{bar}\nastrid {command}: WARNING: {message}\n{bar}", file=sys.stderr)


@contextlib.contextmanager
def progress_lines(args: argparse.Namespace) -> Iterator[None]:
    """The stage's estimate and progress lines on stderr while the command runs.

    The library logs them on the ``astrid_airflow`` logger at INFO (an Airflow task log
    shows them through the task runner's handlers); a plain ``astrid`` process has no
    handler, so one writing the bare lines to stderr is added for the command's
    duration, unless ``--quiet`` or logging is already set up (a program calling
    ``main`` with its own handlers sees them there).
    """
    log = logging.getLogger("astrid_airflow")
    if getattr(args, "quiet", False) or log.handlers or logging.getLogger().handlers:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def run_here_or_on_dask(args: argparse.Namespace, here: Callable[..., Any],
                        on_dask: Callable[..., Any], data: Any, **kwargs: Any) -> Any:
    """``here(data, n_jobs=args.jobs, **kwargs)``, or with ``--scheduler``
    ``on_dask(data, scheduler=args.scheduler, **kwargs)``: the same fits on that cluster.

    ``--jobs`` is refused with ``--scheduler``: the cluster's workers set the parallelism.
    """
    if not args.scheduler:
        return here(data, n_jobs=args.jobs, **kwargs)
    if args.jobs != 1:
        from astrid_airflow._errors import ParameterError

        raise ParameterError("--jobs does not go with --scheduler: the cluster's "
                             "workers set the parallelism.")
    return on_dask(data, scheduler=args.scheduler, **kwargs)
