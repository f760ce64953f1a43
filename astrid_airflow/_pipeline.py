"""The release pipeline's steps as library functions, for the CLI and the operators.

Learn (``astrid`` + ``ArtefactStore``), **stage** a surrogate with its metrics, gate it
(``validate_surrogate``), promote it. Each step here is written once; ``astrid shuffle``
and ``GoldenEyeShuffleOperator`` both call :func:`stage_surrogate`, the operator adding
only templating, its run-derived seed, ``ObjectStoragePath`` I/O and error mapping.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any

from ._metrics import intact_row_proportion, surrogate_metrics
from ._surrogate import ProtectsNothingWarning, shuffle_file, surrogate_paths

__all__ = ["StagedSurrogate", "stage_surrogate"]


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


def stage_surrogate(src: str | os.PathLike, artefact: Any, dest: str | os.PathLike, *,
                    random_state: int, n_copies: int = 1, utility: bool = True,
                    overwrite: bool = False) -> StagedSurrogate:
    """Write GoldenEye surrogate(s) of ``src`` atomically, measured before publication.

    The metrics are computed on the complete temporary outputs before any is moved into
    place (``shuffle_file``'s ``before_publish``), so a failure leaves no output behind.
    A one-group grouping is reported in ``protects_nothing`` (the warning is caught
    here, so every caller can say it loudly in its own way).

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
    """
    src = os.fspath(src)
    report: dict[str, Any] = {}
    copies: list[float] = []

    def measure(tmps: list) -> None:
        # Runs on the complete temporary outputs; raising here publishes nothing.
        report.update(surrogate_metrics(src, tmps[0], artefact, utility=utility,
                                        random_state=random_state).to_dict())
        if len(tmps) > 1:
            copies.extend(intact_row_proportion(src, t, columns=list(artefact.columns))
                          for t in tmps)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ProtectsNothingWarning)
        shuffle_file(src, artefact, dest, random_state=random_state, n_copies=n_copies,
                     overwrite=overwrite, before_publish=measure)
    warned = any(issubclass(w.category, ProtectsNothingWarning) for w in caught)
    return StagedSurrogate(paths=surrogate_paths(dest, n_copies), metrics=report,
                           copies=copies or None,
                           protects_nothing=bool(warned or report.get("protects_nothing")),
                           seed=random_state)
