"""Write GoldenEye surrogate table(s) with a learned grouping.

`astrid shuffle DATA --artefact REF --out FILE`: GoldenEye surrogate(s) of a table.

Writes the surrogate(s) atomically and reports the privacy and utility metrics. The
metrics are computed on the complete temporary outputs *before* they are published, so
a failure (exit 2) leaves no output behind. ``--json`` prints one object whose keys
``intact_row_proportion``, ``expected_intact_row_proportion``,
``largest_group_unique_share``, ``accuracy_original``, ``accuracy_surrogate``, ``rows``
and ``out`` are a contract; ``suppression`` says what local suppression removed, per
group (``suppressed_rows``, ``suppressed_share``; null for a raw release) and, with a
recipe's fallbacks, which rung each group was published with (``recipe_rung``);
``dropped_identifiers`` names the declared identifier columns the input carried and
the surrogate does not (absent when it carried none).
``<stem>.metrics.json`` beside ``--out`` is the stage's metrics record, the one the
shuffle operator writes.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from . import _options as options

DESCRIPTION = ("Shuffle a Parquet or CSV table with a learned grouping artefact and report "
               "the intact-row proportion (P_anon), its expectation, the largest group's "
               "unique share and train-on-surrogate accuracy.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", metavar="DATA", help="input table: .parquet, .csv or .arff (or URL), or "
                   "a PostgreSQL table: postgresql://USER@HOST/DB?table=NAME")
    options.add_artefact_argument(p)
    options.add_out_option(
        p, help="output .parquet or .csv (copies go to FILE-1.ext, FILE-2.ext...), or a "
                "PostgreSQL table postgresql://...?table=NAME, published atomically with the "
                "input's column types")
    options.add_seed_option(p)
    p.add_argument("--n-copies", type=int, default=1, metavar="N",
                   help="number of independent surrogates (default 1)")
    p.add_argument("--no-utility", action="store_true",
                   help="skip the train-on-surrogate/test-on-real accuracy check")
    p.add_argument("--no-remedies", action="store_true",
                   help="the raw GoldenEye release: do not apply the artefact's release "
                   "recipe (default: apply it; the default gate refuses most raw releases)")
    options.add_overwrite_flag(p, help="replace existing outputs")
    options.add_json_flag(p)
    options.add_quiet_flag(p)


def run(args: argparse.Namespace) -> int:
    import contextlib
    import os
    import tempfile

    from astrid_airflow.io import is_sql_url

    from ._common import progress_lines

    with contextlib.ExitStack() as stack:
        stack.enter_context(progress_lines(args))  # the estimate and progress lines
        data, out = args.data, args.out
        if is_sql_url(data) or is_sql_url(out):
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="astrid_sql_"))
        if is_sql_url(out) and args.n_copies != 1:
            from astrid_airflow._errors import ParameterError

            raise ParameterError("--n-copies > 1 needs file outputs, not a database table.")
        if is_sql_url(data):  # streamed into a local Parquet file, SQL types kept
            from astrid_airflow.io import sql_to_parquet

            data = os.path.join(tmp, "original.parquet")
            sql_to_parquet(args.data, data)
        if is_sql_url(out):
            out = os.path.join(tmp, "surrogate.parquet")
        return _shuffle(args, data, out)


def _shuffle(args: argparse.Namespace, data: str, dest: str) -> int:
    from astrid_airflow.io import is_sql_url
    from astrid_airflow.pipeline import StageRequest, stage_release

    from ._common import print_json, warn_loudly

    seed = options.seed_or_fresh(args.seed)
    options.require_at_least("--n-copies", args.n_copies, 1, integer=True)
    started = time.perf_counter()
    # the metrics record goes beside --out (a database table has no "beside": the
    # record stays with the temporary file)
    staged = stage_release(StageRequest(
        source=data, artefact=args.artefact, destination=dest, random_state=seed,
        n_copies=args.n_copies, utility=not args.no_utility, overwrite=args.overwrite,
        remedies=not args.no_remedies, original_name=_shown(args.data),
        surrogate_name=_shown(args.out) if is_sql_url(args.out) else None))
    outs = staged.paths
    if is_sql_url(args.out):  # the complete, measured surrogate goes into the table
        from astrid_airflow.io import publish_table

        publish_table(outs[0], args.out, replace=args.overwrite)
        outs = [_shown(args.out)]  # no password in the output
    if staged.protects_nothing:
        warn_loudly("shuffle", "the artefact's grouping has a single group, so every "
                    "surrogate row is an original row (intact-row proportion 1): this "
                    "surrogate PROTECTS NOTHING.")
    out = _output(args, staged, outs, seed, data, round(time.perf_counter() - started, 3))
    for note in out["notes"]:
        print(f"astrid shuffle: note: {note}", file=sys.stderr)
    if args.json:
        print_json(out)
    else:
        _print(out, outs, seed)
    return 0


def _shown(path: str) -> str:
    """A table as the outputs name it: a database table without its password."""
    from astrid_airflow.io import is_sql_url, sql_source

    return sql_source(path, need="table").shown if is_sql_url(path) else path


def _output(args: argparse.Namespace, staged: Any, outs: list[str], seed: int, data: str,
            seconds: float) -> dict[str, Any]:
    """The ``--json`` object (its keys are a contract, see the module docstring)."""
    report: dict[str, Any] = dict(staged.metrics)
    artefact = staged.artefact
    out: dict[str, Any] = {
        "out": outs[0] if args.n_copies == 1 else outs,
        "rows": report.pop("rows"),
        "intact_row_proportion": report.pop("intact_row_proportion"),
        "expected_intact_row_proportion": report.pop("expected_intact_row_proportion"),
        "largest_group_unique_share": report.pop("largest_group_unique_share"),
        "accuracy_original": report.pop("accuracy_original"),
        "accuracy_surrogate": report.pop("accuracy_surrogate"),
        **report,
        "artefact": staged.artefact_path,
        "seed": seed,
        "n_copies": args.n_copies,
        "remedies": None if args.no_remedies or artefact.recipe is None
        else artefact.recipe.to_dict(),
        "seconds": seconds,
    }
    if staged.copies is not None:
        out["copies"] = [{"out": p, "intact_row_proportion": v}
                         for p, v in zip(outs, staged.copies)]
    out["notes"] = _value_notes(data, artefact)
    return out


def _print(out: dict[str, Any], outs: list[str], seed: int) -> None:
    print(f"wrote {', '.join(outs)} ({out['rows']} rows, seed {seed})")
    if out.get("dropped_identifiers"):
        print(f"dropped the declared identifier column(s) {out['dropped_identifiers']}: "
              "never published")
    print(f"intact-row proportion (P_anon): {out['intact_row_proportion']:.4f}   "
          f"expected: {out['expected_intact_row_proportion']:.4f}")
    print(f"largest group {out['largest_group']}: unique share "
          f"{out['largest_group_unique_share']:.4f}")
    sup = out.get("suppression")
    if sup:
        worst = max(sup["groups"], key=lambda g: g["suppressed_share"])
        print(f"locally suppressed (k={sup['k']}): at most {worst['suppressed_share']:.4f} "
              f"of rows per group ({worst['suppressed_rows']} in {worst['columns']})")
        fell = [g["columns"] for g in sup["groups"] if g.get("recipe_rung")]
        if fell:
            print(f"published with a coarser fallback of the recipe: {fell}")
    if out["accuracy_original"] is not None:
        print(f"accuracy, trained on original: {out['accuracy_original']:.4f}   on surrogate: "
              f"{out['accuracy_surrogate']:.4f}   (same held-out original rows)")
    if out.get("utility_note"):
        print(f"note: {out['utility_note']}")


def _value_notes(data: str, artefact: Any) -> list[str]:
    """Class labels and categories of the input unseen at learning time (allowed, but
    reported): only the class column and the categorical columns are read."""
    from astrid_airflow.release import SchemaCheck, unique_values

    cats = {e["name"]: set(e["categories"]) for e in artefact.schema
            if "categories" in e and e["name"] != artefact.target}
    columns = [artefact.target, *cats]
    from astrid_airflow.io import read_arrow

    table = read_arrow(data, columns)  # the one reader: same values the shuffle saw
    known = set(artefact.classes)
    check = SchemaCheck(
        unseen_classes=[v for v in unique_values(table, artefact.target) if v not in known],
        unseen_categories={c: vals for c, k in cats.items()
                           if (vals := [v for v in unique_values(table, c) if v not in k])})
    return check.notes
