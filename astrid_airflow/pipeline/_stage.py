"""The stage step: a GoldenEye surrogate of a table, measured, with its metrics file.

``astrid shuffle`` and ``GoldenEyeShuffleOperator`` are adapters over
:func:`stage_release`: they parse their arguments, move bytes (a database table, an
object store) and print or return what the stage wrote. The stage writes the surrogate
atomically, measured before it is moved into place, then ``<stem>.metrics.json`` beside
it: the same record from both doors for the same inputs and seed.
"""

from __future__ import annotations

import json
import os
import posixpath
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from astrid_airflow.engine import stage_progress
from astrid_airflow.release import (
    ProtectsNothingWarning,
    intact_row_proportion,
    metrics_rate,
    shuffle_file,
    surrogate_metrics,
    surrogate_paths,
)


@dataclass(frozen=True)
class StagedSurrogate:
    """What :func:`stage_surrogate` wrote and measured.

    Attributes
    ----------
    paths : list of str
        The surrogate file(s) (one per copy).
    metrics : dict
        :class:`~astrid_airflow.SurrogateMetrics` of the first copy, as a dict.
    copies : list of float or None
        Intact-row proportion of every copy (``n_copies > 1`` only).
    protects_nothing : bool
        A one-group grouping: every surrogate row is an original row.
    seed : int
        The seed used.
    """

    paths: list[str]
    metrics: dict[str, Any] = field(default_factory=dict)
    copies: list[float] | None = None
    protects_nothing: bool = False
    seed: int = 0


@dataclass(frozen=True)
class StageRequest:
    """One staging of a surrogate (:func:`stage_release`).

    Attributes
    ----------
    source : str or path-like
        The table: CSV, Parquet or ARFF (local path or fsspec URL; a database table is
        the adapter's to bring to a file).
    artefact : GroupingArtefact or str
        The learned grouping, or a reference the stage loads
        (:func:`~astrid_airflow.load_artefact`: ``STORE/NAME@VERSION``, a path).
    destination : str or path-like
        Output ``.parquet``/``.csv``; copies go to ``stem-1.ext``, ...
    random_state : int
        Seed (the same seed gives the same bytes).
    n_copies, utility, overwrite, remedies
        As :func:`stage_surrogate`.
    metrics_file : str or path-like, optional
        Where the metrics record goes; default ``<stem>.metrics.json`` beside
        ``destination`` (:func:`metrics_path`).
    original_name, surrogate_name : str, optional
        How the record names the table and the surrogate (an operator's URL, a database
        table without its password); default the paths given. A local path is named
        ``file://`` + its absolute path, as the operators name it.
    artefact_ref, store : str, optional
        How the record names the artefact (``NAME@VERSION``) and its store; taken from
        the reference when the stage loads it.
    """

    source: str | os.PathLike
    artefact: Any
    destination: str | os.PathLike
    random_state: int
    n_copies: int = 1
    utility: bool = True
    overwrite: bool = False
    remedies: bool = True
    metrics_file: str | os.PathLike | None = None
    original_name: str | None = None
    surrogate_name: str | None = None
    artefact_ref: str | None = None
    store: str | None = None


@dataclass(frozen=True)
class Staged(StagedSurrogate):
    """What :func:`stage_release` wrote: the surrogate(s) and the metrics record.

    Attributes
    ----------
    record : dict
        The JSON written to ``metrics_file``: ``surrogate``, ``original``, ``artefact``,
        ``store``, ``seed``, ``rows``, ``seconds`` (this stage's duration: the one key
        that differs between two runs), ``metrics``, ``remedies`` (a recipe was
        applied) and, with copies, ``copies``.
    metrics_file : str
    artefact : GroupingArtefact
        The artefact used (loaded here when the request named it).
    artefact_path : str or None
        Its ``artefact.json`` when the stage loaded it from a reference.
    """

    record: dict[str, Any] = field(default_factory=dict)
    metrics_file: str = ""
    artefact: Any = None
    artefact_path: str | None = None


