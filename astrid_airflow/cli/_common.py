"""Small helpers shared by the subcommands."""

from __future__ import annotations

import json
import sys
from typing import Any


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (NaN becomes null)."""
    from astrid_airflow.io import plain

    sys.stdout.write(json.dumps(plain(obj), indent=2, sort_keys=False) + "\n")


#: The one description of an artefact reference on the command line.
ARTEFACT_REF_HELP = "artefact.json path, version directory, or ROOT/NAME[@VERSION]"


def add_artefact_argument(parser, *, positional: bool = False, metavar: str = "REF") -> None:
    """``--artefact REF`` (required), or a positional ``REF``."""
    if positional:
        parser.add_argument("artefact", metavar=metavar, help=ARTEFACT_REF_HELP)
    else:
        parser.add_argument("--artefact", required=True, metavar=metavar,
                            help=ARTEFACT_REF_HELP)


def add_classifier_param_argument(parser) -> None:
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
