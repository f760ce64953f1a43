"""The gate stage: judge a staged surrogate, report on it, seal and write its receipt.

``astrid validate`` and ``SurrogateGateOperator`` are adapters over :func:`gate_release`
(``publish_release`` gating a file itself calls it too): they parse their arguments,
map the verdict to an exit code or an Airflow failure, and add what is theirs (links,
lineage, the operator's downloads and uploads).

Paths are anything with ``/``, ``.parent``, ``.name``, ``.stem`` and ``.exists()``:
``pathlib.Path`` for the CLI, Airflow's ``ObjectStoragePath`` for the operators.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


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
    from astrid_airflow.io import unsigned_allowed

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
        # an unsigned store was read as checksummed only (--allow-unsigned)
        "allow_unsigned": unsigned_allowed(),
        "random_state": result.random_state,
        "report": report,
        "run_id": run_id,
        "gated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def sealed_receipt_of(result: Any, *, surrogate: Any, original: Any, artefact: str,
                      out_dir: Any, run_id: str | None = None, report: str | None = None,
                      report_files: Any = (), fs: Any = None) -> dict[str, Any]:
    """The sealed receipt (:func:`~astrid_airflow.release.seal_gate_receipt`) of a gate
    run on the file ``surrogate`` whose outputs are in ``out_dir``: what every gate
    writes as ``<out_dir>/<stem>.gate.json``.

    ``artefact`` is the reference the gate was given; the receipt names it as
    ``NAME@VERSION`` with its file and store (``fs`` opens a remote store).
    ``report``/``report_files``: the release report's index and the files it wrote.
    """
    from astrid_airflow.release import parse_artefact_ref, seal_gate_receipt

    loc = parse_artefact_ref(artefact, fs=fs)
    receipt = gate_receipt(
        result, surrogate=surrogate, sha256=result.surrogate_sha256, original=original,
        artefact=f"{loc.name}@{loc.version}" if loc.name else str(loc.path),
        artefact_path=str(loc.path), store=str(loc.root) if loc.root else "",
        out_dir=out_dir, report=report, run_id=run_id)
    return seal_gate_receipt(receipt, result, out_dir=out_dir, stem=surrogate.stem,
                             report_files=report_files)


@dataclass(frozen=True)
class GateRequest:
    """One gate run.

    Attributes
    ----------
    original : str, path or DataFrame
        The table the surrogate was made from, as the gate reads it.
    surrogate : path
        The staged surrogate (a path object, or a URL text with ``seal=False``).
    artefact : str
        Artefact reference (``ROOT/NAME@VERSION``...).
    surrogate_file : str, optional
        The local file the gate reads (a download of a remote ``surrogate``); default
        ``surrogate`` itself.
    original_name : optional
        How the receipt names the original (default ``original``).
    out_dir : path, optional
        Where the validation JSON, Data Docs, report and receipt go; default beside the
        surrogate.
    outputs : callable, optional
        ``outputs()`` is a context manager yielding the local directory the gate writes
        its result and Data Docs to; what is there on exit must be in ``out_dir`` (a
        remote ``out_dir``: the operator's upload). Default: ``out_dir`` itself.
    policy, metrics, random_state, remedies, allow_weaker_policy, verbose, fs
        As :func:`~astrid_airflow.validate_surrogate` takes them.
    run_id : str, optional
        Recorded in the receipt.
    sha256 : str, optional
        The digest of the bytes the caller holds (they must be the ones judged);
        default the file's digest before judging.
    report : bool, default True
        Write the release report (``<stem>.report/``) beside the Data Docs.
    seal : bool, default True
        Check the bytes judged, seal and write the receipt; False: judge only (a table
        or a remote file the CLI cannot write beside).
    """

    original: Any
    surrogate: Any
    artefact: str
    surrogate_file: str | None = None
    original_name: Any = None
    out_dir: Any = None
    outputs: Callable[[], Any] | None = None
    policy: Any = None
    metrics: Mapping[str, Any] | None = None
    random_state: Any = None
    remedies: bool = True
    allow_weaker_policy: bool | None = None
    verbose: bool = False
    fs: Any = None
    run_id: str | None = None
    sha256: str | None = None
    report: bool = True
    seal: bool = True


@dataclass(frozen=True)
class Gated:
    """What :func:`gate_release` judged and wrote.

    ``result`` is the :class:`~astrid_airflow.GateResult`; ``receipt`` the sealed
    receipt written at ``receipt_path`` (None with ``seal=False``); ``validation`` and
    ``data_docs`` where they are in ``out_dir``; ``report`` the release report's index
    (None if not written, ``report_problem`` says why when it failed).
    """

    result: Any
    sha256: str | None = None
    receipt: dict[str, Any] | None = None
    receipt_path: Any = None
    validation: Any = None
    data_docs: Any = None
    report: str | None = None
    report_files: tuple[str, ...] = ()
    report_problem: str | None = None

    @property
    def success(self) -> bool:
        return bool(self.result.success)


def gate_release(request: GateRequest) -> Gated:
    """Judge ``request.surrogate``, write its release report and its sealed receipt.

    The validation JSON and Data Docs go to ``out_dir``; with ``seal`` the bytes judged
    must be the file's bytes before and after judging (``GateError`` otherwise, and no
    receipt is written), then the release report (whether the gate passed or failed, so
    a reviewer sees why; a report that cannot be written does not decide the release)
    and the receipt ``<stem>.gate.json``, written atomically, binding those files.
    """
    from astrid_airflow._errors import GateError
    from astrid_airflow.gate import validate_surrogate
    from astrid_airflow.io import file_sha256

    from ._publish_files import manifest_text, write_text_atomic

    surrogate, seal = request.surrogate, request.seal
    out_dir = request.out_dir if request.out_dir is not None or not seal else \
        surrogate.parent
    if seal and not surrogate.exists():
        raise GateError(f"Cannot gate {surrogate}: the staged surrogate does not exist.")
    before = (request.sha256 or file_sha256(surrogate)) if seal else None
    outputs = request.outputs or (lambda: contextlib.nullcontext(
        None if out_dir is None else path_text(out_dir)))
    with outputs() as local_dir:
        result = validate_surrogate(
            request.original, request.surrogate_file or path_text(surrogate),
            request.artefact, policy=request.policy, out_dir=local_dir,
            random_state=request.random_state,
            metrics=dict(request.metrics) if request.metrics is not None else None,
            verbose=request.verbose, remedies=request.remedies,
            allow_weaker_policy=request.allow_weaker_policy, fs=request.fs)
    if not seal:
        return Gated(result=result)
    if result.surrogate_sha256 != before or file_sha256(surrogate) != before:
        raise GateError(f"Cannot gate {surrogate}: the staged surrogate changed while it "
                        "was judged; nothing was decided.")
    report, files, problem = _write_report(request, out_dir) if request.report else \
        (None, (), None)
    receipt = sealed_receipt_of(
        result, surrogate=surrogate, artefact=request.artefact, out_dir=out_dir,
        original=request.original if request.original_name is None else
        request.original_name, run_id=request.run_id, report=report,
        report_files=files, fs=request.fs)
    path = receipt_path(surrogate, out_dir)
    write_text_atomic(path, manifest_text(receipt))
    return Gated(result=result, sha256=before, receipt=receipt, receipt_path=path,
                 validation=receipt["validation"] and out_dir /
                 os.path.basename(receipt["validation"]),
                 data_docs=receipt["data_docs"] and out_dir /
                 os.path.basename(receipt["data_docs"]),
                 report=report, report_files=files, report_problem=problem)


def _write_report(request: GateRequest, out_dir: Any
                  ) -> tuple[str | None, tuple[str, ...], str | None]:
    """``(index, files, problem)`` of the release report ``<stem>.report/`` beside the
    Data Docs, with the staged metrics (``<stem>.metrics.json``) when there are some."""
    from astrid_airflow._errors import AstridError
    from astrid_airflow.io import load_json, using
    from astrid_airflow.report import write_report

    from ._stage import metrics_path

    surrogate = request.surrogate
    metrics_file = metrics_path(surrogate)
    try:
        # the shuffle operator's file nests the SurrogateMetrics under "metrics"
        metrics = load_json(metrics_file.read_bytes(), str(metrics_file))["metrics"] \
            if metrics_file.exists() else request.metrics
        with using(request.fs):  # the artefact read through the store's connection
            written = write_report(
                request.artefact, path_text(out_dir / f"{surrogate.stem}.report"),
                original=request.original, surrogate_metrics=metrics,
                surrogate=request.surrogate_file or path_text(surrogate),
                data_docs=f"../{surrogate.stem}.validation.html", overwrite=True)
    except (AstridError, OSError, KeyError, TypeError) as exc:
        return None, (), f"{type(exc).__name__}: {exc}"
    return str(written.index), tuple(written.files), None


def path_text(path: Any) -> str:
    """A path object as the local path or URL the library's functions take."""
    if isinstance(path, str):
        return path
    protocol = getattr(path, "protocol", None)
    if protocol is None:  # pathlib
        return os.fspath(path)
    return path.path if protocol in ("", "file", "local") else str(path)
