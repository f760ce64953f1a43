"""The publish stage: a gated surrogate becomes the current release, in protocol order.

``astrid publish`` and ``PublishSurrogateOperator`` are adapters over
:func:`publish_release`: they parse their arguments, map the outcome to an exit code or
to an Airflow skip/failure, and add what is theirs (links, lineage, Asset events).

Paths are anything with ``/``, ``.parent``, ``.name``, ``.stem``, ``.exists()`` and
``.iterdir()``: ``pathlib.Path`` for the CLI, Airflow's ``ObjectStoragePath`` (whose
``.fs`` is the filesystem of its connection) for the operator. Manifest and archive
paths are written as ``str(path)``, so a consumer opens them the way the publisher
named them.

Layout beside the published file ``<dir>/<file>``: the current release, its manifest
``<stem>.release.json`` and the immutable archive ``releases/<release_id>/``. The rules
(receipt, monotonic, idempotent, immutable archive) are :mod:`astrid_airflow.release`'s
pure decisions.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from astrid_airflow._errors import ReleaseError
from astrid_airflow.engine import StageRate, stage_progress


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


def publish_release(request: PublishRequest) -> Published:
    """Release ``request.surrogate`` as ``request.destination`` if its gate passed.

    Order of the writes: the archive (the file last: its presence marks a complete
    archive), then the current file in one atomic move, then the manifest, so a failure
    at any point leaves the previous release in place.

    Raises
    ------
    ReleaseError
        No surrogate or receipt, a corrupt receipt or manifest, a receipt for other
        bytes, or a release id already archived with other bytes.
    """
    from astrid_airflow.io import signing_key
    from astrid_airflow.release import check_receipt, release_time

    from ._integrity import canonical_of, require_trust

    surrogate = request.surrogate
    if not surrogate.exists():
        raise ReleaseError(f"Refusing to publish: no staged surrogate at {surrogate}.")
    key = signing_key()
    gating = request.original is not None and bool(request.artefact)
    with stage_progress("publish") as tracker:  # estimate and heartbeat
        with tracker.step("reading and hashing the staged file"):
            staged = read_bytes(surrogate)  # read once: the bytes checked are published
            digest = hashlib.sha256(staged).hexdigest()
        plan_publish(tracker, len(staged), gating=gating)
        with tracker.step("the gate, run here" if gating else "reading the signed receipt",
                          part="receipt", own_estimate=gating):
            receipt_file, receipt, gated = _receipt(request, digest)
        name = request.surrogate_name
        if name is None and isinstance(receipt, Mapping):
            name = str(receipt.get("surrogate", surrogate))
        outcome = {"release_id": request.release_id, "sha256": digest,
                   "receipt_path": receipt_file, "receipt": receipt}
        try:
            check_receipt(receipt, surrogate=name or str(surrogate), sha256=digest,
                          where=str(receipt_file))
        except ReleaseError as exc:
            if isinstance(receipt, Mapping) and receipt.get("success") is not True:
                return Published("failed", str(exc), **outcome)
            raise
        if not gated:
            require_trust(receipt, key, where=str(receipt_file), surrogate=surrogate)
        with tracker.step("the canonical re-write"):
            canonical = canonical_of(staged, surrogate.suffix, release_id=request.release_id,
                                     random_state=request.random_state, key=key)
        digest = outcome["sha256"] = canonical.sha256  # what is published, and recorded
        now = _dt.datetime.now(_dt.UTC)
        cand = Candidate(request, receipt_file, receipt, digest,
                         release_time(request.run_after or now), now, canonical, gated)
        if request.table_writer is not None:
            from ._publish_table import promote_table

            with tracker.step("promotion: the table swap, manifest"):
                return promote_table(cand, outcome)
        _refuse_inputs(cand)
        with tracker.step("promotion: archive, current file, manifest"):
            return _promote_at(cand, outcome)


# What publishing costs, ``seconds = fixed + staged bytes / per_second``: the staged file
# read and hashed, re-written canonically, archived and promoted (the gate run here has
# an estimate of its own), measured by benchmarks/bench_stage_rates.py at 100,000 and
# 300,000 rows x 31 columns of make_mixed_table on the 2-core development machine:
# benchmarks/results/stage_rates.json ("publish").
PUBLISH_RATE = StageRate(fixed=0.0, per_second=1.0e6)
_NO_COST = StageRate(fixed=0.0, per_second=float("inf"))  # reading a receipt: nothing


def plan_publish(tracker: Any, size: int, *, gating: bool) -> None:
    """Log publish's estimate: the gate (if run here), the canonical re-write and the
    promotion of a ``size``-byte staged file (its read and hash are done by now)."""
    tracker.part("receipt", 1, _NO_COST,
                 "the gate run here (its own estimate follows)" if gating else
                 "the signed receipt")
    tracker.plan(2, PUBLISH_RATE.seconds(size), f"a staged file of {size / 1e6:,.1f} MB",
                 size=size)


def _promote_at(cand: Candidate, outcome: dict[str, Any]) -> Published:
    """Promote as the destination's store allows: alone under a lock (local), by a
    compare-and-swap of the manifest (S3), or as the one publisher (other stores)."""
    fs, inner = where(cand.request.destination)
    if _is_local(fs):  # one publisher at a time per destination (flock)
        from astrid_airflow.io import file_lock

        head, tail = os.path.split(inner)
        stem = os.path.splitext(tail)[0]
        with file_lock(os.path.join(head, f".{stem}.release.lock"),
                       timeout=cand.request.lock_timeout):
            return _promote(cand, outcome)
    from astrid_airflow.io import is_s3

    if is_s3(fs):  # no locks on an object store: compare-and-swap of the manifest
        from ._publish_cas import promote_cas

        return promote_cas(cand, outcome)
    return _promote(cand, outcome)  # other stores: one publisher per destination


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

    def plan(self, write_archive: bool) -> Any:
        return _plan(self.request, self.receipt_file, self.receipt, self.canonical,
                     self.run_after, write_archive, self.now, self.gated)


def _refuse_inputs(cand: Candidate) -> None:
    """A release never replaces what it was made from: the surrogate, its
    receipt, the original, the artefact or its store."""
    from astrid_airflow._errors import StoreError
    from astrid_airflow.io import refuse_overwriting_inputs

    req, receipt = cand.request, cand.receipt
    inputs = [req.surrogate, cand.receipt_file, req.original, receipt.get("original"),
              receipt.get("artefact_path"), receipt.get("store")]
    if req.artefact:
        from astrid_airflow.release import parse_artefact_ref

        loc = parse_artefact_ref(req.artefact)
        inputs += [loc.root, loc.path]
    outputs = [_text(req.destination), _text(cand.manifest_path)]
    try:
        refuse_overwriting_inputs(outputs, [_text(p) for p in inputs if p])
    except StoreError as exc:
        raise ReleaseError(f"Refusing to publish to {req.destination}: {exc}") from None
    for src in (_text(p) for p in inputs if p):  # nor writes into an input directory
        if os.path.isdir(src) and os.path.realpath(outputs[0]).startswith(
                os.path.realpath(src).rstrip(os.sep) + os.sep):
            raise ReleaseError(f"Refusing to publish to {req.destination}: it is inside the "
                               f"input directory {src!r} (the artefact store or another "
                               "input); choose another destination.")


def _text(path: Any) -> str:
    """A path object as the local path or URL the io layer takes."""
    fs, inner = where(path)
    return inner if _is_local(fs) else str(path)


def _refuse_links(cand: Candidate) -> None:
    """The archive is never written through a symbolic link: ``releases/``
    or ``releases/<id>`` pointing elsewhere would put the release outside its place."""
    releases = cand.archived.parent.parent
    for p in (releases, cand.archived.parent, cand.archived):
        if os.path.islink(_text(p)):
            raise ReleaseError(f"Refusing to publish release {cand.request.release_id!r}: "
                               f"{p} is a symbolic link; archives are written only into "
                               "real directories beside the published file.")


def _promote(cand: Candidate, outcome: dict[str, Any]) -> Published:
    """Decide and write, alone on the destination: archive, current file, manifest."""
    if _is_local(where(cand.request.destination)[0]):
        _refuse_links(cand)
    current = read_manifest(cand.manifest_path)
    decision = cand.decide(current)
    if not decision.publish:
        repair_current(cand.request.destination, current)
        return Published(decision.action, decision.reason, **outcome,
                         manifest_path=cand.manifest_path, write_archive=False)
    plan = cand.plan(decision.write_archive)
    for data, dst in plan.copies:
        # the archived file is created, never replaced: a release id names one archive
        write_bytes_atomic(dst, data, overwrite=dst != cand.archived)
    write_text_atomic(plan.manifest_path, manifest_text(plan.manifest))
    return Published("publish", decision.reason, **outcome, manifest_path=plan.manifest_path,
                     manifest=plan.manifest, extra=plan.extra,
                     write_archive=decision.write_archive)


def repair_current(destination: Any, manifest: Mapping[str, Any] | None) -> bool:
    """Make the current file hold the manifest's release again, from its archive.

    After a publisher died between the current file and the manifest, they disagree; a
    retry that finds nothing to publish puts the archived bytes back. True if it did.
    """
    if not manifest or not manifest.get("archived") or not manifest.get("sha256"):
        return False
    if destination.exists() and sha256_of(destination) == manifest["sha256"]:
        return False
    archived = type(destination)(str(manifest["archived"]))
    if not archived.exists() or sha256_of(archived) != manifest["sha256"]:
        return False  # nothing trustworthy to restore from
    copy_atomic(archived, destination)
    return True


def _plan(request: PublishRequest, receipt_file: Any, receipt: Mapping[str, Any],
          canonical: Any, run_after: str | None, write_archive: bool,
          now: _dt.datetime, gated: bool) -> Any:
    from ._integrity import gate_files, release_record
    from ._release_plan import release_plan

    return release_plan(request.surrogate, request.destination, receipt, receipt_file,
                        request.release_id, sha256=canonical.sha256, run_after=run_after,
                        run_id=request.run_id, write_archive=write_archive,
                        published_at=now.isoformat(timespec="seconds"),
                        published=canonical.data,
                        gate_files=gate_files(dict(receipt), receipt_file),
                        record=release_record(dict(receipt), canonical,
                                              "gated here" if gated else "signed"))


def _receipt(request: PublishRequest, digest: str) -> tuple[Any, Any, bool]:
    """The receipt's path, parsed content and whether the gate ran here."""
    from ._gate_stage import receipt_path

    if request.original is not None and request.artefact:
        return (*_gate_here(request, digest), True)
    path = request.receipt if request.receipt is not None else \
        receipt_path(request.surrogate)
    return path, read_receipt(request.surrogate, path), False


