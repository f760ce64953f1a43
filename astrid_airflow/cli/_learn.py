"""Find the significant grouping of a table (ASTRID).

``astrid learn``: run ASTRID on a table and print the paper-style table."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from . import _options as options

if TYPE_CHECKING:
    from astrid_airflow.engine import AdaptiveConfig, AstridResult
    from astrid_airflow.pipeline import Learned, LearnRequest

DESCRIPTION = ("Run ASTRID (Alg. 1 of the paper) and print the table of groupings for every "
               "k with their p-values.")

# The knobs of --adaptive, by their AdaptiveConfig field; each is the option
# --adaptive-<field>, and run() builds the AdaptiveConfig from the same table.
_ADAPTIVE_KNOBS: dict[str, dict] = {
    "risk": dict(type=float, default=0.01,
                 help="bound on the chance a sequential p-value decides differently from "
                 "the exact test (with --adaptive)"),
    "delta": dict(type=float, default=0.01,
                  help="indifference zone of the racing, in score units (with --adaptive)"),
    "delta_sd": dict(type=float, default=1.0,
                     help="scale the racing's indifference zone to the noise: a pair's zone "
                     "is min(delta, this x the single-fit score sd); a negative value turns "
                     "the scaling off (with --adaptive)"),
    "verify": dict(action="store_true",
                   help="audit (with --adaptive): complete every tested k's draws to R and "
                   "record the exact p-values beside the sequential ones (extra fits)"),
    "race_risk": dict(type=float, default=0.2,
                      help="error level of each look of the races (with --adaptive); only "
                      "changes which grouping is tested, never a p-value's validity"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_data_argument(p)
    options.add_target_option(p)
    p.add_argument("--classifier", default=None, choices=options.CLASSIFIERS,
                   help="svm, rf, nb: the paper's classifiers; hgb: histogram gradient "
                   "boosting, the preset for large tables (default: svm up to 20,000 rows, "
                   "hgb above; docs/engine.md)")
    options.add_classifier_param_argument(p)
    p.add_argument("--r-search", type=int, default=100, help="R', permutations per reward")
    p.add_argument("--r-test", type=int, default=250, help="R, permutations per p-value")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--adaptive", action="store_true",
                   help="racing in the search and sequential p-values: far fewer fits, the "
                   "same decisions up to a reported risk (R' and R become budgets; "
                   "default above 20,000 rows)")
    p.add_argument("--exact", action="store_true",
                   help="exact mode (R' and R fits per reward and p-value) on a table of "
                   "more than 20,000 rows too")
    for field, spec in _ADAPTIVE_KNOBS.items():
        p.add_argument(f"--adaptive-{field.replace('_', '-')}", **spec)
    p.add_argument("--max-seconds", type=float, default=None, metavar="SECONDS",
                   help="budget of the whole learn, the release choice after the search "
                   "included: time a few fits first, estimate the run and refuse to start "
                   "(one line saying what would fit) if the estimate exceeds SECONDS; a "
                   "run that still reaches SECONDS stops there, saving nothing "
                   "(default: no budget; the estimate is logged either way)")
    p.add_argument("--over-budget", choices=["refuse", "sample"], default="refuse",
                   help="over --max-seconds: refuse (default), or learn on a stratified "
                   "sample with as many rows as fit the budget")
    p.add_argument("--sample", default=None, metavar="auto|N|none",
                   help="learn on a stratified sample of the table: N rows, 'auto' (the "
                   "size where the classifier's accuracy stops improving, see "
                   "docs/engine.md) or 'none' (every row; the default up to 20,000 rows, "
                   "auto above)")
    p.add_argument("--screen", choices=["auto", "on", "off"], default="auto",
                   help="before the sorting, test every pair (and, up to 60 attributes, "
                   "every triple) of attributes for dependence given the class and detach "
                   "those dependent on none without fits (auto: more than 40 attributes, "
                   "or more than 20,000 rows; docs/engine.md)")
    options.add_scoring_option(p)
    options.add_seed_option(p, help="random seed (default: fresh)", metavar=None)
    options.add_parallel_options(p)
    p.add_argument("--clean", action="store_true",
                   help="drop rows with missing values and constant columns first (as the "
                   "paper did for the UCI data)")
    p.add_argument("--store", help="artefact store root: save the result as a new version")
    p.add_argument("--name", help="artefact name in the store (with --store)")
    p.add_argument("--policy", metavar="FILE", default=None,
                   help="gate policy JSON (GatePolicy fields) the release must pass "
                   "(with --store; default: the default gate policy)")
    options.add_allow_weaker_policy_flag(p)
    options.add_attacker_model_flags(p)
    p.add_argument("--force", action="store_true",
                   help="with --store: learn a new version even when the latest one was "
                   "learned from the same table with the same settings, policy and "
                   "remedies (default: keep it; the JSON says \"reused\")")
    p.add_argument("--synthesis-epsilon", type=float, default=None, metavar="EPS",
                   help="differential privacy of the synthesised groups: their models' "
                   "statistics get Gaussian noise for (EPS, --synthesis-delta), split "
                   "over them (with --store; the grouping search and the shuffled real "
                   "tuples are not covered: docs/privacy.md)")
    p.add_argument("--synthesis-delta", type=float, default=1e-6, metavar="DELTA",
                   help="the delta of --synthesis-epsilon (default 1e-6; must be below "
                   "1/rows)")
    p.add_argument("--no-synthesis", action="store_true",
                   help="no group of the release is synthesised: every published value "
                   "is a person's own, remedied and shuffled (with --store)")
    p.add_argument("--no-remedies", action="store_true",
                   help="with --store: record no release recipe (the raw GoldenEye "
                   "release of the learned grouping)")
    options.add_json_flag(p)
    p.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    from astrid_airflow.gate import weaker_note
    from astrid_airflow.pipeline import learn_release

    from ._common import print_json, warn_loudly

    request = _request(args)
    if not args.quiet:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    learned = learn_release(request)
    payload = _payload(args, learned, request.policy)
    if args.json:
        print_json(payload)
    else:
        print(_result_of(learned).format_table())
        if args.store:
            print(_saved_line(args, learned))
            print(payload["attacker_model_line"])
    if request.policy is not None and (note := weaker_note(request.policy)):
        payload_note = f"the release was chosen with a gate policy {note}"
        warn_loudly("learn", payload_note + " (--allow-weaker-policy; recorded)")
    _report_release(payload.get("release"), quiet=args.json)
    return 0


def _request(args: argparse.Namespace) -> LearnRequest:
    """The learn the flags ask for; a bad combination is refused before any work. Flags
    not given are left out, so the table's size decides them (``large_table_defaults``)."""
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.pipeline import LearnRequest

    if bool(args.store) != bool(args.name):
        raise ParameterError("--store and --name go together.")
    if args.policy and not args.store:
        raise ParameterError("--policy needs --store and --name (it governs the recorded "
                             "release).")
    if args.force and not args.store:
        raise ParameterError("--force needs --store and --name (it learns a new version "
                             "even when the latest one would be reused).")
    if args.synthesis_epsilon is not None and not args.store:
        raise ParameterError("--synthesis-epsilon needs --store and --name (it governs the "
                             "recorded release).")
    if args.synthesis_epsilon is not None and not args.synthesis_epsilon > 0:
        raise ParameterError(f"Invalid --synthesis-epsilon: {args.synthesis_epsilon}. The "
                             "privacy budget must be > 0.")
    if args.synthesis_epsilon is not None and args.no_synthesis:
        raise ParameterError("--synthesis-epsilon and --no-synthesis exclude each other.")
    if args.adaptive and args.exact:
        raise ParameterError("--adaptive and --exact exclude each other.")
    if args.scheduler and args.jobs != 1:
        raise ParameterError("--jobs does not go with --scheduler: the cluster's "
                             "workers set the parallelism.")
    policy = options.read_policy(args) if args.policy else None
    roles = options.attacker_model_roles(args, policy)
    if roles:
        if not args.store:
            raise ParameterError("--identifiers, --quasi-identifiers and --sensitive need "
                                 "--store and --name (they govern the recorded release).")
        from astrid_airflow.gate import GatePolicy

        policy = (policy or GatePolicy()).with_overrides(**roles)
    if args.name is not None:  # refuse a bad name before reading the table
        from astrid_airflow.release import check_artefact_name

        check_artefact_name(args.name)
    settings = dict(classifier_params=options.parse_classifier_params(args.classifier_param),
                    n_search=args.r_search, n_test=args.r_test, alpha=args.alpha,
                    scoring=args.scoring, over_budget=args.over_budget,
                    screen={"auto": "auto", "on": True, "off": False}[args.screen],
                    progress=None if not args.quiet else False)
    if args.classifier is not None:
        settings["classifier"] = args.classifier
    if args.sample is not None:
        settings["sample"] = args.sample
    if args.adaptive or args.exact:
        settings["adaptive"] = _adaptive_config(args) if args.adaptive else False
    store = None
    if args.store:
        from astrid_airflow.release import ArtefactStore

        store = ArtefactStore(args.store)
    return LearnRequest(table=args.data, target=args.target, settings=settings,
                        clean=args.clean, store=store, name=args.name, policy=policy,
                        remedies=not args.no_remedies,
                        allow_weaker_policy=args.allow_weaker_policy,
                        random_state=args.seed, force=args.force, n_jobs=args.jobs,
                        scheduler=args.scheduler or None, max_seconds=args.max_seconds,
                        synthesis_budget=None if args.synthesis_epsilon is None else
                        (args.synthesis_epsilon, args.synthesis_delta),
                        synthesis=not args.no_synthesis)


