"""Small helpers shared by the subcommands' handlers (their options: ``_options``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (NaN becomes null)."""
    from astrid_airflow.io import plain

    sys.stdout.write(json.dumps(plain(obj), indent=2, sort_keys=False) + "\n")


def warn_loudly(command: str, message: str) -> None:
    """A warning not to be missed in a long log: between two bars on stderr."""
    bar = "!" * 78
    print(f"{bar}\nastrid {command}: WARNING: {message}\n{bar}", file=sys.stderr)


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
