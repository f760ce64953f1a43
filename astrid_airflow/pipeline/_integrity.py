"""What publish may rely on, and the bytes it writes.

* **Which receipts are trusted.** With a signing key configured, only a receipt whose
  HMAC signature holds (:func:`~astrid_airflow.release.receipt_trusted`); without one,
  none: publish runs the gate itself (``original`` and ``artefact`` given) or refuses.
* **What is published.** Never the staged file's bytes: its values, read once from the
  bytes whose SHA-256 the receipt names, in the canonical serialisation of their
  format, in a row order drawn from a seed that depends on the values, the release id
  and the key only (:func:`~astrid_airflow.io.canonical_release`).
* **What is archived.** The receipt (re-serialised from what was verified), then only
  the files the receipt says the gate wrote, read from the receipt's directory, with
  the recorded digests (:func:`~astrid_airflow.release.gate_file_sources`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from astrid_airflow._errors import ReleaseError

from ._publish_files import read_bytes

_ORDER_CONTEXT = b"astrid release row order\0"


@dataclass(frozen=True)
class CanonicalRelease:
    """The bytes of a release and how they were made.

    ``data``: the published bytes; ``sha256``: their digest; ``staged_sha256``: the
    digest of the staged bytes the gate judged; ``content_sha256``: of the values
    (sorted canonical form); ``order_seed``: the row order's seed.
    """

    data: bytes
    sha256: str
    staged_sha256: str
    content_sha256: str
    order_seed: int
    kind: str


def require_trust(receipt: Any, key: bytes | None, *, where: str, surrogate: Any) -> None:
    """Refuse a receipt publish may not rely on (``ReleaseError``)."""
    from astrid_airflow.release import receipt_trusted

    if not isinstance(receipt, dict):
        raise ReleaseError(f"Refusing to publish {surrogate}: the gate receipt {where} is "
                           "not a JSON object.")
    if receipt_trusted(receipt, key, where=where):
        from astrid_airflow.io import unsigned_allowed

        if receipt.get("allow_unsigned") is True and not unsigned_allowed():
            raise ReleaseError(
                f"Refusing to publish {surrogate}: the gate behind {where} read an "
                "unsigned artefact store (--allow-unsigned); publishing what it judged "
                "needs --allow-unsigned (ASTRID_ALLOW_UNSIGNED=1) here too.")
        return
    if key is None:
        raise ReleaseError(
            f"Refusing to publish {surrogate}: no signing key is configured, so the gate "
            f"receipt {where} cannot be trusted (anyone who can write the staging area "
            "can write one). Give the original and the artefact so that publish runs the "
            "gate itself, or configure the key ($ASTRID_SIGNING_KEY, or the Airflow "
            "connection 'astrid_signing', or the key file validate created) for both "
            "validate and publish.")


def order_seed_of(release_id: str, random_state: Any, key: bytes | None):
    """``seed_of(content digest)`` for :func:`canonical_release`: keyed with the signing
    key when there is one (nobody without it can predict or steer the order)."""
    salt = f"{release_id}\0{'' if random_state is None else int(random_state)}\0"

    def seed_of(content: str) -> int:
        message = _ORDER_CONTEXT + salt.encode() + content.encode()
        digest = hmac.new(key, message, hashlib.sha256).digest() if key is not None \
            else hashlib.sha256(message).digest()
        return int.from_bytes(digest[:8], "big") >> 1  # 63 bits, as every recorded seed
    return seed_of


def canonical_of(staged: bytes, suffix: str, *, release_id: str, random_state: Any,
                 key: bytes | None) -> CanonicalRelease:
    """The canonical release of the staged bytes ``staged`` (a ``suffix`` file)."""
    from astrid_airflow.io import canonical_release, input_format

    kind = input_format(f"staged{suffix}")
    with tempfile.TemporaryDirectory(prefix="astrid_release_") as tmp:
        path = os.path.join(tmp, f"staged{suffix}")
        with open(path, "wb") as fh:
            fh.write(staged)
        data, seed, content = canonical_release(
            path, seed_of=order_seed_of(release_id, random_state, key), kind=kind)
    return CanonicalRelease(data=data, sha256=hashlib.sha256(data).hexdigest(),
                            staged_sha256=hashlib.sha256(staged).hexdigest(),
                            content_sha256=content, order_seed=seed, kind=kind)


def gate_files(receipt: dict, receipt_file: Any) -> list[tuple[str, bytes]]:
    """``(name, bytes)`` of the files the gate wrote, each checked against the receipt.

    Read from the receipt's directory only. The receipt seals only what the gate
    wrote, so a file missing there (a receipt moved away from its evidence) or with
    other bytes refuses the release: an archive holds the evidence it names.
    """
    from astrid_airflow._errors import short_list
    from astrid_airflow.release import checked_bytes, gate_file_sources

    sources = gate_file_sources(receipt, receipt_file.parent)
    missing = [rel for rel, source, _ in sources if not source.exists()]
    if missing:
        raise ReleaseError(f"Refusing to publish: the gate receipt {receipt_file} seals "
                           f"{short_list(missing)}, not found beside it (a receipt moved "
                           "away from the files its gate wrote archives no evidence). Keep "
                           "the receipt where the gate wrote it, or gate again; nothing "
                           "was published.")
    return [(rel, checked_bytes(read_bytes(source), digest, str(source)))
            for rel, source, digest in sources]


def release_record(receipt: dict, canonical: CanonicalRelease, trust: str
                   ) -> dict[str, Any]:
    """What the release manifest adds about integrity: the digests the release rests on,
    why its receipt was trusted (``"gated here"`` or ``"signed"``) and how its bytes were
    made."""
    return {
        "staged_sha256": canonical.staged_sha256,
        "artefact_sha256": receipt.get("artefact_sha256"),
        "suite_sha256": receipt.get("suite_sha256"),
        "policy_sha256": receipt.get("policy_sha256"),
        "validation_sha256": receipt.get("validation_sha256"),
        "receipt_trust": trust,
        # the gate read an unsigned store as checksummed only (--allow-unsigned)
        "unsigned_store_allowed": receipt.get("allow_unsigned") is True,
        "canonical": {"format": canonical.kind, "content_sha256": canonical.content_sha256,
                      "order_seed": canonical.order_seed},
    }


def trusted_canonical(surrogate: Any, receipt: Any, receipt_path: Any, *, release_id: str,
                      surrogate_name: str | None = None) -> CanonicalRelease:
    """For publishers other than :func:`publish_release` (a database table): the
    canonical release of ``surrogate`` if ``receipt`` passed, is for its bytes and is
    trusted (signed with the key in force); ``ReleaseError`` otherwise."""
    from astrid_airflow.io import signing_key
    from astrid_airflow.release import check_receipt

    staged = read_bytes(surrogate)
    check_receipt(receipt, surrogate=surrogate_name or str(surrogate),
                  sha256=hashlib.sha256(staged).hexdigest(), where=str(receipt_path))
    key = signing_key()
    require_trust(receipt, key, where=str(receipt_path), surrogate=surrogate)
    return canonical_of(staged, surrogate.suffix, release_id=release_id, random_state=None,
                        key=key)
