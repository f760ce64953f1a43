"""The options several subcommands share, each declared once.

A subcommand's ``add_arguments`` composes the ones it has, calling them through the
module (``from . import _options as options``; ``options.add_json_flag(p)``) so that a
shared option reads apart from the subcommand's own ``p.add_argument``. Where a
subcommand's help says something more specific about a shared option (what it writes,
what the seed drives), it passes its own ``help``. The checks of values that argparse
cannot express (a seed >= 0...) are here too, so that every subcommand refuses a bad
value with the same one line.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

#: The one description of an artefact reference on the command line.
ARTEFACT_REF_HELP = "artefact.json path, version directory, or ROOT/NAME[@VERSION]"

#: The classifiers the engine knows (``--classifier`` of learn and test).
CLASSIFIERS = ["svm", "rf", "nb", "hgb"]

JSON_HELP = "print one JSON object"
OVERWRITE_HELP = "replace an existing output"
FRESH_SEED_HELP = "random seed (default: fresh entropy, reported in the output)"
SCHEDULER_HELP = ("run the fits on a Dask cluster (e.g. tcp://10.0.0.5:8786); results equal "
                  "a local run with the same seed")


def add_artefact_argument(parser: argparse.ArgumentParser, *, positional: bool = False,
                          metavar: str = "REF") -> None:
    """``--artefact REF`` (required), or a positional ``REF``."""
    if positional:
        parser.add_argument("artefact", metavar=metavar, help=ARTEFACT_REF_HELP)
    else:
        parser.add_argument("--artefact", required=True, metavar=metavar,
                            help=ARTEFACT_REF_HELP)


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """The positional table the engine reads (learn, test)."""
    parser.add_argument("data", help="CSV, Parquet or ARFF file (or fsspec URL)")


def add_target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, help="class column")


def add_scoring_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scoring", default="accuracy",
                        choices=["accuracy", "balanced_accuracy", "f1_macro"])


def add_classifier_param_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--classifier-param", action="append", default=[], metavar="KEY=VALUE",
                        help="set a parameter of the classifier's model, e.g. "
                        "n_estimators=100 (repeatable; VALUE parsed as JSON when it can be)")


def parse_classifier_params(items: list[str]) -> dict | None:
    """``["n_estimators=100", "criterion=gini"]`` → ``{"n_estimators": 100, ...}``."""
    from astrid_airflow._errors import ParameterError

    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParameterError(f"Invalid --classifier-param {item!r}: expected KEY=VALUE.")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params or None


def add_surrogate_inputs(parser: argparse.ArgumentParser, *, surrogate_help: str) -> None:
    """What judging a surrogate reads (risk, validate): ``--original DATA``, ``--surrogate
    FILE`` and ``--artefact REF``, all required; ``surrogate_help`` says which surrogates
    the subcommand takes."""
    parser.add_argument("--original", required=True, metavar="DATA",
                        help="the table the surrogate was made from (CSV, Parquet, ARFF)")
    parser.add_argument("--surrogate", required=True, metavar="FILE", help=surrogate_help)
    add_artefact_argument(parser)


def add_out_option(parser: argparse.ArgumentParser, *, help: str,
                   metavar: str | None = "FILE") -> None:
    """``--out`` (required): what the subcommand writes; ``help`` says what it may be."""
    parser.add_argument("--out", required=True, metavar=metavar, help=help)


def add_parallel_options(parser: argparse.ArgumentParser, *,
                         jobs_help: str | None = "parallel fits (-1: all cores)",
                         scheduler_help: str = SCHEDULER_HELP) -> None:
    """``--jobs N`` (local processes) and ``--scheduler ADDRESS`` (a Dask cluster instead);
    :func:`~astrid_airflow.cli._common.run_here_or_on_dask` runs the fits with them."""
    parser.add_argument("--jobs", type=int, default=1, help=jobs_help)
    parser.add_argument("--scheduler", metavar="ADDRESS", help=scheduler_help)


def add_seed_option(parser: argparse.ArgumentParser, *, help: str | None = FRESH_SEED_HELP,
                    metavar: str | None = "N") -> None:
    """``--seed`` (default None: a seed is drawn); check it with :func:`checked_seed`."""
    parser.add_argument("--seed", type=int, default=None, metavar=metavar, help=help)


def add_overwrite_flag(parser: argparse.ArgumentParser, *,
                       help: str | None = OVERWRITE_HELP) -> None:
    parser.add_argument("--overwrite", action="store_true", help=help)


def add_json_flag(parser: argparse.ArgumentParser, *, help: str | None = JSON_HELP) -> None:
    parser.add_argument("--json", action="store_true", help=help)


def add_quiet_flag(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no estimate or progress lines on stderr (``_common.progress_lines``)."""
    parser.add_argument("--quiet", action="store_true",
                        help="no estimate or progress lines on stderr")


