"""Publish's check of successive releases: a new release of a destination never
isolates fewer than k rows of a class next to an earlier one.

The gate writes the source fingerprints of the rows it judged
(``<stem>.source_rows.parquet``, sealed in its receipt); every release archives them in
``releases/<release_id>/``. Before a new release is written, its fingerprints are
compared with those of every earlier release of the same destination
(:func:`~astrid_airflow.release.differencing`), under the destination's lock (or before
each compare-and-swap attempt on an object store), so two publishers cannot both pass.
"""

from __future__ import annotations

import logging
from typing import Any

from astrid_airflow._errors import ReleaseError

from ._publish_files import listing, read_bytes

LOG = logging.getLogger(__name__)


def check_successive(cand: Any) -> dict[str, Any] | None:
    """What the manifest records of the comparison (``successive_releases``), or
    ``ReleaseError`` naming the earlier release, the class and the count.

    None when the receipt carries no fingerprints (a receipt sealed before they were
    written): the release is then published unchecked, and the log says so.
    """
    from astrid_airflow.gate import GatePolicy
    from astrid_airflow.release import SOURCE_ROWS_SUFFIX, SourceRows, differencing

    from ._integrity import gate_files

    stem = cand.receipt.get("stem")
    name = f"{stem}{SOURCE_ROWS_SUFFIX}"
    mine = dict(gate_files(dict(cand.receipt), cand.receipt_file)).get(name)
    if mine is None:
        LOG.warning("The receipt %s lists no source fingerprints (sealed before they were "
                    "written): this release is not compared with the earlier ones of %s.",
                    cand.receipt_file, cand.request.destination)
        return None
    new = SourceRows.from_bytes(mine, name)
    policy = cand.receipt.get("policy") or {}
    k = int(policy.get("disclosure_k", GatePolicy().disclosure_k))
    found = differencing(new, earlier_source_rows(cand.request.destination,
                                                  cand.request.release_id), k)
    if not found.safe:
        lines = "; ".join(i.line() for i in found.isolations[:3])
        more = len(found.isolations) - 3
        raise ReleaseError(
            f"Refusing to publish release {cand.request.release_id!r} to "
            f"{cand.request.destination}: differencing it with an earlier release would "
            f"disclose rows: {lines}{f' (and {more} more)' if more > 0 else ''}. Publish a "
            "batch that differs from each earlier one by at least k rows of every class it "
            "changes (docs/privacy.md, successive releases); nothing was written.")
    if found.not_compared:
        LOG.warning("Release(s) %s of %s have no comparable source fingerprints (archived "
                    "before they were kept, or under another signing key): not compared.",
                    list(found.not_compared), cand.request.destination)
    return {**found.to_dict(), "k": k, "keyed": new.keyed}


def earlier_source_rows(destination: Any, release_id: str) -> dict[str, Any]:
    """``{release_id: SourceRows or None}`` of every other release archived for
    ``destination`` (``releases/<id>/`` holding a file of its name)."""
    from astrid_airflow.release import SOURCE_ROWS_SUFFIX, SourceRows

    out: dict[str, Any] = {}
    for archive in listing(destination.parent / "releases"):
        if archive.name == release_id or not (archive / destination.name).exists():
            continue
        prints = sorted((p for p in listing(archive)
                         if p.name.endswith(SOURCE_ROWS_SUFFIX)), key=lambda p: p.name)
        out[archive.name] = SourceRows.from_bytes(read_bytes(prints[0]), str(prints[0])) \
            if prints else None
    return out
