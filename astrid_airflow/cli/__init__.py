"""The ``astrid`` command line.

Each subcommand (``SUBCOMMANDS``) lives in its own module, which defines
``DESCRIPTION`` (the head of its ``--help``; None: none), ``add_arguments(parser)`` (its
options, the shared ones from ``_options``) and ``run(args)`` (its handler, returning
the exit code); heavy imports happen inside ``run``.

Bad input (any :class:`~astrid_airflow.AstridError`, unreadable or missing files)
prints one line on stderr and exits 2. SIGTERM (a scheduler's task timeout) stops the
command where it is: joblib workers are stopped, their temporary files removed, nothing
is saved, and the command prints one line and exits 143 (128 + SIGTERM, the shell's
convention, so a scheduler reports "terminated" rather than "bad input").
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import warnings
from collections.abc import Sequence

# subcommand -> (its module in this package, its line in `astrid --help`), in that order
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "learn": ("_learn", "find the significant grouping of a table (ASTRID)"),
    "test": ("_testcmd", "test one grouping (Problem 1)"),
    "synth": ("_synth", "write the paper's synthetic dataset"),
    "artefacts": ("_artefacts", "inspect a store of grouping artefacts"),
    "shuffle": ("_shuffle", "write GoldenEye surrogate table(s) with a learned grouping"),
    "validate": ("_validate", "run the release gate (privacy, utility, integrity) on a surrogate"),
    "report": ("_report", "write an HTML report of a grouping (and of a release)"),
    "fuse": ("_fuse", "fuse tables of separately collected attribute groups by class"),
    "plan-collection": ("_plan", "which attributes to collect together (from an artefact)"),
    "risk": ("_risk", "measure the privacy risk of a surrogate (disclosure and attacks)"),
    "generalise": ("_generalise", "apply an artefact's release recipe to a table (no shuffle)"),
    "publish": ("_publish", "gate a staged surrogate and promote it atomically (release)"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="astrid", description="ASTRID groupings and GoldenEye surrogates.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (module, summary) in SUBCOMMANDS.items():
        command = importlib.import_module(f".{module}", __package__)
        p = sub.add_parser(name, help=summary, description=command.DESCRIPTION)
        command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return parser


class Terminated(BaseException):
    """Raised in the main thread by SIGTERM; a BaseException so that no ``except
    Exception`` on the way swallows it, and joblib aborts its workers on the way out."""


def _on_sigterm(signum, frame):
    raise Terminated


def _stop_workers() -> None:
    """Stop loky's reusable workers (joblib keeps them for the next call) and let its
    resource tracker see their memmaps and semaphores released."""
    from joblib.externals.loky import reusable_executor

    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``astrid`` console script; returns the exit code."""
    from astrid_airflow._errors import AstridError, one_line, os_error_message

    args = build_parser().parse_args(argv)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (e.g. called from a test's thread)
        previous = None
    try:
        with warnings.catch_warnings():
            # Deprecation notices of the libraries we import (PySpark, GX, pandas...) are
            # not the user's business and would break "one line on stderr"; astrid's own
            # warnings (UserWarning subclasses) still show.
            for category in (FutureWarning, DeprecationWarning, PendingDeprecationWarning):
                warnings.filterwarnings("ignore", category=category,
                                        module=r"(?!astrid_airflow)")
            return int(args.handler(args) or 0)
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM: finish cleanup
        _stop_workers()
        print(f"astrid {args.command}: terminated (SIGTERM): workers stopped, temporary "
              "files removed, nothing saved", file=sys.stderr)
        return 143
    except AstridError as exc:
        print(f"astrid {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # disk full, symlink loop, permission... never a traceback
        print(f"astrid {args.command}: error: {os_error_message(exc)}", file=sys.stderr)
        return 2
    except RecursionError:  # a structure nested too deep for Python, from any input
        print(f"astrid {args.command}: error: input nested too deeply to process.",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"astrid {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
