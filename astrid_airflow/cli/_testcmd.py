"""``astrid test``: the permutation test of one given grouping (Problem 1)."""

from __future__ import annotations

import argparse

from ._common import add_classifier_param_argument, parse_classifier_params


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("test", help="test one grouping (Problem 1)",
                       description="p = (1 + #{T(Di) >= T(D0)}) / (1 + R) over R GoldenEye "
                       "permutations of the training rows.")
    p.add_argument("data", help="CSV, Parquet or ARFF file (or fsspec URL)")
    p.add_argument("--target", required=True, help="class column")
    p.add_argument("--grouping", required=True, help='groups by ";", columns by ",": '
                   '"a1,a2;a3;a4"')
    p.add_argument("--classifier", default="svm", choices=["svm", "rf", "nb", "hgb"])
    add_classifier_param_argument(p)
    p.add_argument("--r-test", type=int, default=250, help="R, the number of permutations")
    p.add_argument("--scoring", default="accuracy",
                   choices=["accuracy", "balanced_accuracy", "f1_macro"])
    p.add_argument("--test-size", type=float, default=0.5, help="held-out fraction")
    p.add_argument("--adaptive", action="store_true",
                   help="sequential p-value: stop once the decision at --alpha is known")
    p.add_argument("--alpha", type=float, default=0.05, help="level (with --adaptive)")
    p.add_argument("--adaptive-risk", type=float, default=0.01,
                   help="bound on the chance of deciding differently from the exact test")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the fits on a Dask cluster (scheduler address)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from astrid_airflow.engine import test_grouping

    from ._common import print_json

    kwargs = dict(target=args.target, grouping=args.grouping, classifier=args.classifier,
                  classifier_params=parse_classifier_params(args.classifier_param),
                  n_permutations=args.r_test, scoring=args.scoring,
                  test_size=args.test_size, random_state=args.seed, progress=False,
                  adaptive=args.adaptive, alpha=args.alpha,
                  adaptive_risk=args.adaptive_risk)
    if args.scheduler:
        from astrid_airflow._errors import ParameterError
        from astrid_airflow.scale import test_grouping_on_dask

        if args.jobs != 1:
            raise ParameterError("--jobs does not go with --scheduler: the cluster's "
                                 "workers set the parallelism.")
        result = test_grouping_on_dask(args.data, scheduler=args.scheduler, **kwargs)
    else:
        result = test_grouping(args.data, n_jobs=args.jobs, **kwargs)
    if args.json:
        print_json(result.to_dict())
    else:
        null = result.null_accuracies
        print(f"grouping {result.grouping}: p = {result.p_value:.4f}  "
              f"{args.scoring} = {result.accuracy:.3f}  null mean = {null.mean():.3f} "
              f"[{null.min():.3f}, {null.max():.3f}]  R = {null.size}")
    return 0
