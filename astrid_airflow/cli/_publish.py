"""Gate a staged surrogate and promote it atomically (release).

`astrid publish SURROGATE --destination FILE`: the release protocol without Airflow.

Gate the staged surrogate (``--original`` and ``--artefact``: the suite stored with the
artefact) and write its receipt, or take the receipt a gate already wrote
(``--receipt``, trusted only if signed with the key in force); then,
only if the receipt passed and names the surrogate's current bytes, promote the
canonical form of its values (never the staged bytes) atomically: the immutable archive
``releases/<id>/`` first, the current file in one rename, then the manifest
``<stem>.release.json``. Exit 0:
published; 1: the gate failed (nothing published, the last release stays); 2: bad input.
"""

from __future__ import annotations

import argparse
from typing import Any

from . import _options as options

DESCRIPTION = ("Gate a staged surrogate (or trust the receipt of a gate that already ran) "
               "and, if it passed, publish it: archive, current file, manifest. Exit 0: "
               "published; 1: the gate failed, nothing published; 2: bad input.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("surrogate", metavar="SURROGATE",
                   help="the staged surrogate (.parquet or .csv), e.g. from `astrid shuffle`")
    p.add_argument("--destination", required=True, metavar="FILE",
                   help="the published file; releases/<id>/ and <stem>.release.json go "
                        "beside it. Or a PostgreSQL table "
                        "(postgresql://[user@]host/db?table=NAME), swapped in atomically, "
                        "its manifest beside the surrogate")
    p.add_argument("--original", metavar="DATA",
                   help="the table the surrogate was made from (to gate it here)")
    p.add_argument("--artefact", metavar="REF",
                   help=options.ARTEFACT_REF_HELP + " (to gate it here)")
    p.add_argument("--receipt", metavar="FILE",
                   help="a gate receipt (<stem>.gate.json) instead of gating here; trusted "
                        "only if signed with the key in force ($ASTRID_SIGNING_KEY, else "
                        "the key file validate used; without a key, give --original and "
                        "--artefact)")
    p.add_argument("--release-id", default=None, metavar="ID",
                   help="name of the release directory (default: UTC time)")
    options.add_seed_option(
        p, help="seed of the gate's utility check (drawn and recorded if omitted)", metavar=None)
    p.add_argument("--force", action="store_true",
                   help="publish even an older release or the current one again (an "
                        "archive never changes)")
    options.add_json_flag(p)
    options.add_quiet_flag(p)
    options.add_attacker_model_flags(p)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from astrid_airflow.pipeline import PublishRequest, publish_release
    from astrid_airflow.release import check_release_id, new_release_id

    from ._common import print_json, progress_lines

    surrogate = Path(args.surrogate).absolute()
    destination, writer = _destination(args, surrogate)
    release_id = check_release_id(args.release_id or new_release_id())
    with progress_lines(args):  # publish's (and a gate's) estimate and progress lines
        done = publish_release(PublishRequest(
            surrogate=surrogate, destination=destination, release_id=release_id,
            receipt=Path(args.receipt).absolute() if args.receipt else None,
            force=args.force, original=args.original, artefact=args.artefact,
            random_state=args.seed, table_writer=writer,
            attacker_model=options.attacker_model_roles(args) or None))
    if done.action == "failed":
        print(f"astrid publish: gate FAILED for {surrogate} (failed: "
              f"{done.receipt.get('failed')}); nothing published.")
        return 1
    if not done.published:
        print(f"astrid publish: not publishing: {done.reason}")
        return 0
    if args.json:
        print_json({**done.extra, "manifest": str(done.manifest_path),
                    "receipt": str(done.receipt_path)})
    else:
        print(f"published {destination} (release {release_id}, sha256 {done.sha256[:12]}…); "
              f"archived {done.extra['archived']}")
    return 0


def _destination(args: argparse.Namespace, surrogate: Any) -> tuple[Any, Any]:
    """``(destination, table writer or None)``, the inputs checked: a PostgreSQL table
    URL (``?table=NAME``) is written by a table writer, anything else is a file."""
    from pathlib import Path

    from astrid_airflow._errors import ParameterError
    from astrid_airflow.io import check_regular_file, is_sql_url
    from astrid_airflow.pipeline import SqlTableWriter

    if bool(args.receipt) == bool(args.original and args.artefact):
        raise ParameterError("Give --receipt, or --original and --artefact (to gate here).")
    check_regular_file(str(surrogate), "Invalid SURROGATE")
    if args.receipt:
        check_regular_file(str(Path(args.receipt).absolute()), "Invalid --receipt")
    if is_sql_url(args.destination):
        writer = SqlTableWriter(args.destination)
        return str(writer), writer  # named without its password
    destination = Path(args.destination).absolute()
    if destination.suffix.lower() != surrogate.suffix.lower():
        raise ParameterError(f"Invalid --destination {args.destination!r}: its suffix must "
                             f"match the surrogate's ({surrogate.suffix}).")
    return destination, None
