"""`astrid artefacts` (placeholder until its issue lands; replaced by its owner)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("artefacts", help="(not available yet)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    raise SystemExit("astrid artefacts: not available yet")
