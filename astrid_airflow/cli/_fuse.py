"""Fuse tables of separately collected attribute groups by class.

`astrid fuse --artefact REF --part GROUP_OR_FILE ... --out FILE`: fuse parts by class.

Each part is a CSV/Parquet/ARFF file holding one group's columns plus the class column,
matched to its group by its columns, or given as ``GROUP=FILE`` with the 1-based group
number that ``astrid plan-collection`` prints. The fused table is written atomically;
bad input prints one line, exits 2 and writes nothing. ``--json`` prints one object
whose keys ``out``, ``rows``, ``rows_per_class``, ``rule``, ``replace``,
``with_replacement``, ``parts``, ``notes``, ``seed`` and ``artefact`` are a contract.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from typing import Any

from . import _options as options

_INDEXED = re.compile(r"^(\d+)=(.+)$")
_REPLACE = {"auto": None, "always": True, "never": False}

DESCRIPTION = ("Fuse one table per group of a learned grouping (each with that group's "
               "columns and the class column) into training rows, pairing rows at random "
               "within class (ASTRID paper, Sec. 6.3).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_artefact_argument(p)
    p.add_argument("--part", required=True, action="extend", nargs="+",
                   metavar="GROUP_OR_FILE",
                   help="a part: FILE (.csv, .parquet, .arff; matched to its group by its "
                        "columns) or GROUP=FILE with the 1-based group number; one per "
                        "group (repeatable)")
    options.add_out_option(p, help="output .parquet or .csv (local path or URL)")
    p.add_argument("--rows", type=int, default=None, metavar="N",
                   help="rows of the fused table, split by the classes' pooled shares "
                        "(default: the largest size that repeats no row; at most 10 times "
                        "the largest part's rows)")
    p.add_argument("--replace", choices=sorted(_REPLACE), default="auto",
                   help="sampling of each part's rows within class: auto (with replacement "
                        "only where a part has too few rows), always, never")
    options.add_seed_option(p)
    options.add_overwrite_flag(p)
    options.add_json_flag(p)


def _parts(items: list[str]) -> list[str] | dict[int, str]:
    """Files, or {group number: file} when every item is GROUP=FILE."""
    from astrid_airflow._errors import ParameterError

    indexed = {}
    for item in items:
        m = _INDEXED.match(item)
        if m and not os.path.exists(item):
            g = int(m.group(1))
            if g in indexed:
                raise ParameterError(f"Group {g} is given twice: {indexed[g]!r} and "
                                     f"{m.group(2)!r}.")
            indexed[g] = m.group(2)
    if not indexed:
        return list(items)
    if len(indexed) != len(items):
        plain = [i for i in items if not (_INDEXED.match(i) and not os.path.exists(i))]
        raise ParameterError(f"Mixing GROUP=FILE and plain FILE parts is ambiguous "
                             f"({plain[0]!r}); use one form for every --part.")
    return indexed


def run(args: argparse.Namespace) -> int:
    from astrid_airflow.io import atomic_path, refuse_overwriting_inputs
    from astrid_airflow.release import file_format, load_artefact
    from astrid_airflow.scale import fuse_parts

    from ._common import print_json

    seed = options.seed_or_fresh(args.seed)
    if args.rows is not None:
        options.require_at_least("--rows", args.rows, 1, integer=True)
    kind = file_format(args.out)  # fail on a bad suffix before reading anything
    parts = _parts(args.part)
    refuse_overwriting_inputs([args.out], list(parts.values() if isinstance(parts, dict)
                                               else parts))
    started = time.perf_counter()
    artefact, location = load_artefact(args.artefact)
    table, report = fuse_parts(parts, artefact, n_rows=args.rows,
                               replace=_REPLACE[args.replace], random_state=seed)
    with atomic_path(args.out, overwrite=args.overwrite) as tmp:
        if kind == "parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
    d = report.to_dict()
    out: dict[str, Any] = {
        "out": os.fspath(args.out), "rows": d["rows"], "rows_per_class": d["rows_per_class"],
        "rule": d["rule"], "replace": args.replace, "with_replacement": d["with_replacement"],
        "parts": d["parts"], "notes": d["notes"], "seed": seed,
        "artefact": location.path, "seconds": round(time.perf_counter() - started, 3)}
    if args.json:
        print_json(out)
        return 0
    per_class = ", ".join(f"{c}: {n}" for c, n in d["rows_per_class"].items())
    print(f"wrote {out['out']} ({out['rows']} rows; {per_class}; seed {seed})")
    for p in d["parts"]:
        repl = [c for c, r in p["replace"].items() if r]
        how = "without replacement" if not repl else \
            f"WITH replacement for class(es) {', '.join(repl)}"
        src = p["source"] or "table"
        print(f"  group {p['group']} {', '.join(p['columns'])}: {src} "
              f"({p['rows']} rows), sampled {how}")
    for note in d["notes"]:
        print(f"note: {note}")
    return 0
