"""The release pipeline's gate receipt and release plan, for the CLI and the operators.

The learn step is :mod:`._learn` (``learn_release``), the stage step :mod:`._stage`
(``stage_release``); here the receipt a gate writes and the plan a promotion follows,
each written once.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# ------------------------------------------------------------------------------- gate
# Paths are anything with ``/``, ``.parent``, ``.name`` and ``.stem``: ``pathlib.Path``
# for the CLI, Airflow's ``ObjectStoragePath`` for the operators (which keep the I/O).

def receipt_path(surrogate: Any, out_dir: Any = None) -> Any:
    """``<out_dir or the surrogate's directory>/<stem>.gate.json``."""
    return (out_dir if out_dir is not None else surrogate.parent) / \
        f"{surrogate.stem}.gate.json"


def gate_receipt(result: Any, *, surrogate: Any, sha256: str, original: Any,
                 artefact: str, store: str, out_dir: Any, artefact_path: str | None = None,
                 report: str | None = None, run_id: str | None = None) -> dict[str, Any]:
    """The gate receipt: the one place its schema is written.

    A receipt says whether the gate passed (``success``) for exactly which bytes
    (``surrogate``, ``sha256``), judged against which ``original`` and ``artefact``
    (``NAME@VERSION`` in ``store``), with the outcome of every expectation; the publish
    step trusts only a passing receipt whose ``sha256`` still matches the file.

    Parameters
    ----------
    result : GateResult
        What :func:`~astrid_airflow.validate_surrogate` returned.
    out_dir : path
        Where the validation JSON and Data Docs were written.
    """
    d = result.to_dict()

    def beside(written: str | None) -> str | None:
        return str(out_dir / os.path.basename(written)) if written else None

    return {
        "success": result.success,
        "surrogate": str(surrogate),
        "sha256": sha256,
        "original": str(original),
        "artefact": artefact,
        "artefact_path": artefact_path,
        "store": store,
        "validation": beside(d.get("validation_json")),
        "data_docs": beside(d.get("data_docs")),
        "failed": result.failed,
        "expectations": [{k: e[k] for k in ("name", "category", "success",
                                             "observed_value", "threshold")}
                         for e in d["expectations"]],
        "policy": d["policy"],
        "policy_note": d.get("policy_note"),
        "allow_weaker_policy": d.get("allow_weaker_policy"),
        "random_state": result.random_state,
        "report": report,
        "run_id": run_id,
        "gated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def sealed_receipt_of(result: Any, *, surrogate: Any, original: Any, artefact: str,
                      out_dir: Any, run_id: str | None = None) -> dict[str, Any]:
    """The sealed receipt (:func:`~astrid_airflow.release.seal_gate_receipt`) of a gate
    run on the file ``surrogate`` whose outputs are in ``out_dir``: what ``validate``
    and ``publish`` (gating itself) write as ``<out_dir>/<stem>.gate.json``."""
    # public names: this module moves to astrid_airflow.pipeline (layers)
    from astrid_airflow.release import parse_artefact_ref, seal_gate_receipt

    loc = parse_artefact_ref(artefact)
    receipt = gate_receipt(
        result, surrogate=surrogate, sha256=result.surrogate_sha256, original=original,
        artefact=f"{loc.name}@{loc.version}" if loc.name else str(loc.path),
        artefact_path=str(loc.path), store=str(loc.root) if loc.root else "",
        out_dir=out_dir, run_id=run_id)
    return seal_gate_receipt(receipt, result, out_dir=out_dir, stem=surrogate.stem)


# ---------------------------------------------------------------------------- promote

def _weaker_of(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """``weaker_than_default``, ``policy_note`` and ``allow_weaker_policy`` of a release
    record, from the policy the receipt says the gate applied (docs/gate.md)."""
    from astrid_airflow.gate import weaker_record

    policy = receipt.get("policy")
    return weaker_record(policy if isinstance(policy, Mapping) else {},
                         receipt.get("allow_weaker_policy"))


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
    manifest = {
        "release_id": release_id,
        "published": str(destination),
        "archived": str(archived),
        "sha256": sha256,
        "artefact": receipt.get("artefact"),
        "original": receipt.get("original"),
        "validation": named.get(f"{stem}.validation.json"),
        "data_docs": named.get(f"{stem}.validation.html"),
        "report": named.get(f"{stem}.report/index.html"),
        "expectations": receipt.get("expectations"),
        # named from the receipt's policy itself, so a weakened policy always shows
        **_weaker_of(receipt),
        "run_id": run_id,
        "run_after": run_after,
        "published_at": published_at or
        _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        **dict(record or {}),
    }
    extra = {"release_id": release_id, "published": str(destination),
             "archived": str(archived), "sha256": sha256,
             "artefact": receipt.get("artefact")}
    return ReleasePlan(copies=copies,
                       manifest_path=destination.parent / f"{destination.stem}.release.json",
                       manifest=manifest, extra=extra)