def read_receipt(surrogate: Any, path: Any) -> Any:
    """The parsed gate receipt at ``path``; ``ReleaseError`` if missing or corrupt."""
    from astrid_airflow.io import load_json

    if not path.exists():
        raise ReleaseError(f"Refusing to publish {surrogate}: no gate receipt at {path} "
                           "(was the surrogate gated?).")
    try:
        return load_json(read_bytes(path), f"gate receipt {path}")
    except ValueError as exc:  # DataError: not JSON, not UTF-8, nested too deep
        raise ReleaseError(f"Refusing to publish {surrogate}: the gate receipt {path} is "
                           f"corrupt ({exc}).") from None


def _gate_here(request: PublishRequest, digest: str) -> tuple[Any, dict[str, Any]]:
    """Run the gate on the staged file and write its receipt beside it."""
    from ._gate_stage import GateRequest, gate_release

    gated = gate_release(GateRequest(
        original=request.original, surrogate=request.surrogate, artefact=request.artefact,
        random_state=request.random_state, run_id=request.run_id, sha256=digest,
        report=False))
    return gated.receipt_path, gated.receipt


def read_manifest(path: Any) -> dict[str, Any] | None:
    """The current release's manifest, None before the first release."""
    if not path.exists():
        return None
    return parse_manifest(read_bytes(path), path)


