"""The ``astrid`` command line.

Each subcommand (``SUBCOMMANDS``) lives in its own module, whose docstring's first line
is its line in ``astrid --help`` and which defines ``DESCRIPTION`` (the head of its
``--help``; None: none), ``add_arguments(parser)`` (its options, the shared ones from
``_options``) and ``run(args)`` (its handler, returning the exit code), and ``NAME`` where
the subcommand is not the module's name; heavy imports happen inside ``run``.

Bad input (any :class:`~astrid_airflow.AstridError`, unreadable or missing files)
prints one line on stderr and exits 2. SIGTERM (a scheduler's task timeout) stops the
command where it is: joblib workers are stopped, their temporary files removed, nothing
is saved, and the command prints one line and exits 143 (128 + SIGTERM, the shell's
convention, so a scheduler reports "terminated" rather than "bad input").
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Sequence

# the subcommands' modules, in the order of `astrid --help`
SUBCOMMANDS = ("_learn", "_testcmd", "_synth", "_artefacts", "_shuffle", "_validate",
               "_report", "_fuse", "_plan", "_risk", "_generalise", "_publish")


def _summary(command) -> str:
    """The module docstring's first line, as `astrid --help` lists the subcommand."""
    line = command.__doc__.splitlines()[0].rstrip(".")
    return line[0].lower() + line[1:]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="astrid", description="ASTRID groupings and GoldenEye surrogates.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS:
        command = importlib.import_module(f".{module}", __package__)
        name = getattr(command, "NAME", module.lstrip("_"))  # NAME where it differs
        p = sub.add_parser(name, help=_summary(command),
                           description=command.DESCRIPTION)
        command.add_arguments(p)
        p.add_argument("--allow-unsigned", action="store_true",
                       help="read artefact stores that no configured key signed "
                       "as checksummed only (refused otherwise, exit 2); recorded in the "
                       "receipt and the release manifest (docs/reliability.md)")
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


#: What the resource tracker's process is started with (it inherits the environment).
TRACKER_WARNINGS = "ignore::UserWarning:joblib.externals.loky.backend.resource_tracker"


def _quiet_resource_tracker() -> None:
    """loky's resource tracker (its own process, started by the first parallel fit, on
    this stderr) warns of semaphores already unlinked when the workers are stopped on
    SIGTERM: not the user's business, and it broke "one line on stderr". Added once to
    ``PYTHONWARNINGS``, whatever else it holds."""
    held = os.environ.get("PYTHONWARNINGS", "")
    if TRACKER_WARNINGS not in held.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, (held, TRACKER_WARNINGS)))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``astrid`` console script; returns the exit code."""
    from astrid_airflow._errors import AstridError, one_line, os_error_message

    args = build_parser().parse_args(argv)
    _quiet_resource_tracker()
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
            from astrid_airflow.io import allowing_unsigned

            with allowing_unsigned(bool(getattr(args, "allow_unsigned", False))):
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


def console() -> None:
    """The ``astrid`` console script: :func:`main`, then an exit that skips the native
    teardown where Arrow can abort a finished process (:mod:`._exit`)."""
    from ._exit import run_console

    run_console(main)


if __name__ == "__main__":  # pragma: no cover
    console()