def metrics_path(surrogate: Any) -> Any:
    """``<stem>.metrics.json`` beside a staged surrogate, of the surrogate's kind: a path
    object (``pathlib.Path``, ``ObjectStoragePath``) or a local path or URL as text."""
    if not hasattr(surrogate, "parent"):
        head, tail = posixpath.split(os.fspath(surrogate))
        name = f"{os.path.splitext(tail)[0]}.metrics.json"
        return posixpath.join(head, name) if head else name
    return surrogate.parent / f"{surrogate.stem}.metrics.json"


def stage_release(request: StageRequest) -> Staged:
    """Stage a measured surrogate of ``request.source`` and write its metrics record.

    The surrogate is complete and in place before the record is written (atomically);
    an existing record is refused without ``overwrite`` before any work, as an existing
    surrogate is.

    Raises
    ------
    StoreError
        An output exists (without ``overwrite``) or cannot be written.
    ArtefactError, DataError, ParameterError
        A bad artefact, table or argument (nothing written).
    """
    started = time.perf_counter()
    artefact, ref, store, artefact_path = _artefact_of(request)
    record_file = os.fspath(request.metrics_file) if request.metrics_file is not None \
        else metrics_path(os.fspath(request.destination))
    _refuse_existing(record_file, request)
    if hasattr(artefact, "refuse_unseen_classes"):  # before any work: nothing written
        artefact.refuse_unseen_classes(request.source)
    staged = stage_surrogate(request.source, artefact, request.destination,
                             random_state=request.random_state, n_copies=request.n_copies,
                             utility=request.utility, overwrite=request.overwrite,
                             remedies=request.remedies)
    record = _record(request, staged, artefact, ref, store, started)
    _write_record(record_file, record)
    return Staged(paths=staged.paths, metrics=staged.metrics, copies=staged.copies,
                  protects_nothing=staged.protects_nothing, seed=staged.seed,
                  record=record, metrics_file=record_file, artefact=artefact,
                  artefact_path=artefact_path)


def _artefact_of(request: StageRequest) -> tuple[Any, str | None, str | None, str | None]:
    """``(artefact, NAME@VERSION or path, store root, artefact.json)`` of the request."""
    if not isinstance(request.artefact, (str, os.PathLike)):
        return request.artefact, request.artefact_ref, request.store, None
    from astrid_airflow.release import load_artefact

    artefact, loc = load_artefact(request.artefact)
    ref = request.artefact_ref or (f"{loc.name}@{loc.version}" if loc.name else loc.path)
    root = loc.root if loc.root is None or "://" in str(loc.root) else \
        os.path.abspath(loc.root)
    return artefact, ref, request.store or root, loc.path


def _named(name: Any) -> str:
    """A path as the record names it: a local path as ``file://`` + its absolute path
    (as the operators name a local file), anything else as given."""
    text = os.fspath(name) if isinstance(name, os.PathLike) else str(name)
    return text if "://" in text else "file://" + os.path.abspath(text)


def _record(request: StageRequest, staged: StagedSurrogate, artefact: Any,
            ref: str | None, store: str | None, started: float) -> dict[str, Any]:
    from astrid_airflow.io import plain

    surrogate = request.surrogate_name or staged.paths[0]
    record: dict[str, Any] = {
        "surrogate": _named(surrogate),
        "original": _named(request.original_name or request.source),
        "artefact": ref,
        "store": store,
        "seed": staged.seed,
        "rows": staged.metrics.get("rows"),
        "seconds": round(time.perf_counter() - started, 3),
        "metrics": staged.metrics,
        "remedies": bool(request.remedies and artefact.recipe is not None),
    }
    if staged.copies is not None:
        record["copies"] = [{"surrogate": _named(p), "intact_row_proportion": v}
                            for p, v in zip(staged.paths, staged.copies)]
    # one JSON round trip: the record returned is exactly what the file holds
    return json.loads(json.dumps(plain(record), default=_as_text, allow_nan=False))


