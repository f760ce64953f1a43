"""Apply an artefact's release recipe to a table (no shuffle).

`astrid generalise DATA --artefact REF --out FILE`: the release recipe alone.

Applies the artefact's release recipe (bins, rounding, suppression, MDAV within class;
see :func:`~astrid_airflow.apply_recipe`) to a table without shuffling, and writes the
result atomically in the input's column types: what an attacker who knows the published
recipe, or a downstream model scoring new rows, works with. ``--json`` prints ``out``,
``rows`` and ``recipe``.
"""

from __future__ import annotations

import argparse

from . import _options as options

DESCRIPTION = ("Put a Parquet or CSV table into a release's domain: apply the artefact's "
               "recipe (the generalisation a release applies before its shuffle) and write "
               "the table, rows in place.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="input table: .parquet or .csv (or URL)")
    options.add_artefact_argument(p)
    options.add_out_option(p, help="output .parquet or .csv")
    options.add_overwrite_flag(p)
    options.add_json_flag(p)


def run(args: argparse.Namespace) -> int:
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
