"""Gate receipts that cannot be forged, and the only files a release may archive.

A receipt (``<stem>.gate.json``, written by ``validate`` and the gate operator) is a
claim: "this gate passed these bytes". A user who can write the staging area can write
any claim, so :func:`seal_receipt` binds it to everything the decision rested on:

* ``sha256``: the surrogate's bytes that were judged;
* ``artefact_sha256`` / ``suite_sha256``: the artefact version and its gate suite
  (the store's manifest vouches for both, :mod:`._manifest`);
* ``policy`` and ``policy_sha256``: the thresholds applied;
* ``validation_sha256`` and ``files``: the SHA-256 of every file the gate wrote (the
  validation JSON, its Data Docs, the source fingerprints, the release report), by its
  name relative to the
  receipt's directory, the one place the gate writes them;

and, with a signing key configured (:mod:`astrid_airflow.io._signing`), signs it. Only a
receipt whose signature holds under the key is *trusted*; without a key, publish does
not trust any receipt and runs the gate again (:func:`receipt_trusted`).

Publish archives only the files a receipt lists, read from the receipt's directory,
with the recorded digests (:func:`gate_file_sources`): never a path the receipt names.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from astrid_airflow._errors import ReleaseError
from astrid_airflow.io import SIGNATURE, STORE_NAME, sign, signature_problem

from ._history import SOURCE_ROWS_SUFFIX

RECEIPT_FORMAT = 2


def artefact_sha256(artefact: Any) -> str:
    """SHA-256 of an artefact's ``artefact.json`` as ``ArtefactStore.save`` writes it."""
    return hashlib.sha256(artefact.to_json().encode("utf-8")).hexdigest()