def _result_of(learned: Learned) -> AstridResult:
    """The run's result, or the reused version's (recorded in its artefact)."""
    if learned.result is not None:
        return learned.result
    from astrid_airflow.engine import AstridResult

    return AstridResult.from_dict(dict(learned.artefact.result))


def _payload(args: argparse.Namespace, learned: Learned, policy: object) -> dict:
    """The ``--json`` object: the result, and with ``--store`` the version (``reused``:
    the latest version was kept, nothing ran), its release and policy note, the choice's
    ``frontier`` and a refusal's ``nearest`` candidates."""
    from astrid_airflow.gate import weaker_note
    from astrid_airflow.release import AttackerModel

    payload = _result_of(learned).to_dict()
    model = AttackerModel() if policy is None else policy.attacker_model
    payload.update(attacker_model=model.to_dict(), attacker_model_line=model.describe())
    if args.store:
        payload["artefact"] = {"store": args.store, "name": args.name,
                               "version": learned.version, "reused": learned.reused}
        payload["release"] = _release_summary(learned.artefact)
        payload["policy_note"] = None if policy is None else weaker_note(policy)
        payload.update(_frontier(learned.artefact))
    return payload


def _saved_line(args: argparse.Namespace, learned: Learned) -> str:
    ref = f"{args.name}@{learned.version}"
    if learned.reused:
        return (f"reused artefact {ref} in {args.store}: the same table, learned with the "
                "same settings, policy and remedies (--force learns again)")
    return f"saved artefact {ref} in {args.store}"


