"""What a promotion writes, and the one schema of a release manifest.

A file release (:func:`release_plan`) writes the archive, the current file and the
manifest; a table release (:mod:`._publish_table`) swaps the table in and writes the
manifest. Both manifests are :func:`release_manifest`: the same keys, the table's own
(``table``, ``rows``, ``columns``, ``swap_seconds``) added.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


def _weaker_of(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """``weaker_than_default``, ``policy_note`` and ``allow_weaker_policy`` of a release
    record, from the policy the receipt says the gate applied (docs/gate.md)."""
    from astrid_airflow.gate import weaker_record

    policy = receipt.get("policy")
    return weaker_record(policy if isinstance(policy, Mapping) else {},
                         receipt.get("allow_weaker_policy"))


def release_manifest(receipt: Mapping[str, Any], *, release_id: str, published: Any,
                     archived: Any, sha256: str, run_id: str | None,
                     run_after: str | None, published_at: str | None = None,
                     files: Mapping[str, Any] | None = None,
                     record: Mapping[str, Any] | None = None,
                     **more: Any) -> dict[str, Any]:
    """The manifest of a release: what it is, where, which gate judged it and how.

    ``files``: the validation JSON, Data Docs and report as they are kept with the
    release (``validation``, ``data_docs``, ``report``; default the receipt's own);
    ``record``: what it adds about integrity (``release_record``); ``more``: keys of
    the destination's kind (a table's ``table``, ``rows``...).
    """
    kept = {k: receipt.get(k) for k in ("validation", "data_docs", "report")} \
        if files is None else {k: files.get(k) for k in ("validation", "data_docs",
                                                          "report")}
    return {
        "release_id": release_id,
        "published": str(published),
        "archived": str(archived),
        "sha256": sha256,
        "artefact": receipt.get("artefact"),
        "original": receipt.get("original"),
        **kept,
        "expectations": receipt.get("expectations"),
        # named from the receipt's policy itself, so a weakened policy always shows
        **_weaker_of(receipt),
        "run_id": run_id,
        "run_after": run_after,
        "published_at": published_at or
        _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        **dict(record or {}),
        **more,
    }


def manifest_path(published: Any) -> Any:
    """``<dir>/<stem>.release.json`` beside ``published`` (a file release: the published
    file; a table release: the staged file)."""
    return published.parent / f"{published.stem}.release.json"


@dataclass(frozen=True)
class ReleasePlan:
    """How to promote a gated surrogate: the writes, in order, then the manifest.

    ``copies`` are ``(bytes, destination)`` pairs: the caller writes each with its own
    atomic writer; the order is the protocol: the immutable archive first, then the
    current file (one rename), then the manifest, so a failure at any point leaves the
    previous release in place.
    """

    copies: list[tuple[Any, Any]]
    manifest_path: Any
    manifest: dict[str, Any]
    extra: dict[str, Any]


def release_plan(surrogate: Any, destination: Any, receipt: Mapping[str, Any],
                 receipt_file: Any, release_id: str, *, sha256: str, run_after: str | None,
                 report_files: list | None = None, run_id: str | None = None,
                 write_archive: bool = True, published_at: str | None = None,
                 published: bytes = b"", gate_files: Sequence[tuple[str, bytes]] = (),
                 record: Mapping[str, Any] | None = None) -> ReleasePlan:
    """The archive, current file and manifest of a release, in protocol order.

    ``<dir>/<file>`` is the current release, ``<dir>/<stem>.release.json`` its manifest
    and ``<dir>/releases/<release_id>/`` the immutable archive: the receipt (its verified
    content, re-serialised), the files the gate wrote (``gate_files``: name relative to
    the gate's directory and verified bytes; the release report's ``index.html`` last),
    then the file itself, whose presence marks a complete archive. ``published`` is the
    release's bytes (its canonical form, never the staged file's); ``sha256`` their
    digest; ``record`` what the manifest adds about integrity. ``write_archive=False``
    (the archive already holds these bytes, :func:`~astrid_airflow.decide_release`)
    leaves it as it is. The receipt must already be checked and trusted; the release
    decided. ``report_files`` is ignored (only files the receipt lists are archived).
    """
    import json

    from astrid_airflow.io import plain

    archive = destination.parent / "releases" / release_id
    archived = archive / destination.name
    receipt_text = json.dumps(plain(dict(receipt)), indent=2, allow_nan=False) + "\n"
    copies: list[tuple[Any, Any]] = [(receipt_text.encode("utf-8"),
                                      archive / receipt_file.name)]
    named: dict[str, str] = {}
    for rel, data in sorted(gate_files, key=lambda f: f[0].endswith("/index.html")):
        target = archive
        for part in rel.split("/"):
            target = target / part
        copies.append((data, target))
        named[rel] = str(target)
    copies.append((published, archived))
    if not write_archive:
        copies = []
    copies.append((published, destination))
    stem = receipt.get("stem")
    manifest = release_manifest(
        receipt, release_id=release_id, published=destination, archived=archived,
        sha256=sha256, run_id=run_id, run_after=run_after, published_at=published_at,
        files={"validation": named.get(f"{stem}.validation.json"),
               "data_docs": named.get(f"{stem}.validation.html"),
               "report": named.get(f"{stem}.report/index.html")},
        record=record)
    extra = {"release_id": release_id, "published": str(destination),
             "archived": str(archived), "sha256": sha256,
             "artefact": receipt.get("artefact")}
    return ReleasePlan(copies=copies,
                       manifest_path=manifest_path(destination),
                       manifest=manifest, extra=extra)