def parse_manifest(data: bytes, path: Any) -> dict[str, Any]:
    """A manifest's JSON object; ``ReleaseError`` naming ``path`` if it is corrupt."""
    from astrid_airflow.io import load_json

    try:
        manifest = load_json(data, f"release manifest {path}")
    except ValueError as exc:  # DataError: not JSON, not UTF-8, nested too deep
        raise ReleaseError(f"Refusing to publish: the current release's manifest {path} "
                           f"is corrupt ({exc}); repair or remove it.") from None
    if not isinstance(manifest, dict):
        raise ReleaseError(f"Refusing to publish: the current release's manifest {path} "
                           "is not a JSON object.")
    return manifest


# ---------------------------------------------------------------- bytes in and out

def manifest_text(obj: Any) -> str:
    """JSON of a manifest or receipt: native values, paths and dates as text."""
    from astrid_airflow.io import plain

    return json.dumps(plain(obj), indent=2, default=_as_text, allow_nan=False) + "\n"


def _as_text(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def where(path: Any) -> tuple[Any, str]:
    """``(fsspec filesystem, path inside it)`` of a path object or string."""
    if not isinstance(path, (str, PurePath)) and hasattr(path, "fs") and \
            hasattr(path, "path"):
        return path.fs, path.path  # ObjectStoragePath / UPath: its connection's fs
    from astrid_airflow.io import split_url

    fs, inner, _local = split_url(path)
    return fs, inner


def read_bytes(path: Any) -> bytes:
    fs, inner = where(path)
    return fs.cat_file(inner)


def sha256_of(path: Any) -> str:
    """Hex SHA-256 of a file's bytes (:func:`~astrid_airflow.io.file_sha256`)."""
    from astrid_airflow.io import file_sha256

    return file_sha256(path)


def _is_local(fs: Any) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def copy_atomic(src: Any, dst: Any, *, overwrite: bool = True) -> None:
    """Copy so that a reader of ``dst`` sees the old or the complete new file."""
    from astrid_airflow.io import atomic_path, fs_put_file

    sfs, sin = where(src)
    dfs, din = where(dst)
    if _is_local(dfs):
        with atomic_path(din, overwrite=overwrite) as tmp, sfs.open(sin, "rb") as fin, \
                open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, length=1 << 20)
        return
    with tempfile.TemporaryDirectory(prefix="astrid_copy_") as scratch:
        local = os.path.join(scratch, "data")
        with sfs.open(sin, "rb") as fin, open(local, "wb") as fout:
            shutil.copyfileobj(fin, fout, length=1 << 20)
        fs_put_file(dfs, local, din, overwrite=overwrite)


def write_text_atomic(dst: Any, text: str, *, overwrite: bool = True) -> None:
    """Write ``text`` (UTF-8) to ``dst`` atomically."""
    write_bytes_atomic(dst, text.encode("utf-8"), overwrite=overwrite)


def write_bytes_atomic(dst: Any, data: bytes, *, overwrite: bool = True) -> None:
    """Write ``data`` to ``dst`` atomically."""
    from astrid_airflow.io import fs_write_bytes

    fs, inner = where(dst)
    fs_write_bytes(fs, inner, data, overwrite=overwrite)