def _report_release(release: dict | None, *, quiet: bool) -> None:
    """A refused release warns loudly; a chosen one gets a line (unless ``quiet``)."""
    from ._common import warn_loudly

    if release and release["status"] == "refused":
        warn_loudly("learn", f"no release within the policy: {release['reason']}. "
                    "`astrid shuffle` will refuse to publish (or --no-remedies for the raw "
                    "release, which the gate judges).")
    elif release and not quiet:
        u = release["utility"]
        # an artefact chosen before the suppression's cost was recorded says nothing of it
        suppression = "" if u.get("suppression_cost") is None else \
            f", local suppression {u['suppression_cost']:+.3f} of it"
        print(f"release: grouping {release['grouping']} with {release['remedied']} "
              f"remedied column(s)/group(s); accuracy {u['accuracy_remedied_release']:.3f} "
              f"vs original {u['accuracy_original']:.3f} (remedies cost "
              f"{u['remedy_cost']:+.3f}{suppression}); "
              f"{release['candidates']} candidates tried"
              + (f"; {release['fallbacks']} coarser fallback(s) for batches that need "
                 "them" if release.get("fallbacks") else ""))


def _adaptive_config(args: argparse.Namespace) -> AdaptiveConfig:
    """The AdaptiveConfig of the ``--adaptive-*`` options (see ``_ADAPTIVE_KNOBS``)."""
    from astrid_airflow.engine import AdaptiveConfig

    knobs = {field: getattr(args, f"adaptive_{field}") for field in _ADAPTIVE_KNOBS}
    if knobs["delta_sd"] < 0:  # a negative scale turns the scaling to the noise off
        knobs["delta_sd"] = None
    return AdaptiveConfig(**knobs)


def _release_summary(artefact: object) -> dict | None:
    release = getattr(artefact, "release", None)
    if not release:
        return None
    return {"status": release["status"], "reason": release.get("reason"),
            "grouping": str(artefact.grouping),
            "remedied": len((release.get("recipe") or {}).get("steps", [])),
            "utility": release.get("utility"),
            "candidates": len(release.get("candidates", [])),
            "fallbacks": len((release.get("recipe") or {}).get("fallbacks", []))}


def _frontier(artefact: object) -> dict:
    """``frontier``: every candidate the release choice measured (``FrontierPoint``
    dicts; empty without a choice); ``nearest``: a refusal's nearest candidates with
    their single policy changes (None unless refused)."""
    from astrid_airflow.gate import frontier_points

    release = getattr(artefact, "release", None) or {}
    points = frontier_points(release.get("candidates") or [], release.get("policy") or {},
                             release.get("chosen"))
    return {"frontier": [p.to_dict() for p in points],
            "nearest": release.get("nearest") if release.get("status") == "refused"
            else None}
