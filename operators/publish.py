"""``PublishSurrogateOperator``: release a gated surrogate, atomically, with an Asset event.

Layout beside the published file ``<dir>/<file>``::

    <dir>/<file>                         the current release (replaced in one rename)
    <dir>/<stem>.release.json            manifest of the current release (written after it)
    <dir>/releases/<release_id>/<file>   every release, immutable, with its gate receipt,
    <dir>/releases/<release_id>/...      metrics, validation result JSON and Data Docs

Order of the writes: the archive copy first, then the current file, then the manifest.
A failure at any point leaves the previous release in place; the manifest's SHA-256
says which bytes it describes. Consumers that must not race a newer release read the
immutable archive path carried by the Asset event.

The operator releases only a file whose gate receipt (written by
``SurrogateGateOperator``) says it passed *and* whose bytes still hash to the value the
gate judged: a failed, missing or stale receipt fails the task and publishes nothing.

A database destination (``conn://CONN_ID/SCHEMA.TABLE``, see ``operators/sql.py``) is
loaded into a staging table and swapped in within one transaction
(``astrid_airflow.publish_table``); the table's comment and
``<stem>.release.json`` beside the staged file record the release.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Sequence
from typing import Any

from airflow.sdk import Asset, BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from ._common import (
    as_path,
    atomic_copy,
    atomic_write_text,
    json_small,
    local_input,
    sha256_of,
    to_float,
    translate_errors,
)
from .gate import gate_receipt_path
from .shuffle import metrics_path
from .sql import TableRef, as_table, database_source, sql_errors

__all__ = ["PublishSurrogateOperator", "release_id_from_run"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def release_id_from_run(run_id: object) -> str:
    """A directory-safe release id from a run id (``manual__2026-01-01T00:00:00+00:00``)."""
    text = _UNSAFE.sub("_", str(run_id or "")).strip("._-")
    if not text:
        text = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return text[:200]


class PublishSurrogateOperator(BaseOperator):
    """Promote a staged, gated surrogate to its published location.

    Parameters
    ----------
    surrogate : str or ObjectStoragePath
        The staged surrogate (templated).
    destination : str or ObjectStoragePath
        The published file, e.g. ``.../published/synthetic/surrogate.parquet``; its
        suffix should match the surrogate's. Or a database table
        ``conn://CONN_ID/SCHEMA.TABLE``, created with the original's column types and
        swapped in atomically (templated).
    receipt : str or ObjectStoragePath, optional
        The gate receipt; default ``<surrogate stem>.gate.json`` beside the surrogate
        (templated).
    release_id : str, optional
        Name of the release directory; default derived from the run id (templated).
    lock_timeout : float, default 30
        Database destinations: seconds to wait for readers of the old release before
        the swap gives up (a retryable failure; nothing changes) (templated).

    Returns (XCom)
    --------------
    dict
        ``release_id``, ``published``, ``archived``, ``manifest``, ``sha256``,
        ``artefact``.

    Notes
    -----
    Every ``Asset`` in ``outlets`` gets the event of this release with ``extra``
    ``{"release_id", "published", "archived", "sha256", "artefact"}``.
    """

    template_fields: Sequence[str] = ("surrogate", "destination", "receipt", "release_id",
                                      "lock_timeout")
    ui_color = "#cfe2ff"

    def __init__(self, *, surrogate: Any, destination: Any, receipt: Any = None,
                 release_id: str | None = None, lock_timeout: float | str = 30.0,
                 **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.surrogate = surrogate
        self.destination = destination
        self.receipt = receipt
        self.release_id = release_id
        self.lock_timeout = lock_timeout

    def _read_receipt(self, surrogate: Any) -> tuple[Any, dict[str, Any]]:
        path = as_path(self.receipt, "receipt") if self.receipt else \
            gate_receipt_path(surrogate)
        if not path.exists():
            raise AirflowFailException(f"Refusing to publish {surrogate}: no gate receipt at "
                                       f"{path} (was the surrogate gated?).")
        try:
            from astrid_airflow.io import load_json

            receipt = load_json(path.read_bytes(), f"gate receipt {path}")
        except ValueError as exc:  # DataError: not JSON, not UTF-8, nested too deep
            raise AirflowFailException(f"Refusing to publish {surrogate}: the gate receipt "
                                       f"{path} is corrupt ({exc}).") from None
        if not isinstance(receipt, dict):
            raise AirflowFailException(f"Refusing to publish {surrogate}: the gate receipt "
                                       f"{path} is not a JSON object.")
        return path, receipt

    def execute(self, context: Any) -> dict[str, Any]:
        surrogate = as_path(self.surrogate, "surrogate")
        destination = as_table(self.destination, "destination")
        if not surrogate.exists():
            raise AirflowFailException(f"Refusing to publish: no staged surrogate at "
                                       f"{surrogate}.")
        receipt_path, receipt = self._read_receipt(surrogate)
        if receipt.get("success") is not True:
            raise AirflowFailException(
                f"Refusing to publish {surrogate}: it FAILED the release gate "
                f"(failed: {receipt.get('failed')}); the last release stays in place.")
        digest = sha256_of(surrogate)
        if receipt.get("sha256") != digest or receipt.get("surrogate") != str(surrogate):
            raise AirflowFailException(
                f"Refusing to publish {surrogate}: it is not the file the gate passed "
                f"(receipt {receipt_path} is for {receipt.get('surrogate')} with sha256 "
                f"{str(receipt.get('sha256'))[:12]}…, the file now hashes to {digest[:12]}…).")

        release_id = str(self.release_id) if self.release_id else \
            release_id_from_run(context.get("run_id"))
        if _UNSAFE.search(release_id) or release_id.startswith("."):
            raise AirflowFailException(f"Invalid release_id {release_id!r}: use letters, "
                                       "digits, '.', '_' and '-'.")
        if isinstance(destination, TableRef):
            return self._publish_table(context, surrogate, destination, receipt, digest,
                                       release_id)
        archive = destination.parent / "releases" / release_id
        archived = archive / destination.name
        # 1. the immutable archive (file, receipt, validation JSON and Data Docs)
        atomic_copy(surrogate, archived)
        atomic_copy(receipt_path, archive / receipt_path.name)
        for key in ("validation", "data_docs"):
            if receipt.get(key):
                src = as_path(receipt[key], key)
                if src.exists():
                    atomic_copy(src, archive / src.name)
        if metrics_path(surrogate).exists():
            atomic_copy(metrics_path(surrogate), archive / metrics_path(surrogate).name)
        report_dir = None
        if receipt.get("report"):
            # the release report directory, file by file (its index.html last)
            source = as_path(receipt["report"], "report").parent
            report_dir = archive / source.name
            files = sorted((p for p in source.iterdir() if p.is_file()),
                           key=lambda p: p.name == "index.html")
            for entry in files:
                atomic_copy(entry, report_dir / entry.name)
        # 2. the current release, in one rename
        atomic_copy(surrogate, destination)
        # 3. its manifest
        manifest_path = destination.parent / f"{destination.stem}.release.json"
        manifest = {
            "release_id": release_id,
            "published": str(destination),
            "archived": str(archived),
            "sha256": digest,
            "artefact": receipt.get("artefact"),
            "original": receipt.get("original"),
            "validation": str(archive / as_path(receipt["validation"], "validation").name)
            if receipt.get("validation") else None,
            "data_docs": str(archive / as_path(receipt["data_docs"], "data_docs").name)
            if receipt.get("data_docs") else None,
            "report": str(report_dir / "index.html") if report_dir else None,
            "expectations": receipt.get("expectations"),
            "run_id": context.get("run_id"),
            "published_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        atomic_write_text(manifest_path, json.dumps(json_small(manifest), indent=2) + "\n")
        extra = {"release_id": release_id, "published": str(destination),
                 "archived": str(archived), "sha256": digest,
                 "artefact": receipt.get("artefact")}
        events = context.get("outlet_events")
        for outlet in self.outlets or []:
            if isinstance(outlet, Asset) and events is not None:
                events[outlet].extra = dict(extra)
        self.log.info("Published release %s: %s (sha256 %s…).", release_id, destination,
                      digest[:12])
        return json_small({**extra, "manifest": str(manifest_path)})

    def _publish_table(self, context: Any, surrogate: Any, destination: TableRef,
                       receipt: dict[str, Any], digest: str, release_id: str) -> dict[str, Any]:
        """Load the gated file into a staging table and swap it in, in one transaction."""
        from astrid_airflow import publish_table

        lock_timeout = to_float(self.lock_timeout, "lock_timeout")
        published_at = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        comment = {"astrid_release": release_id, "sha256": digest,
                   "artefact": receipt.get("artefact"), "run_id": context.get("run_id"),
                   "published_at": published_at}
        with translate_errors(f"Cannot publish {surrogate} to {destination}"), \
                sql_errors(f"Cannot publish {surrogate} to {destination}"), \
                local_input(surrogate) as local:
            info = publish_table(local, database_source(destination), comment=comment,
                                 lock_timeout=lock_timeout)
        manifest_path = surrogate.parent / f"{surrogate.stem}.release.json"
        manifest = {
            "release_id": release_id,
            "published": str(destination),
            "table": info["table"],
            "rows": info["rows"],
            "columns": info["columns"],
            "archived": str(surrogate),
            "sha256": digest,
            "artefact": receipt.get("artefact"),
            "original": receipt.get("original"),
            "validation": receipt.get("validation"),
            "data_docs": receipt.get("data_docs"),
            "report": receipt.get("report"),
            "expectations": receipt.get("expectations"),
            "swap_seconds": info["swap_seconds"],
            "run_id": context.get("run_id"),
            "published_at": published_at,
        }
        atomic_write_text(manifest_path, json.dumps(json_small(manifest), indent=2) + "\n")
        extra = {"release_id": release_id, "published": str(destination),
                 "archived": str(surrogate), "sha256": digest,
                 "artefact": receipt.get("artefact"), "table": info["table"],
                 "rows": info["rows"]}
        events = context.get("outlet_events")
        for outlet in self.outlets or []:
            if isinstance(outlet, Asset) and events is not None:
                events[outlet].extra = dict(extra)
        self.log.info("Published release %s into table %s (%d rows, swap %.3f s).",
                      release_id, info["table"], info["rows"], info["swap_seconds"])
        return json_small({**extra, "manifest": str(manifest_path)})
