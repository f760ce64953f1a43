"""`astrid generalise DATA --artefact REF --out FILE`: the release recipe alone.

Applies the artefact's release recipe (bins, rounding, suppression, MDAV within class;
see :func:`~astrid_airflow.apply_recipe`) to a table without shuffling, and writes the
result atomically in the input's column types: what an attacker who knows the published
recipe, or a downstream model scoring new rows, works with. ``--json`` prints ``out``,
``rows`` and ``recipe``.
"""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generalise", help="apply an artefact's release recipe to a table (no shuffle)",
        description="Put a Parquet or CSV table into a release's domain: apply the "
                    "artefact's recipe (the generalisation a release applies before its "
                    "shuffle) and write the table, rows in place.")
    p.add_argument("data", metavar="DATA", help="input table: .parquet or .csv (or URL)")
    p.add_argument("--artefact", required=True, metavar="REF",
                   help="artefact.json path, version directory, or ROOT/NAME[@VERSION]")
    p.add_argument("--out", required=True, metavar="FILE", help="output .parquet or .csv")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from astrid_airflow._errors import RecipeError
    from astrid_airflow.release import generalise_file, load_artefact

    from ._common import print_json

    artefact = load_artefact(args.artefact).artefact
    if artefact.recipe is None:
        raise RecipeError("The artefact records no release recipe (learned with "
                          "--no-remedies, or by an older version): nothing to apply.")
    out = generalise_file(args.data, artefact, args.out, overwrite=args.overwrite)
    payload = {"out": out["out"], "rows": out["rows"], "recipe": artefact.recipe.to_dict()}
    if args.json:
        print_json(payload)
    else:
        print(f"wrote {out['out']} ({out['rows']} rows, {len(artefact.recipe.steps)} "
              "remedied column(s) or group(s))")
    return 0
