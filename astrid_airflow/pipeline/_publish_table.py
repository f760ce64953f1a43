"""The publish stage into a database table: the same release, swapped in atomically.

:func:`~astrid_airflow.pipeline.publish_release` with ``PublishRequest(table_writer=)``
comes here once the receipt is checked and trusted and the canonical bytes made: the
decision (monotonic, idempotent) is taken on the table's comment under the writer's
publication lock, the canonical values are loaded and swapped in, and the manifest
``<stem>.release.json`` beside the staged file records the release (the file manifest's
keys and the table's: ``table``, ``rows``, ``columns``, ``swap_seconds``).

The table write itself is storage, not the stage's: a *table writer* does it, any object
with ``publish(local_file, *, comment, lock_timeout, guard, types_from) -> info`` (the
``info`` dict has ``table``, ``rows``, ``columns`` and ``swap_seconds``). The CLI passes
:class:`SqlTableWriter` over a ``postgresql://...?table=NAME`` URL, the operator one over
its Airflow connection, tests a fake.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Protocol

from astrid_airflow._errors import ReleaseError


class TableWriter(Protocol):
    """What writes a release into a database table (see the module's notes)."""

    def publish(self, local_file: str, *, comment: Any, lock_timeout: float | None,
                guard: Any, types_from: str | None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class SqlTableWriter:
    """A PostgreSQL table by URL (``postgresql://...?table=NAME``), written with the
    library's one-transaction staging and rename (:func:`~astrid_airflow.publish_table`)."""

    url: str

    def publish(self, local_file: str, *, comment: Any, lock_timeout: float | None,
                guard: Any, types_from: str | None) -> dict[str, Any]:
        from astrid_airflow.io import publish_table

        return publish_table(local_file, self.url, comment=comment,
                             lock_timeout=30.0 if lock_timeout is None else lock_timeout,
                             guard=guard, types_from=types_from)

    def __str__(self) -> str:  # never the password
        from astrid_airflow.io import sql_source

        return sql_source(self.url, need="table").shown


def table_release(comment: str | None) -> dict[str, Any] | None:
    """The release a published table's comment records (None: not an ASTRID release)."""
    try:
        recorded = json.loads(comment) if comment else None
    except json.JSONDecodeError:
        return None
    if not isinstance(recorded, dict) or "astrid_release" not in recorded:
        return None
    return {"release_id": recorded["astrid_release"], "sha256": recorded.get("sha256"),
            "run_after": recorded.get("run_after")}


class _NotPublishing(Exception):
    """Raised by the guard to roll the swap back: a decision not to publish."""

    def __init__(self, decision: Any) -> None:
        super().__init__(decision.reason)
        self.decision = decision


def promote_table(cand: Any, outcome: dict[str, Any]) -> Any:
    """Decide under the table's lock, load and swap, then write the manifest.

    ``cand`` is the checked :class:`~._publish.Candidate`; returns ``Published``.
    """
    from astrid_airflow.release import decide_release

    from ._integrity import release_record
    from ._publication import Published
    from ._publish_files import manifest_text, write_text_atomic
    from ._release_plan import manifest_path as manifest_beside
    from ._release_plan import release_manifest

    req, canonical, receipt = cand.request, cand.canonical, cand.receipt
    surrogate = req.surrogate
    published_at = cand.now.isoformat(timespec="seconds")
    comment = {"astrid_release": req.release_id, "sha256": cand.digest,
               "artefact": receipt.get("artefact"), "run_id": req.run_id,
               "run_after": cand.run_after, "published_at": published_at}
    manifest_path = manifest_beside(surrogate)
    decided: list[Any] = []

    def guard(current: str | None) -> None:
        # the table comment is the current release's manifest; decided under the
        # publication lock, so two publishers cannot both pass
        decision = decide_release(table_release(current), release_id=req.release_id,
                                  sha256=cand.digest, run_after=cand.run_after,
                                  force=req.force)
        if not decision.publish:
            raise _NotPublishing(decision)
        decided.append(decision)

    with tempfile.TemporaryDirectory(prefix="astrid_release_") as tmp:
        local = os.path.join(tmp, f"release{surrogate.suffix}")
        with open(local, "wb") as fh:
            fh.write(canonical.data)
        try:
            info = req.table_writer.publish(
                local, comment=comment, lock_timeout=req.lock_timeout, guard=guard,
                types_from=_staged_copy(surrogate, canonical, tmp))
        except _NotPublishing as stop:
            return Published(stop.decision.action, stop.decision.reason, **outcome,
                             manifest_path=manifest_path, write_archive=False)
    manifest = release_manifest(
        receipt, release_id=req.release_id, published=req.destination,
        archived=surrogate, sha256=cand.digest, run_id=req.run_id,
        run_after=cand.run_after, published_at=published_at,
        record={**release_record(dict(receipt), canonical,
                                 "gated here" if cand.gated else "signed"),
                # a table keeps no archive of source fingerprints: not compared
                "successive_releases": None},
        table=info["table"], rows=info["rows"], columns=info["columns"],
        swap_seconds=info["swap_seconds"])
    write_text_atomic(manifest_path, manifest_text(manifest))
    extra = {"release_id": req.release_id, "published": str(req.destination),
             "archived": str(surrogate), "sha256": cand.digest,
             "artefact": receipt.get("artefact"), "table": info["table"],
             "rows": info["rows"]}
    return Published("publish", decided[0].reason if decided else "published", **outcome,
                     manifest_path=manifest_path, manifest=manifest, extra=extra,
                     write_archive=False)


def _staged_copy(surrogate: Any, canonical: Any, tmp: str) -> str:
    """A local copy of the staged file, checked to be the bytes the receipt binds: the
    canonical form keeps values only, the table's SQL column types come from here."""
    import hashlib

    from ._publish_files import read_bytes

    data = read_bytes(surrogate)
    if hashlib.sha256(data).hexdigest() != canonical.staged_sha256:
        raise ReleaseError(f"Refusing to publish {surrogate}: the staged file changed after "
                           "its receipt was checked; nothing was published.")
    path = os.path.join(tmp, f"staged{surrogate.suffix}")
    with open(path, "wb") as fh:
        fh.write(data)
    return path