def _as_text(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _refuse_existing(path: str, request: StageRequest) -> None:
    """An existing record is replaced only with ``overwrite``; an existing surrogate is
    left to ``shuffle_file``, which refuses it naming it."""
    from astrid_airflow._errors import StoreError
    from astrid_airflow.io import split_url

    def exists(p: str) -> bool:
        fs, inner, _local = split_url(p)
        return bool(fs.exists(inner))

    if request.overwrite or not exists(path):
        return
    if not any(exists(p) for p in surrogate_paths(request.destination, request.n_copies)):
        raise StoreError(f"Refusing to overwrite existing output {path!r} (the metrics "
                         "record of the surrogate); pass overwrite (--overwrite).")


def _write_record(path: str, record: dict[str, Any]) -> None:
    from astrid_airflow.io import atomic_write_text, fs_write_bytes, split_url

    text = json.dumps(record, indent=2) + "\n"
    fs, inner, local = split_url(path)
    if local:
        atomic_write_text(inner, text, overwrite=True)
    else:
        fs_write_bytes(fs, inner, text.encode("utf-8"), overwrite=True)


def stage_surrogate(src: str | os.PathLike, artefact: Any, dest: str | os.PathLike, *,
                    random_state: int, n_copies: int = 1, utility: bool = True,
                    overwrite: bool = False, remedies: bool = True) -> StagedSurrogate:
    """Write GoldenEye surrogate(s) of ``src`` atomically, measured before publication.

    The metrics are computed on the complete temporary outputs before any is moved into
    place (``shuffle_file``'s ``before_publish``), so a failure leaves no output behind.
    A one-group grouping is reported in ``protects_nothing`` (the warning is caught
    here, so every caller can say it loudly in its own way). :func:`stage_release` adds
    the metrics record beside the output.

    Parameters
    ----------
    src : str or path-like
        The table: CSV, Parquet or ARFF (local path or fsspec URL).
    artefact : GroupingArtefact
        The learned grouping.
    dest : str or path-like
        Output ``.parquet``/``.csv``; copies go to ``stem-1.ext``, ...
    random_state : int
        Seed (recorded by the caller).
    n_copies : int, default 1
    utility : bool, default True
        Also train-on-surrogate / test-on-real accuracy.
    overwrite : bool, default False
    remedies : bool, default True
        Apply the artefact's release recipe (generalisation, suppression, MDAV) before
        permuting, and measure against the remedied table; False gives the raw release.
    """
    src = os.fspath(src)
    apply_recipe = bool(remedies)
    report: dict[str, Any] = {}
    copies: list[float] = []
    record: dict[str, Any] = {}

    def measure(tmps: list) -> None:
        # Runs on the complete temporary outputs; raising here publishes nothing.
        with tracker.step("metrics" + (" and the utility check" if utility else ""),
                          part="metrics"):
            report.update(surrogate_metrics(src, tmps[0], artefact, utility=utility,
                                            random_state=random_state,
                                            remedies=apply_recipe).to_dict())
        if len(tmps) > 1:
            with tracker.step(f"intact rows of {len(tmps)} copies", part="metrics"):
                copies.extend(intact_row_proportion(src, t, columns=list(artefact.columns))
                              for t in tmps)

    with warnings.catch_warnings(record=True) as caught, \
            stage_progress("shuffle") as tracker:
        warnings.simplefilter("always", ProtectsNothingWarning)
        # the metrics follow the shuffle's own steps, in its estimate
        tracker.part("metrics", 1 + (n_copies > 1), metrics_rate(utility),
                     "metrics" + (" with the utility check" if utility else ""))
        shuffle_file(src, artefact, dest, random_state=random_state, n_copies=n_copies,
                     overwrite=overwrite, before_publish=measure, remedies=apply_recipe,
                     record=record, progress=tracker)
    # what local suppression removed, per group (JSON key "suppression")
    report["suppression"] = record.get("suppression")
    # per copy: within-class swaps that kept the intact rows within max_intact
    report["intact_swaps"] = record.get("intact_swaps") or None
    if record.get("dropped_identifiers"):  # declared identifiers the batch carried
        report["dropped_identifiers"] = record["dropped_identifiers"]
    warned = any(issubclass(w.category, ProtectsNothingWarning) for w in caught)
    return StagedSurrogate(paths=surrogate_paths(dest, n_copies), metrics=report,
                           copies=copies or None,
                           protects_nothing=bool(warned or report.get("protects_nothing")),
                           seed=random_state)
