"""Write an HTML report of a grouping (and of a release).

`astrid report ARTEFACT_REF [--surrogate-metrics FILE] --out DIR`: the HTML report.

Writes ``DIR/index.html`` (self-contained, readable offline) and the PNG figures
atomically; see ``docs/reports.md``. ``--json`` prints ``out``, ``index``, ``files``
and ``distributions_passed``.
"""

from __future__ import annotations

import argparse

from . import _options as options

DESCRIPTION = ("Write a self-contained HTML report with figures: the paper-style grouping "
               "table, accuracy and p-value against k, the groups at each k and, for a "
               "release, privacy, utility and per-class distribution checks of the "
               "surrogate.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_artefact_argument(p, positional=True, metavar="ARTEFACT_REF")
    options.add_out_option(p, help="report directory to write", metavar="DIR")
    p.add_argument("--surrogate-metrics", metavar="FILE",
                   help="JSON printed by `astrid shuffle --json` for the release")
    p.add_argument("--original", metavar="FILE",
                   help="the table the surrogate was made from (.csv, .parquet, .arff); "
                        "enables the per-class distribution checks")
    p.add_argument("--surrogate", metavar="FILE",
                   help="the surrogate table (default with --original: the 'out' file named "
                        "in --surrogate-metrics)")
    p.add_argument("--data-docs", metavar="HREF",
                   help="link to the gate's Data Docs page, e.g. ../out.validation.html")
    p.add_argument("--title", metavar="TEXT", help="page title")
    options.add_overwrite_flag(p, help="replace an existing report")
    options.add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.release import load_artefact
    from astrid_airflow.report import load_metrics, write_report

    from ._common import print_json

    loaded = load_artefact(args.artefact)
    surrogate = args.surrogate
    if args.original and surrogate is None:
        if not args.surrogate_metrics:
            raise ParameterError("--original needs --surrogate (or --surrogate-metrics "
                                 "naming the surrogate in its 'out' key).")
        out = load_metrics(args.surrogate_metrics, loaded.artefact.grouping.k).get("out")
        if not isinstance(out, str):
            raise ParameterError("--original needs --surrogate: the surrogate metrics name "
                                 "no single 'out' file.")
        surrogate = out
    if surrogate is not None and not args.original:
        raise ParameterError("--surrogate needs --original (the table it was made from).")
    written = write_report(loaded, args.out, surrogate_metrics=args.surrogate_metrics,
                           original=args.original, surrogate=surrogate, title=args.title,
                           data_docs=args.data_docs, overwrite=args.overwrite)
    if args.json:
        print_json(written.to_dict())
        return 0
    print(f"wrote {written.index}")
    if args.data_docs:
        from astrid_airflow.report import safe_href

        if safe_href(args.data_docs) is None:
            print(f"note: --data-docs {args.data_docs!r} is not an http(s), file or relative "
                  "link: the page shows it as text, not as a link.")
    if written.distributions_passed is False:
        print("WARNING: the distribution checks FAILED: the surrogate is not a within-class "
              "shuffle of the original (see the report).")
    return 0
