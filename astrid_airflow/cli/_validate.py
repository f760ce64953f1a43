"""Run the release gate (privacy, utility, integrity) on a surrogate.

``astrid validate``: run the release gate on a surrogate.

Exit status: 0 when every expectation passes, 1 when any fails, 2 on bad input
(unreadable tables, an unknown artefact, a schema mismatch of the original, bad
thresholds, a suite.json that is not the one saved with the artefact version, a
surrogate file carrying more than the artefact's columns). The validation result JSON
and the offline Data Docs page are written beside the surrogate (or in ``--out-dir``).
"""

from __future__ import annotations

import argparse
from typing import Any

from . import _options as options

DESCRIPTION = ("Validate a surrogate against its original with the Great Expectations suite "
               "stored beside the artefact. Exit 0: every expectation passed; 1: at least "
               "one failed; 2: bad input.")

# The GatePolicy fields a run may override, in --help order: (field, type, metavar, help);
# the option is --<field>. An option left out keeps the policy stored with the artefact
# version.
_POLICY_OVERRIDES: tuple[tuple[str, type, str | None, str], ...] = (
    ("max_intact", float, "P",
     "largest intact-row proportion allowed (stored policy, default 0.01)"),
    ("max_accuracy_drop", float, "D",
     "largest accuracy drop allowed (stored policy, default 0.02)"),
    ("max_largest_group_unique_share", float, "S",
     "largest share of rows unique on the largest group (stored policy, default 0.05)"),
    ("disclosure_k", int, "K",
     "k of the per-group k-anonymity check (stored policy, default 5)"),
    ("max_share_below_k", float, "S",
     "largest share of rows, in any group, whose published values are in equivalence "
     "classes smaller than k (stored policy, default 0: local suppression removes them)"),
    ("max_class_disclosure_share", float, "S",
     "largest share of rows, in any group, whose published values occur in one class only "
     "(stored policy, default 0: local suppression removes them)"),
    ("max_suppressed_share", float, "S",
     "largest share of rows, in any group, whose values a release may suppress (stored "
     "policy, default 0.05)"),
    ("max_linkage_excess", float, "E",
     "how far any pair of groups may stay linked above its expectation (or 6 sd if larger; "
     "stored policy, default 0.03)"),
    ("attack_n", int, "N",
     "attacks per attack-based check, on a shadow release (stored policy, default 500)"),
    ("max_singling_out_risk", float, "R",
     "largest upper 95%% bound of the singling-out risk (stored policy, default 0.2)"),
    ("max_linkability_risk", float, "R",
     "largest upper 95%% bound of the linkability risk (stored policy, default 0.1)"),
    ("max_inference_risk", float, "R",
     "largest upper 95%% bound of the inference risk of any secret (stored policy, "
     "default 0.5)"),
    ("max_class_from_one_column_risk", float, "R",
     "largest upper 95%% bound of the risk of inferring the class from any single "
     "column, exact on the release (stored policy, default 0.2)"),
    ("classifier", str, None, "classifier of the utility check (default: the artefact's)"),
    ("utility_repeats", int, "N",
     "splits the utility check averages over (stored policy, default 1)"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_surrogate_inputs(
        p, surrogate_help="the surrogate to release (CSV or Parquet, or a PostgreSQL table "
                          "URL); refused (exit 2) if it carries more than the artefact's "
                          "columns (docs/gate.md)")
    for field, kind, metavar, help_text in _POLICY_OVERRIDES:
        p.add_argument(f"--{field.replace('_', '-')}", type=kind, default=None,
                       metavar=metavar, help=help_text)
    options.add_allow_weaker_policy_flag(p)
    options.add_attacker_model_flags(p)
    p.add_argument("--metrics", default=None, metavar="JSON",
                   help="use the accuracies in this JSON (from `astrid shuffle --json`) "
                        "instead of refitting")
    options.add_seed_option(p, help="seed of the utility check (drawn and recorded if omitted)",
                    metavar=None)
    p.add_argument("--out-dir", default=None, metavar="DIR",
                   help="where to write the result JSON and Data Docs (default: beside "
                        "the surrogate)")
    p.add_argument("--no-remedies", action="store_true",
                   help="judge a raw release (made with --no-remedies): do not put the "
                   "original into the release's domain with the artefact's recipe")
    options.add_json_flag(p, help="print the result as JSON")
    options.add_quiet_flag(p)
    p.add_argument("--verbose", action="store_true",
                   help="let Great Expectations log (it is kept at WARNING otherwise)")


def _read_metrics(path: str) -> dict:
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.io import load_json_file

    data = load_json_file(path, "--metrics", error=ParameterError)
    if not isinstance(data, dict):
        raise ParameterError(f"Invalid --metrics {path!r}: expected a JSON object.")
    # the stage's record (<stem>.metrics.json) nests what `astrid shuffle --json` prints
    nested = data.get("metrics")
    return nested if isinstance(nested, dict) and "accuracy_original" in nested else data


def run(args: argparse.Namespace) -> int:
    from astrid_airflow.pipeline import GateRequest, gate_release

    from ._common import print_json, progress_lines

    surrogate, out_dir, seal = _gate_paths(args)
    overrides = {field: getattr(args, field) for field, *_ in _POLICY_OVERRIDES}
    with progress_lines(args):  # the gate's estimate and progress lines on stderr
        gated = gate_release(GateRequest(
            original=args.original, surrogate=surrogate, artefact=args.artefact,
            surrogate_file=args.surrogate, out_dir=out_dir,
            policy={**{k: v for k, v in overrides.items() if v is not None},
                    **options.attacker_model_roles(args)},
            random_state=args.seed, verbose=args.verbose, remedies=not args.no_remedies,
            metrics=_read_metrics(args.metrics) if args.metrics else None,
            allow_weaker_policy=bool(args.allow_weaker_policy), seal=seal))
    result = gated.result
    receipt = str(gated.receipt_path) if gated.receipt_path is not None else None
    if args.json:
        print_json({**result.to_dict(), "receipt": receipt, "report": gated.report})
    else:
        _print_verdict(result, receipt, gated)
    return 0 if result.success else 1


def _gate_paths(args: argparse.Namespace) -> tuple[Any, Any, bool]:
    """``(surrogate, out_dir, seal)``: a local surrogate file is gated with its receipt
    and report (``Path``s); anything else (a table, a remote file) is only judged.
    Checked before any work: the outputs never replace ``--metrics``."""
    from pathlib import Path

    from astrid_airflow.gate import result_paths
    from astrid_airflow.io import is_local, is_sql_url, refuse_overwriting_inputs
    from astrid_airflow.pipeline import receipt_path

    seal = not is_sql_url(args.surrogate) and is_local(args.surrogate) and \
        Path(args.surrogate).is_file() and (args.out_dir is None or is_local(args.out_dir))
    if args.metrics:
        outputs = list(result_paths(args.surrogate, args.out_dir) or ())
        refuse_overwriting_inputs(outputs + [str(receipt_path(
            Path(args.surrogate), Path(p).parent)) for p in outputs[:1]], [args.metrics])
    if not seal:
        return args.surrogate, args.out_dir, False
    return (Path(args.surrogate).absolute(),
            Path(args.out_dir) if args.out_dir is not None else None, True)


def _print_verdict(result: Any, receipt: str | None, gated: Any) -> None:
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
    if result.to_dict()["policy_note"]:
        print(f"WARNING: the policy is {result.to_dict()['policy_note']}")
    if result.validation_json:
        print(f"result:    {result.validation_json}")
        print(f"data docs: {result.data_docs}")
    if gated.report:
        print(f"report:    {gated.report}")
    if receipt:
        print(f"receipt:   {receipt}")


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
