"""Test one grouping (Problem 1).

``astrid test``: the permutation test of one given grouping (Problem 1)."""

from __future__ import annotations

import argparse

from . import _options as options

NAME = "test"
DESCRIPTION = ("p = (1 + #{T(Di) >= T(D0)}) / (1 + R) over R GoldenEye permutations of the "
               "training rows.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_data_argument(p)
    options.add_target_option(p)
    p.add_argument("--grouping", required=True, help='groups by ";", columns by ",": '
                   '"a1,a2;a3;a4"')
    p.add_argument("--classifier", default="svm", choices=options.CLASSIFIERS)
    options.add_classifier_param_argument(p)
    p.add_argument("--r-test", type=int, default=250, help="R, the number of permutations")
    options.add_scoring_option(p)
    p.add_argument("--test-size", type=float, default=0.5, help="held-out fraction")
    p.add_argument("--adaptive", action="store_true",
                   help="sequential p-value: stop once the decision at --alpha is known")
    p.add_argument("--alpha", type=float, default=0.05, help="level (with --adaptive)")
    p.add_argument("--adaptive-risk", type=float, default=0.01,
                   help="bound on the chance of deciding differently from the exact test")
    options.add_seed_option(p, help=None, metavar=None)
    options.add_parallel_options(
        p, jobs_help=None, scheduler_help="run the fits on a Dask cluster (scheduler address)")
    options.add_json_flag(p, help=None)


def run(args: argparse.Namespace) -> int:
    from astrid_airflow.engine import test_grouping
    from astrid_airflow.scale import test_grouping_on_dask

    from ._common import print_json, run_here_or_on_dask

    kwargs = dict(target=args.target, grouping=args.grouping, classifier=args.classifier,
                  classifier_params=options.parse_classifier_params(args.classifier_param),
                  n_permutations=args.r_test, scoring=args.scoring,
                  test_size=args.test_size, random_state=args.seed, progress=False,
                  adaptive=args.adaptive, alpha=args.alpha,
                  adaptive_risk=args.adaptive_risk)
    result = run_here_or_on_dask(args, test_grouping, test_grouping_on_dask, args.data,
                                 **kwargs)
    if args.json:
        print_json(result.to_dict())
    else:
        null = result.null_accuracies
        print(f"grouping {result.grouping}: p = {result.p_value:.4f}  "
              f"{args.scoring} = {result.accuracy:.3f}  null mean = {null.mean():.3f} "
              f"[{null.min():.3f}, {null.max():.3f}]  R = {null.size}")
    return 0
