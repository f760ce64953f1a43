"""``astrid validate``: run the release gate on a surrogate.

Exit status: 0 when every expectation passes, 1 when any fails, 2 on bad input
(unreadable tables, an unknown artefact, a schema mismatch of the original, bad
thresholds, a suite.json that is not the one saved with the artefact version, a
surrogate file carrying more than the artefact's columns). The validation result JSON
and the offline Data Docs page are written beside the surrogate (or in ``--out-dir``).
"""

from __future__ import annotations

import argparse

from ._common import add_artefact_argument


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate", help="run the release gate (privacy, utility, integrity) on a surrogate",
        description="Validate a surrogate against its original with the Great Expectations "
                    "suite stored beside the artefact. Exit 0: every expectation passed; "
                    "1: at least one failed; 2: bad input.")
    p.add_argument("--original", required=True, metavar="DATA",
                   help="the table the surrogate was made from (CSV, Parquet, ARFF)")
    p.add_argument("--surrogate", required=True, metavar="FILE",
                   help="the surrogate to release (CSV or Parquet, or a PostgreSQL table "
                        "URL); refused (exit 2) if it carries more than the artefact's "
                        "columns (docs/gate.md)")
    add_artefact_argument(p)
    p.add_argument("--max-intact", type=float, default=None, metavar="P",
                   help="largest intact-row proportion allowed (stored policy, default 0.01)")
    p.add_argument("--max-accuracy-drop", type=float, default=None, metavar="D",
                   help="largest accuracy drop allowed (stored policy, default 0.02)")
    p.add_argument("--max-largest-group-unique-share", type=float, default=None,
                   metavar="S", help="largest share of rows unique on the largest group "
                                     "(stored policy, default 0.05)")
    p.add_argument("--disclosure-k", type=int, default=None, metavar="K",
                   help="k of the per-group k-anonymity check (stored policy, default 5)")
    p.add_argument("--max-share-below-k", type=float, default=None, metavar="S",
                   help="largest share of rows, in any group, in equivalence classes "
                        "smaller than k (stored policy, default 0.05)")
    p.add_argument("--max-class-disclosure-share", type=float, default=None, metavar="S",
                   help="largest share of rows, in any group, whose values occur in one "
                        "class only (stored policy, default 0.05)")
    p.add_argument("--max-linkage-excess", type=float, default=None, metavar="E",
                   help="how far any pair of groups may stay linked above its expectation "
                        "(or 6 sd if larger; stored policy, default 0.03)")
    p.add_argument("--attack-n", type=int, default=None, metavar="N",
                   help="attacks per attack-based check, on a shadow release (stored "
                        "policy, default 500)")
    p.add_argument("--max-singling-out-risk", type=float, default=None, metavar="R",
                   help="largest upper 95%% bound of the singling-out risk (stored "
                        "policy, default 0.2)")
    p.add_argument("--max-linkability-risk", type=float, default=None, metavar="R",
                   help="largest upper 95%% bound of the linkability risk (stored policy, "
                        "default 0.1)")
    p.add_argument("--max-inference-risk", type=float, default=None, metavar="R",
                   help="largest upper 95%% bound of the inference risk of any secret "
                        "(stored policy, default 0.5)")
    p.add_argument("--classifier", default=None,
                   help="classifier of the utility check (default: the artefact's)")
    p.add_argument("--utility-repeats", type=int, default=None, metavar="N",
                   help="splits the utility check averages over (stored policy, default 1)")
    p.add_argument("--metrics", default=None, metavar="JSON",
                   help="use the accuracies in this JSON (from `astrid shuffle --json`) "
                        "instead of refitting")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the utility check (drawn and recorded if omitted)")
    p.add_argument("--out-dir", default=None, metavar="DIR",
                   help="where to write the result JSON and Data Docs (default: beside "
                        "the surrogate)")
    p.add_argument("--no-remedies", action="store_true",
                   help="judge a raw release (made with --no-remedies): do not put the "
                   "original into the release's domain with the artefact's recipe")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--verbose", action="store_true",
                   help="let Great Expectations log (it is kept at WARNING otherwise)")
    p.set_defaults(handler=_run)


def _read_metrics(path: str) -> dict:
    import fsspec

    from astrid_airflow._errors import ParameterError
    from astrid_airflow.io import check_regular_file, load_json

    check_regular_file(path, "Invalid --metrics")
    try:
        with fsspec.open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        raise ParameterError(f"Invalid --metrics: no such file {path!r}.") from None
    data = load_json(raw, f"--metrics {path!r}", error=ParameterError)
    if not isinstance(data, dict):
        raise ParameterError(f"Invalid --metrics {path!r}: expected a JSON object.")
    return data


def _run(args: argparse.Namespace) -> int:
    from astrid_airflow.gate import result_paths, validate_surrogate
    from astrid_airflow.io import refuse_overwriting_inputs

    from ._common import print_json

    if args.metrics:  # checked before any work: the result never replaces --metrics
        refuse_overwriting_inputs(list(result_paths(args.surrogate, args.out_dir) or ()),
                                  [args.metrics])

    overrides = {"max_intact": args.max_intact,
                 "max_accuracy_drop": args.max_accuracy_drop,
                 "max_largest_group_unique_share": args.max_largest_group_unique_share,
                 "disclosure_k": args.disclosure_k,
                 "max_share_below_k": args.max_share_below_k,
                 "max_class_disclosure_share": args.max_class_disclosure_share,
                 "max_linkage_excess": args.max_linkage_excess,
                 "attack_n": args.attack_n,
                 "max_singling_out_risk": args.max_singling_out_risk,
                 "max_linkability_risk": args.max_linkability_risk,
                 "max_inference_risk": args.max_inference_risk,
                 "classifier": args.classifier,
                 "utility_repeats": args.utility_repeats}
    result = validate_surrogate(
        args.original, args.surrogate, args.artefact,
        policy={k: v for k, v in overrides.items() if v is not None},
        out_dir=args.out_dir, random_state=args.seed,
        metrics=_read_metrics(args.metrics) if args.metrics else None,
        verbose=args.verbose, remedies=not args.no_remedies)
    if args.json:
        print_json(result.to_dict())
    else:
        for e in result.expectations:
            mark = "PASS" if e.success else "FAIL"
            print(f"{mark}  {e.category:<9} {e.name:<60} observed={_fmt(e.observed_value)} "
                  f"threshold={_fmt(e.threshold)}")
            if not e.success:
                named = _named(e.details)
                if named:
                    print(f"      {named}")
        verdict = "PASSED" if result.success else f"FAILED ({len(result.failed)} failed)"
        print(f"gate {verdict}")
        if result.validation_json:
            print(f"result:    {result.validation_json}")
            print(f"data docs: {result.data_docs}")
    return 0 if result.success else 1


def _named(details: dict) -> str:
    """The group or pair a failed disclosure check names (docs/privacy.md)."""
    if details.get("failing_groups"):
        groups = details["failing_groups"]
        return (f"{len(groups)} group(s) over the threshold, worst: "
                f"{', '.join(map(str, details.get('group') or groups[0]))}")
    if details.get("failing_pairs"):
        pairs = details["failing_pairs"]
        worst = details.get("pair") or pairs[0]
        return (f"{len(pairs)} pair(s) of groups still linked, worst: "
                + " + ".join(", ".join(map(str, g)) for g in worst))
    return ""


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
