"""The ``astrid`` command line.

Each subcommand lives in its own module with a ``register(subparsers)`` function
that adds its parser and sets ``handler``; heavy imports happen inside handlers.
Bad input (any :class:`~astrid_airflow.AstridError`, unreadable or missing files)
prints one line on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence

# subcommand -> module in this package
SUBCOMMANDS: dict[str, str] = {
    "learn": "_learn",
    "test": "_testcmd",
    "synth": "_synth",
    "artefacts": "_artefacts",
    "shuffle": "_shuffle",
    "validate": "_validate",
    "report": "_report",
    "fuse": "_fuse",
    "plan-collection": "_plan",
    "risk": "_risk",
    "publish": "_publish",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="astrid", description="ASTRID groupings and GoldenEye surrogates.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS.values():
        importlib.import_module(f".{module}", __package__).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``astrid`` console script; returns the exit code."""
    from .._errors import AstridError, one_line, os_error_message

    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            # Deprecation notices of the libraries we import (PySpark, GX, pandas...) are
            # not the user's business and would break "one line on stderr"; astrid's own
            # warnings (UserWarning subclasses) still show.
            for category in (FutureWarning, DeprecationWarning, PendingDeprecationWarning):
                warnings.filterwarnings("ignore", category=category,
                                        module=r"(?!astrid_airflow)")
            return int(args.handler(args) or 0)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
