"""One publication: what is asked (:class:`PublishRequest`), the checked candidate every
promotion strategy works on (:class:`Candidate`) and what was done (:class:`Published`)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from astrid_airflow._errors import ReleaseError

from ._publish_files import sha256_of


@dataclass(frozen=True)
class PublishRequest:
    """One publication.

    Attributes
    ----------
    surrogate, destination : path
        The staged surrogate and the published file.
    release_id : str
        Name of the release (its archive directory).
    receipt : path, optional
        The gate receipt; default ``<stem>.gate.json`` beside the surrogate. Ignored
        when ``original`` and ``artefact`` are given: the gate runs here and writes it.
    surrogate_name : str, optional
        How the receipt must name the surrogate; None accepts the receipt's own name
        (the bytes are still checked).
    run_after : datetime or str, optional
        When the release was due (orders releases); None: now.
    run_id : str, optional
        Recorded in the manifest.
    force : bool
        Publish an older release, or the current one again (never a changed archive).
    original, artefact, random_state
        Gate here (``validate_surrogate``) instead of reading a receipt.
    lock_timeout : float
        Local destinations: seconds to wait for another publisher of the same
        destination (then ``TimeoutError``, retryable: nothing changed); a table: for
        readers of the old release (the table writer's lock).
    table_writer : TableWriter, optional
        ``destination`` is a database table written by this object
        (:mod:`._publish_table`); the manifest goes beside the surrogate.
    attacker_model : AttackerModel or dict, optional
        The model the publisher states the release under: a receipt whose policy
        declares another is refused (``ParameterError``); None: not checked.
    """

    surrogate: Any
    destination: Any
    release_id: str
    receipt: Any = None
    surrogate_name: str | None = None
    run_after: Any = None
    run_id: str | None = None
    force: bool = False
    original: Any = None
    artefact: str | None = None
    random_state: Any = None
    lock_timeout: float = 600.0
    table_writer: Any = None
    attacker_model: Any = None


@dataclass(frozen=True)
class Published:
    """What :func:`publish_release` did.

    ``action``: ``publish`` (this call made it the current release: announce it once),
    ``same`` (already current), ``older`` (a newer release is current) or ``failed``
    (the receipt says the gate failed; nothing written). ``reason`` is one sentence.
    """

    action: str
    reason: str
    release_id: str
    sha256: str
    receipt_path: Any
    receipt: Mapping[str, Any]
    manifest_path: Any = None
    manifest: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    write_archive: bool = True

    @property
    def published(self) -> bool:
        return self.action == "publish"


@dataclass(frozen=True)
class Candidate:
    """A checked candidate release: what every promotion strategy needs."""

    request: PublishRequest
    receipt_file: Any
    receipt: Mapping[str, Any]
    digest: str
    run_after: str | None
    now: _dt.datetime
    canonical: Any = None  # the bytes to publish (pipeline._integrity.CanonicalRelease)
    gated: bool = False  # the gate ran here (else the receipt was trusted as signed)

    @property
    def manifest_path(self) -> Any:
        from ._release_plan import manifest_path

        return manifest_path(self.request.destination)

    @property
    def archived(self) -> Any:
        d = self.request.destination
        return d.parent / "releases" / self.request.release_id / d.name

    def decide(self, current: Mapping[str, Any] | None) -> Any:
        from astrid_airflow.release import decide_release

        archived, dest = self.archived, self.request.destination
        if current is None and not self.request.force and dest.exists() and \
                sha256_of(dest) != self.digest:
            raise ReleaseError(
                f"Refusing to publish the first release to {dest}: a file that is not an "
                "ASTRID release is already there (no release manifest beside it). Move it, "
                "or pass force (--force) to replace it.")
        return decide_release(
            current, release_id=self.request.release_id, sha256=self.digest,
            run_after=self.run_after,
            archived_sha256=sha256_of(archived) if archived.exists() else None,
            force=self.request.force)

    def plan(self, write_archive: bool, successive: Mapping[str, Any] | None = None) -> Any:
        """The release's writes; ``successive``: its comparison with the earlier ones."""
        return _plan(self.request, self.receipt_file, self.receipt, self.canonical,
                     self.run_after, write_archive, self.now, self.gated, successive)


def _plan(request: PublishRequest, receipt_file: Any, receipt: Mapping[str, Any],
          canonical: Any, run_after: str | None, write_archive: bool,
          now: _dt.datetime, gated: bool, successive: Mapping[str, Any] | None) -> Any:
    from ._integrity import gate_files, release_record
    from ._release_plan import release_plan

    return release_plan(request.surrogate, request.destination, receipt, receipt_file,
                        request.release_id, sha256=canonical.sha256, run_after=run_after,
                        run_id=request.run_id, write_archive=write_archive,
                        published_at=now.isoformat(timespec="seconds"),
                        published=canonical.data,
                        gate_files=gate_files(dict(receipt), receipt_file),
                        record={**release_record(dict(receipt), canonical,
                                                 "gated here" if gated else "signed"),
                                "successive_releases": successive})
