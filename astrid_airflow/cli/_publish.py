"""Gate a staged surrogate and promote it atomically (release).

`astrid publish SURROGATE --destination FILE`: the release protocol without Airflow.

Gate the staged surrogate (``--original`` and ``--artefact``: the suite stored with the
artefact) and write its receipt, or take the receipt a gate already wrote
(``--receipt``); then, only if the receipt passed and names the surrogate's current
bytes, promote it atomically: the immutable archive ``releases/<id>/`` first, the
current file in one rename, then the manifest ``<stem>.release.json``. Exit 0:
published; 1: the gate failed (nothing published, the last release stays); 2: bad input.
"""

from __future__ import annotations

import argparse
import re

from . import _options as options

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

DESCRIPTION = ("Gate a staged surrogate (or trust the receipt of a gate that already ran) "
               "and, if it passed, publish it: archive, current file, manifest. Exit 0: "
               "published; 1: the gate failed, nothing published; 2: bad input.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("surrogate", metavar="SURROGATE",
                   help="the staged surrogate (.parquet or .csv), e.g. from `astrid shuffle`")
    p.add_argument("--destination", required=True, metavar="FILE",
                   help="the published file; releases/<id>/ and <stem>.release.json go "
                        "beside it")
    p.add_argument("--original", metavar="DATA",
                   help="the table the surrogate was made from (to gate it here)")
    p.add_argument("--artefact", metavar="REF",
                   help=options.ARTEFACT_REF_HELP + " (to gate it here)")
    p.add_argument("--receipt", metavar="FILE",
                   help="a gate receipt (<stem>.gate.json) instead of gating here")
    p.add_argument("--release-id", default=None, metavar="ID",
                   help="name of the release directory (default: UTC time)")
    options.add_seed_option(
        p, help="seed of the gate's utility check (drawn and recorded if omitted)", metavar=None)
    p.add_argument("--force", action="store_true",
                   help="publish even an older release or the current one again (an "
                        "archive never changes)")
    options.add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    import datetime as _dt
    import hashlib
    import json
    from pathlib import Path

    from astrid_airflow._errors import ParameterError
    from astrid_airflow.io import (
        atomic_path,
        atomic_write_text,
        check_regular_file,
        load_json,
        plain,
    )
    from astrid_airflow.pipeline import release_plan
    from astrid_airflow.release import check_receipt, decide_release, release_time

    from ._common import print_json

    surrogate, destination = Path(args.surrogate).absolute(), \
        Path(args.destination).absolute()
    if bool(args.receipt) == bool(args.original and args.artefact):
        raise ParameterError("Give --receipt, or --original and --artefact (to gate here).")
    check_regular_file(str(surrogate), "Invalid SURROGATE")
    if destination.suffix.lower() != surrogate.suffix.lower():
        raise ParameterError(f"Invalid --destination {args.destination!r}: its suffix must "
                             f"match the surrogate's ({surrogate.suffix}).")
    release_id = args.release_id or _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    if _UNSAFE.search(release_id) or release_id.startswith("."):
        raise ParameterError(f"Invalid --release-id {release_id!r}: use letters, digits, "
                             "'.', '_' and '-'.")
    digest = hashlib.sha256(surrogate.read_bytes()).hexdigest()
    if args.receipt:
        receipt_file = Path(args.receipt).absolute()
        check_regular_file(str(receipt_file), "Invalid --receipt")
        receipt = load_json(receipt_file.read_bytes(), f"gate receipt {receipt_file}")
        if not isinstance(receipt, dict):
            raise ParameterError(f"Invalid --receipt {args.receipt!r}: not a JSON object.")
    else:
        receipt_file, receipt = _gate(args, surrogate, digest)
    if receipt.get("success") is not True:
        print(f"astrid publish: gate FAILED for {surrogate} (failed: "
              f"{receipt.get('failed')}); nothing published.")
        return 1
    # the release protocol shared with the publish operator: exact bytes, forward only
    check_receipt(receipt, surrogate=str(receipt.get("surrogate", surrogate)),
                  sha256=digest, where=str(receipt_file))
    now = _dt.datetime.now(_dt.UTC)
    manifest_file = destination.parent / f"{destination.stem}.release.json"
    archived = destination.parent / "releases" / release_id / destination.name
    current = load_json(manifest_file.read_bytes(), f"release manifest {manifest_file}") \
        if manifest_file.exists() else None
    decision = decide_release(
        current, release_id=release_id, sha256=digest, run_after=release_time(now),
        archived_sha256=hashlib.sha256(archived.read_bytes()).hexdigest()
        if archived.exists() else None, force=args.force)
    if not decision.publish:
        print(f"astrid publish: not publishing: {decision.reason}")
        return 0
    report = receipt.get("report")
    report_files = sorted(p for p in Path(report).parent.iterdir() if p.is_file()) \
        if report and Path(report).exists() else None
    plan = release_plan(surrogate, destination, receipt, receipt_file, release_id,
                        sha256=digest, run_after=release_time(now),
                        report_files=report_files, write_archive=decision.write_archive,
                        published_at=now.isoformat(timespec="seconds"))
    for src, dst in plan.copies:
        with atomic_path(dst, overwrite=True) as tmp:
            Path(tmp).write_bytes(Path(src).read_bytes())
    atomic_write_text(plan.manifest_path,
                      json.dumps(plain(plan.manifest), indent=2) + "\n", overwrite=True)
    out = {**plan.extra, "manifest": str(plan.manifest_path),
           "receipt": str(receipt_file)}
    if args.json:
        print_json(out)
    else:
        print(f"published {destination} (release {release_id}, sha256 {digest[:12]}…); "
              f"archived {plan.extra['archived']}")
    return 0


def _gate(args: argparse.Namespace, surrogate, digest: str):
    """Run the gate on the staged file and write its receipt beside it."""
    import json

    from astrid_airflow._errors import GateError
    from astrid_airflow.gate import validate_surrogate
    from astrid_airflow.io import atomic_write_text, plain
    from astrid_airflow.pipeline import gate_receipt, receipt_path
    from astrid_airflow.release import parse_artefact_ref

    result = validate_surrogate(args.original, str(surrogate), args.artefact,
                                random_state=args.seed)
    if result.surrogate_sha256 != digest:
        raise GateError(f"Cannot gate {surrogate}: the file changed while it was judged; "
                        "nothing was decided.")
    loc = parse_artefact_ref(args.artefact)
    receipt = gate_receipt(
        result, surrogate=surrogate, sha256=digest, original=args.original,
        artefact=f"{loc.name}@{loc.version}" if loc.name else str(loc.path),
        store=str(loc.root) if loc.root else "", out_dir=surrogate.parent)
    path = receipt_path(surrogate)
    atomic_write_text(path, json.dumps(plain(receipt), indent=2) + "\n", overwrite=True)
    return path, receipt
