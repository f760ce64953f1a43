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

Releases only move forward (``astrid_airflow.decide_release``, shared with any other
publisher): a candidate whose run was due before the current release's is skipped
unless ``force``, and the current release published again (same id, same SHA-256) is
skipped too: no rewrite, no second Asset event. The manifest records ``run_after``.

A database destination (``conn://CONN_ID/SCHEMA.TABLE``, see ``operators/sql.py``) is
loaded into a staging table and swapped in within one transaction
(``astrid_airflow.publish_table``); the table's comment and
``<stem>.release.json`` beside the staged file record the release.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from airflow.sdk import Asset, BaseOperator

# the library's one release-id rule (``release_id_from_run`` is importable from here)
from astrid_airflow.release import check_release_id, release_id_from_run

from ._common import (
    as_path,
    json_small,
    run_timestamp,
    to_bool,
    to_float,
    translate_errors,
)
from ._compat import AirflowFailException, AirflowSkipException
from ._lineage import RecordsLineage, published
from ._signing import DEFAULT_CONN_ID, signing_from
from .links import ArtefactLink, DataDocsLink, ReleaseReportLink, push_links
from .sql import TableRef, as_table, publish_to_table, sql_errors

__all__ = ["PublishSurrogateOperator", "release_id_from_run"]


@contextlib.contextmanager
def _refused() -> Iterator[None]:
    """A refused release (``ReleaseError``) fails the task without retries, as worded."""
    from astrid_airflow import ReleaseError

    try:
        yield
    except ReleaseError as exc:
        raise AirflowFailException(str(exc)) from exc


class PublishSurrogateOperator(RecordsLineage, BaseOperator):
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
    destination_conn_id : str, optional
        The Airflow connection of ``destination``: a common.sql database connection, in
        which ``destination`` is a table name (``[SCHEMA.]TABLE``), or the object-storage
        connection that opens a ``destination`` URL (``aws_default``...). Without it,
        ``destination`` is a path, a URL or the legacy ``conn://CONN_ID/SCHEMA.TABLE``
        (templated).
    receipt : str or ObjectStoragePath, optional
        The gate receipt; default ``<surrogate stem>.gate.json`` beside the surrogate
        (templated).
    release_id : str, optional
        Name of the release directory; default derived from the run id (templated).
    lock_timeout : float, default 30
        Database destinations: seconds to wait for readers of the old release before
        the swap gives up (a retryable failure; nothing changes) (templated).
    force : bool, default False
        Publish even a release older than the current one (a
        deliberate rollback), or re-publish the current release with a new Asset event
        (templated). An archived release is never overwritten with other bytes.
    link_base_url : dict or str, optional
        Storage prefix → public base URL for the extra links ("Data Docs", "Release
        report", "Artefact") of the release (see ``astrid_airflow.operators.links``).
    allow_unsigned : bool, default False
        Read an artefact store that no configured key signed (saved before signing was
        the default) as checksummed only; recorded in the receipt and the release
        manifest (templated). ``ASTRID_ALLOW_UNSIGNED=1`` does the same for a worker.
    signing_conn_id : str, optional
        Airflow connection holding the key receipts are signed with (default
        ``astrid_signing``; without it ``$ASTRID_SIGNING_KEY``). Without any key no
        receipt is trusted: the task runs the gate itself on ``original`` with
        ``artefact`` from ``store`` (give them), or fails.
    original, store, artefact : optional
        What to gate the staged file against when no signing key is configured (as for
        ``SurrogateGateOperator``; ``original`` a file) (templated). A database
        destination always needs the key.

    Returns (XCom)
    --------------
    dict
        ``release_id``, ``published``, ``archived``, ``manifest``, ``sha256``,
        ``artefact``.

    Notes
    -----
    Every ``Asset`` in ``outlets`` gets the event of this release with ``extra``
    ``{"release_id", "published", "archived", "sha256", "artefact"}``.

    Publication is monotonic and idempotent (``astrid_airflow.decide_release``): a
    release whose run was due before the current release's (clearing an old run), or
    the current release again (same ``release_id`` and SHA-256), is not published; the
    task is **skipped** with the reason in its log, so nothing is rewritten and no
    Asset event is emitted (Airflow emits outlet events only on success).
    """

    template_fields: Sequence[str] = ("destination_conn_id",
                                      "surrogate", "destination", "receipt", "release_id",
                                      "lock_timeout", "force", "original", "store",
                                      "artefact", "allow_unsigned")
    ui_color = "#cfe2ff"
    operator_extra_links = (DataDocsLink(), ReleaseReportLink(), ArtefactLink())

    def __init__(self, *, surrogate: Any, destination: Any, receipt: Any = None,
                 destination_conn_id: str | None = None,
                 release_id: str | None = None, lock_timeout: float | str = 30.0,
                 force: bool | str = False, link_base_url: Any = None,
                 signing_conn_id: str | None = DEFAULT_CONN_ID, original: Any = None,
                 store: Any = None, artefact: str | None = None,
                 allow_unsigned: bool | str = False, **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.signing_conn_id = signing_conn_id
        self.allow_unsigned = allow_unsigned
        self.original, self.store, self.artefact = original, store, artefact
        self.surrogate = surrogate
        self.destination = destination
        self.destination_conn_id = destination_conn_id
        self.receipt = receipt
        self.release_id = release_id
        self.lock_timeout = lock_timeout
        self.force = force
        self.link_base_url = link_base_url

    def execute(self, context: Any) -> dict[str, Any]:
        # receipts are trusted only when signed with this key
        with signing_from(self.signing_conn_id, self.allow_unsigned):
            return self._execute(context)

    def _execute(self, context: Any) -> dict[str, Any]:
        from astrid_airflow.io import using
        from astrid_airflow.pipeline import PublishRequest, publish_release

        surrogate = as_path(self.surrogate, "surrogate")
        self._lineage = {"inputs": [{"location": str(surrogate)}]}  # a failure names it
        destination = as_table(self.destination, "destination", self.destination_conn_id)
        release_id = str(self.release_id) if self.release_id else \
            release_id_from_run(context.get("run_id"))
        table = isinstance(destination, TableRef)
        # a table is written through its Airflow connection; it needs a signed receipt
        original, artefact, fs = (None, None, None) if table else self._gate_inputs()
        kind = {"table_writer": _ConnectionTableWriter(destination),
                "lock_timeout": to_float(self.lock_timeout, "lock_timeout")} if table else {}
        errors = _table_errors(f"Cannot publish {surrogate} to {destination}") if table \
            else contextlib.nullcontext()
        with errors, _refused(), using(fs):
            done = publish_release(PublishRequest(
                surrogate=surrogate, destination=destination,
                release_id=check_release_id(release_id),
                receipt=as_path(self.receipt, "receipt") if self.receipt else None,
                surrogate_name=str(surrogate), run_after=run_timestamp(context),
                run_id=context.get("run_id"), force=to_bool(self.force, "force"),
                original=original, artefact=artefact, **kind))
        return self._announce(context, destination, done, table)

    def _announce(self, context: Any, destination: Any, done: Any, table: bool
                  ) -> dict[str, Any]:
        """Links, lineage and the Asset events of a publication; a failed gate fails the
        task, a release not published skips it (no Asset event)."""
        receipt = done.receipt
        # the gate's verdict on what is published; outputs once written
        self._lineage["inputs"][0]["assertions"] = receipt.get("expectations")
        if done.action == "failed":
            raise AirflowFailException(done.reason)
        # what the gate judged; a file publication replaces these with the archived copies
        push_links(self, context, data_docs=receipt.get("data_docs"),
                   report=receipt.get("report"), artefact=receipt.get("artefact_path"))
        if not done.published:
            # a skipped task emits no Asset event, so consumers do not run again
            self.log.warning("Not publishing: %s", done.reason)
            raise AirflowSkipException(f"Not publishing: {done.reason}")
        self.log.info("Published: %s", done.reason)
        manifest, extra = done.manifest or {}, done.extra
        if not table:
            push_links(self, context, data_docs=manifest["data_docs"],
                       report=manifest["report"], artefact=receipt.get("artefact_path"))
        places = [destination] if table else [destination, extra["archived"]]
        self._lineage["outputs"] = [published(where, release_id=done.release_id,
                                              sha256=done.sha256, receipt=receipt,
                                              rows=extra.get("rows"))
                                    for where in places]
        events = context.get("outlet_events")
        for outlet in self.outlets or []:
            if isinstance(outlet, Asset) and events is not None:
                events[outlet].extra = dict(extra)
        if table:
            self.log.info("Published release %s into table %s (%d rows, swap %.3f s).",
                          done.release_id, extra["table"], extra["rows"],
                          manifest["swap_seconds"])
        return json_small({**extra, "manifest": str(done.manifest_path)})

    def _gate_inputs(self) -> tuple[Any, str | None, Any]:
        """``(original, artefact reference, store filesystem)`` to gate here: only when
        no signing key is configured (a signed receipt is trusted) and they are given."""
        from astrid_airflow.io import signing_key

        if signing_key() is not None or not (self.original and self.store and self.artefact):
            return None, None, None
        from ._common import is_local, store_filesystem, store_url
        from .shuffle import resolve_artefact

        if isinstance(as_table(self.original, "original"), TableRef):
            raise AirflowFailException("Publishing without a signing key gates the file "
                                       "again, which needs a file original; configure the "
                                       "key instead.")
        store_path = as_path(self.store, "store")
        root, fs = store_url(store_path), store_filesystem(store_path)
        with translate_errors("Cannot resolve the artefact to gate against"):
            _, name, version = resolve_artefact(root, fs, self.artefact)
        original = as_path(self.original, "original")
        return (original.path if is_local(original) else str(original),
                f"{root.rstrip('/')}/{name}@{version}", fs)


class _ConnectionTableWriter:
    """The table writer of a database destination behind an Airflow connection
    (:func:`~.sql.publish_to_table`): what the library's table release writes with."""

    def __init__(self, destination: TableRef) -> None:
        self.destination = destination

    def publish(self, local_file: str, *, comment: Any, lock_timeout: float | None,
                guard: Any, types_from: str | None) -> dict[str, Any]:
        return publish_to_table(local_file, self.destination, comment=comment,
                                lock_timeout=lock_timeout, guard=guard,
                                types_from=types_from)


@contextlib.contextmanager
def _table_errors(what: str) -> Iterator[None]:
    """A database publication: transient database errors stay retryable, every other
    library error fails the task."""
    with translate_errors(what), sql_errors(what):
        yield