def policy_sha256(policy: Mapping[str, Any]) -> str:
    """SHA-256 of a policy's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(dict(policy), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_name(rel: object, stem: str) -> str:
    """``rel`` if it is a name the gate writes for ``stem``, else ``ReleaseError``."""
    ok = isinstance(rel, str) and (
        rel in (f"{stem}.validation.json", f"{stem}.validation.html",
                f"{stem}{SOURCE_ROWS_SUFFIX}")
        or (rel.count("/") == 1 and rel.split("/")[0] == f"{stem}.report"
            and STORE_NAME.fullmatch(rel.split("/")[1]) is not None
            and ".." not in rel.split("/")[1]))
    if not ok:
        raise ReleaseError(f"Refusing the gate receipt: {str(rel)[:120]!r} is not a file the "
                           f"gate writes for {stem!r} (<stem>.validation.json/.html, "
                           f"<stem>{SOURCE_ROWS_SUFFIX}, <stem>.report/<file>).")
    return rel


def seal_receipt(receipt: Mapping[str, Any], *, stem: str, artefact_sha256: str | None,
                 suite_sha256: str | None, gate_files: Mapping[str, bytes],
                 key: bytes | None) -> dict[str, Any]:
    """``receipt`` bound to its inputs and outputs, and signed if ``key`` is given.

    ``gate_files``: ``{name relative to the receipt's directory: bytes}`` of every file
    the gate wrote for the surrogate ``stem`` (validation JSON first of all).
    """
    files = {_check_name(rel, stem): hashlib.sha256(data).hexdigest()
             for rel, data in sorted(gate_files.items())}
    sealed = {k: v for k, v in receipt.items() if k != SIGNATURE}
    sealed.update(
        receipt_format=RECEIPT_FORMAT, stem=stem, artefact_sha256=artefact_sha256,
        suite_sha256=suite_sha256,
        policy_sha256=policy_sha256(receipt.get("policy") or {}),
        validation_sha256=files.get(f"{stem}.validation.json"), files=files)
    return sign(sealed, key) if key is not None else sealed


def receipt_trusted(receipt: Mapping[str, Any], key: bytes | None, *,
                    where: str = "the gate receipt") -> bool:
    """Whether publish may rely on ``receipt`` without gating again.

    True only with a key whose signature over the receipt holds (and a receipt of this
    format). False without a key: the caller runs the gate again. With a key, an
    unsigned, forged or altered receipt is a ``ReleaseError``: it is refused outright.
    """
    if key is None:
        return False
    problem = signature_problem(receipt, key)
    if problem is None and receipt.get("receipt_format") != RECEIPT_FORMAT:
        problem = f"unknown receipt format {str(receipt.get('receipt_format'))[:20]!r}"
    if problem is not None:
        raise ReleaseError(f"Refusing {where}: {problem}. Only a receipt the gate signed "
                           "with the configured key is trusted; run validate again.")
    if receipt.get("policy_sha256") != policy_sha256(receipt.get("policy") or {}):
        raise ReleaseError(f"Refusing {where}: its policy does not match its digest.")
    return True


def gate_file_sources(receipt: Mapping[str, Any], receipt_dir: Any,
                      ) -> list[tuple[str, Any, str]]:
    """``(name, source path, sha256)`` of each file the receipt says the gate wrote.

    The source is ``receipt_dir / name``: where the gate wrote it, never a path taken
    from the receipt. Names are checked against what the gate writes for the receipt's
    surrogate (``ReleaseError`` otherwise). The caller copies a file only if its bytes
    have the recorded digest (:func:`checked_bytes`).
    """
    stem = receipt.get("stem")
    files = receipt.get("files")
    if not isinstance(stem, str) or not isinstance(files, Mapping):
        raise ReleaseError("Refusing the gate receipt: it lists no files the gate wrote "
                           "(written before receipts were sealed; run validate again).")
    out = []
    for rel, digest in sorted(files.items()):
        _check_name(rel, stem)
        if not isinstance(digest, str):
            raise ReleaseError(f"Refusing the gate receipt: no digest for {rel!r}.")
        source = receipt_dir
        for part in rel.split("/"):
            source = source / part
        out.append((rel, source, digest))
    return out


def checked_bytes(data: bytes, digest: str, shown: str) -> bytes:
    """``data`` if it hashes to ``digest``, else ``ReleaseError`` (nothing is copied)."""
    found = hashlib.sha256(data).hexdigest()
    if found != digest:
        raise ReleaseError(f"Refusing to publish: {shown} is not the file the gate wrote "
                           f"(sha256 {found[:12]}…, the receipt records {digest[:12]}…).")
    return data


def seal_gate_receipt(receipt: Mapping[str, Any], result: Any, *, out_dir: Any, stem: str,
                      report_files: Any = (), key: bytes | None = None) -> dict[str, Any]:
    """:func:`seal_receipt` of a receipt just written by a gate run ``result``.

    ``out_dir`` is where the gate wrote its files (a ``pathlib.Path`` or Airflow
    ``ObjectStoragePath``; the receipt goes there too); ``report_files`` the names of
    the files of ``<stem>.report/`` the release report wrote (``WrittenReport.files``),
    the only ones of that directory a release archives. ``key``: the signing key in
    force (:func:`astrid_airflow.io.signing_key`, created if there is none) unless given.
    """
    from astrid_airflow.io import signing_key_or_new

    names = [f"{stem}.validation.json", f"{stem}.validation.html", f"{stem}{SOURCE_ROWS_SUFFIX}",
             *(f"{stem}.report/{str(f).replace(chr(92), '/').rsplit('/', 1)[-1]}"
               for f in report_files)]
    files = {}
    for rel in names:
        path = out_dir
        for part in rel.split("/"):
            path = path / part
        if path.exists():
            files[rel] = path.read_bytes()
    summary = getattr(result, "artefact", None) or {}
    suite = getattr(result, "suite", None) or {}
    return seal_receipt(receipt, stem=stem, artefact_sha256=summary.get("sha256"),
                        suite_sha256=suite.get("sha256"), gate_files=files,
                        key=signing_key_or_new(key))
