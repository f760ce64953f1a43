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
import os
from collections.abc import Mapping
from typing import Any

from astrid_airflow._errors import ReleaseError
from astrid_airflow.engine import StageRate, stage_progress

from ._publication import Candidate, Published, PublishRequest
from ._publish_files import (
    is_local_fs,
    listing,
    manifest_text,
    read_bytes,
    read_manifest,
    repair_current,
    where,
    write_bytes_atomic,
    write_text_atomic,
)
from ._successive import check_successive


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
    if request.table_writer is None:
        refuse_archive_destination(request.destination)
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
        _check_stated_model(request.attacker_model, receipt, receipt_file)
        _note_newer_version(receipt)
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
    if is_local_fs(fs):  # one publisher at a time per destination (flock)
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


def refuse_archive_destination(destination: Any) -> None:
    """``ReleaseError`` if ``destination`` lies inside another release's archive
    (``<dir>/releases/...`` beside a release manifest ``<dir>/*.release.json``): an
    archive never changes, whatever the flags."""
    for folder in _ancestors(destination):
        if folder.name == "releases" and any(
                p.name.endswith(".release.json") for p in listing(folder.parent)):
            raise ReleaseError(f"Refusing to publish to {destination}: it lies inside the "
                               f"release archive {folder}, which never changes (force or "
                               "not); publish beside it instead.")


def _ancestors(path: Any) -> list[Any]:
    out, current = [], path.parent
    while current.parent != current and len(out) < 64:
        out.append(current)
        current = current.parent
    return out


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
    return inner if is_local_fs(fs) else str(path)


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
    if is_local_fs(where(cand.request.destination)[0]):
        _refuse_links(cand)
    current = read_manifest(cand.manifest_path)
    decision = cand.decide(current)
    if not decision.publish:
        repair_current(cand.request.destination, current)
        return Published(decision.action, decision.reason, **outcome,
                         manifest_path=cand.manifest_path, write_archive=False)
    plan = cand.plan(decision.write_archive, check_successive(cand))
    for data, dst in plan.copies:
        # the archived file is created, never replaced: a release id names one archive
        write_bytes_atomic(dst, data, overwrite=dst != cand.archived)
    write_text_atomic(plan.manifest_path, manifest_text(plan.manifest))
    return Published("publish", decision.reason, **outcome, manifest_path=plan.manifest_path,
                     manifest=plan.manifest, extra=plan.extra,
                     write_archive=decision.write_archive)


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


def publish_gate_dir(surrogate: Any) -> Any:
    """Where a publish that gates the staged file itself writes its validation, Data
    Docs and receipt: ``<stem>.publish-gate/`` beside it, never over the gate task's
    own files (the archive and the release manifest then hold and name these)."""
    return surrogate.parent / f"{surrogate.stem}.publish-gate"


def _gate_here(request: PublishRequest, digest: str) -> tuple[Any, dict[str, Any]]:
    """Run the gate on the staged file; its files go to :func:`publish_gate_dir`."""
    from ._gate_stage import GateRequest, gate_release

    gated = gate_release(GateRequest(
        original=request.original, surrogate=request.surrogate, artefact=request.artefact,
        random_state=request.random_state, run_id=request.run_id, sha256=digest,
        out_dir=publish_gate_dir(request.surrogate), report=False))
    return gated.receipt_path, gated.receipt




def _note_newer_version(receipt: Any) -> None:
    """Log a warning when the release was gated against an artefact version its store
    has since superseded: publishing it is allowed (a pinned version, a roll-back), but
    not silently. A store that cannot be read here is not checked."""
    import logging

    from astrid_airflow.release import ArtefactStore, split_artefact_ref

    ref, store = receipt.get("artefact"), receipt.get("store")
    if not isinstance(ref, str) or not isinstance(store, str):
        return
    name, version = split_artefact_ref(ref)  # the gate records NAME@vNNNN
    if version is None:
        return
    try:
        versions = ArtefactStore(store).versions(name)
    except Exception:  # a note never stops a release (no access here, no store)
        return
    latest = versions[-1]
    if version in versions and latest != version:
        logging.getLogger("astrid_airflow").warning(
            "Publishing a release gated against %s, while the store %s now holds %s@%s "
            "(learned since): the newer version's recipe and policy did not judge it.",
            ref, store, name, latest)


def _check_stated_model(stated: Any, receipt: Any, where: Any) -> None:
    """Refuse a release gated under another attacker model than the one stated."""
    if stated is None:
        return
    from astrid_airflow._errors import ParameterError
    from astrid_airflow.gate import GatePolicy
    from astrid_airflow.release import check_attacker_model

    stated = check_attacker_model(stated)
    gated = GatePolicy.from_dict(dict(receipt.get("policy") or {})).attacker_model
    if stated != gated:
        raise ParameterError(f"Refusing to publish: the receipt {where} was gated under "
                             f"another attacker model ({gated.describe()}) than the one "
                             f"stated ({stated.describe()}); nothing published.")