def require_at_least(flag: str, value: int | float, minimum: int, *,
                     integer: bool = False) -> None:
    """Refuse ``value < minimum`` with one line: ``Invalid --flag: value. Must be ...``."""
    if value < minimum:
        from astrid_airflow._errors import ParameterError

        kind = "an integer " if integer else ""
        raise ParameterError(f"Invalid {flag}: {value}. Must be {kind}>= {minimum}.")


def checked_seed(seed: int | None) -> int | None:
    """``--seed`` as given (None: not given), refused when negative."""
    if seed is not None:
        require_at_least("--seed", seed, 0)
    return seed


def seed_or_fresh(seed: int | None) -> int:
    """``--seed``, or a fresh one when not given, so that the output can report it."""
    from astrid_airflow._validation import fresh_seed

    seed = checked_seed(seed)
    return fresh_seed() if seed is None else seed


def add_allow_weaker_policy_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-weaker-policy", action="store_true",
                        help="accept a gate policy weaker than the default on any privacy "
                        "threshold (refused otherwise, exit 2); recorded with the result "
                        "(docs/gate.md)")


def read_policy(args: argparse.Namespace) -> Any:
    """The ``GatePolicy`` of ``--policy FILE`` (a regular file of at most 64 KiB, JSON
    nested at most 8 deep), refused if weaker than the default without
    ``--allow-weaker-policy``."""
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.gate import GatePolicy, check_weaker_policy
    from astrid_airflow.io import MAX_POLICY_BYTES, load_json_file

    data = load_json_file(args.policy, "--policy", limit=MAX_POLICY_BYTES,
                          error=ParameterError, max_depth=8)
    if not isinstance(data, dict):
        raise ParameterError(f"Invalid --policy {args.policy!r}: expected a JSON object of "
                             "GatePolicy fields.")
    policy = GatePolicy.from_dict(data)
    check_weaker_policy(policy, bool(args.allow_weaker_policy))
    return policy


class _OnceAction(argparse.Action):
    """A role list given twice is bad input (one line, exit 2), not the last one kept."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice: give one comma-separated list")
        setattr(namespace, self.dest, values)


def add_attacker_model_flags(parser: argparse.ArgumentParser) -> None:
    """``--identifiers --quasi-identifiers --sensitive COLS``: the attacker model."""
    for flag, what in (("--identifiers", "never published: dropped"),
                       ("--quasi-identifiers", "what an attacker may know about a person "
                        "(default: every column)"),
                       ("--sensitive", "what must not be learned, besides the class")):
        parser.add_argument(flag, metavar="COLS", default=None, action=_OnceAction,
                            help=f"comma-separated columns {what} (docs/privacy.md)")


def attacker_model_roles(args: argparse.Namespace, given: Any = None) -> dict[str, Any]:
    """The roles the flags declare, as GatePolicy fields; a role both given by a flag
    and declared in ``given`` (the ``--policy`` file's policy) is refused."""
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.release import ROLES, parse_columns

    roles = {}
    for role in ROLES:
        value = getattr(args, role, None)
        if value is None:
            continue
        flag = "--" + role.replace("_", "-")
        declared = None if given is None else getattr(given, role)
        if declared not in (None, ()):
            raise ParameterError(f"{flag} given twice: the --policy file declares "
                                 f"{role} already.")
        roles[role] = parse_columns(value, flag)
    return roles
