"""Which attributes to collect together (from an artefact).

`astrid plan-collection REF [--json]`: which attributes to collect together.

Prints the chosen grouping of an artefact as questionnaires/sources (one per group),
its p-value and the accuracy cost from the paper's table (a0 - acc_ave at each k).
``--json`` prints :meth:`CollectionPlan.to_dict` plus ``artefact``; its keys
``groups``, ``together``, ``separately``, ``k``, ``p_value``, ``alpha``,
``baseline_accuracy``, ``accuracy``, ``accuracy_cost`` and ``table`` are a contract.
"""

from __future__ import annotations

import argparse
import sys

from . import _options as options

NAME = "plan-collection"
DESCRIPTION = ("Print which attributes must be collected together in one questionnaire or "
               "source and which may be collected separately, with the chosen grouping's "
               "p-value and accuracy cost.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    options.add_artefact_argument(p, positional=True)
    options.add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from astrid_airflow.release import load_artefact
    from astrid_airflow.scale import collection_plan

    from ._common import print_json

    artefact, location = load_artefact(args.artefact)
    plan = collection_plan(artefact)
    if args.json:
        print_json({**plan.to_dict(), "artefact": location.path})
        return 0
    sys.stdout.write(plan.format() + "\n")
    return 0
