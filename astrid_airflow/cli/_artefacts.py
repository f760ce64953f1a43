"""Inspect a store of grouping artefacts.

`astrid artefacts list ROOT [--name NAME] [--json]`: the versions in an artefact store."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from . import _options as options

DESCRIPTION = "Inspect a versioned store of grouping artefacts."


def add_arguments(p: argparse.ArgumentParser) -> None:
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    ls = actions.add_parser(
        "list", help="list the versions in a store",
        description="List every version in an artefact store (local path or fsspec URL).")
    ls.add_argument("root", metavar="ROOT", help="store root: a directory or fsspec URL")
    ls.add_argument("--name", metavar="NAME", help="only the versions of this name")
    options.add_json_flag(ls, help="print one JSON object with a 'versions' list")


def run(args: argparse.Namespace) -> int:
    """``astrid artefacts list`` (the one action so far)."""
    from astrid_airflow.release import ArtefactStore

    from ._common import print_json

    store = ArtefactStore(args.root)
    rows = store.list(args.name)
    if args.json:
        print_json({"root": store.root, "versions": rows})
        return 0
    sys.stdout.write(_format(rows) + "\n")
    return 0


def _format(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no artefacts)"
    header = ("NAME", "VERSION", "CREATED (UTC)", "K", "TARGET", "ROWS", "SHA256")
    lines = [header]
    for r in rows:
        fp = r["fingerprint"] or {}
        if r["error"]:
            lines.append((r["name"], r["version"] or "-", "ERROR", "-", "-", "-",
                          r["error"]))
            continue
        lines.append((r["name"], r["version"], r["created_at"][:19].replace("T", " "),
                      str(r["k"]), str(r["target"]), str(fp.get("rows", "")),
                      str(fp.get("sha256", ""))[:12]))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)) + "  " +
                     line[-1] for line in lines)
