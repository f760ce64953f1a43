"""The release pipeline's steps as library functions, for the CLI and the operators.

Learn (``astrid`` + ``ArtefactStore``), **stage** a surrogate with its metrics, gate it
(``validate_surrogate``), promote it. Each step here is written once; ``astrid shuffle``
and ``GoldenEyeShuffleOperator`` both call :func:`stage_surrogate`, the operator adding
only templating, its run-derived seed, ``ObjectStoragePath`` I/O and error mapping.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
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


def stage_surrogate(src: str | os.PathLike, artefact: Any, dest: str | os.PathLike, *,
                    random_state: int, n_copies: int = 1, utility: bool = True,
                    overwrite: bool = False, remedies: bool = True) -> StagedSurrogate:
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
    remedies : bool, default True
        Apply the artefact's release recipe (generalisation, suppression, MDAV) before
        permuting, and measure against the remedied table; False gives the raw release.
    """
    src = os.fspath(src)
    report: dict[str, Any] = {}
    copies: list[float] = []
    record: dict[str, Any] = {}

    def measure(tmps: list) -> None:
        # Runs on the complete temporary outputs; raising here publishes nothing.
        with tracker.step("metrics" + (" and the utility check" if utility else ""),
                          part="metrics"):
            report.update(surrogate_metrics(src, tmps[0], artefact, utility=utility,
                                            random_state=random_state,
                                            remedies=remedies).to_dict())
        if len(tmps) > 1:
            with tracker.step(f"intact rows of {len(tmps)} copies", part="metrics"):
                copies.extend(intact_row_proportion(src, t, columns=list(artefact.columns))
                              for t in tmps)

    with warnings.catch_warnings(record=True) as caught, \
            stage_progress("shuffle") as tracker:
        warnings.simplefilter("always", ProtectsNothingWarning)
        # the metrics follow the shuffle's own steps, in its estimate (issue 33)
        tracker.part("metrics", 1 + (n_copies > 1), metrics_rate(utility),
                     "metrics" + (" with the utility check" if utility else ""))
        shuffle_file(src, artefact, dest, random_state=random_state, n_copies=n_copies,
                     overwrite=overwrite, before_publish=measure, remedies=remedies,
                     record=record, progress=tracker)
    # what local suppression removed, per group (JSON key "suppression")
    report["suppression"] = record.get("suppression")
    # per copy: within-class swaps that kept the intact rows within max_intact
    report["intact_swaps"] = record.get("intact_swaps") or None
    warned = any(issubclass(w.category, ProtectsNothingWarning) for w in caught)
    return StagedSurrogate(paths=surrogate_paths(dest, n_copies), metrics=report,
                           copies=copies or None,
                           protects_nothing=bool(warned or report.get("protects_nothing")),
                           seed=random_state)


# ------------------------------------------------------------------------------ learn

@dataclass(frozen=True)
class Learned:
    """What :func:`learn_or_reuse` left in the store.

    Attributes
    ----------
    name, version : str
        The artefact's name and version (``name@version``).
    artefact : GroupingArtefact
    learned : bool
        False when the latest version was learned from a table with the same fingerprint
        and was kept (no run).
    result : AstridResult or None
        The run's result (None when reused).
    """

    name: str
    version: str
    artefact: Any
    learned: bool
    result: Any = None


def save_learned(result: Any, table: Any, store: Any, name: str, *, policy: Any = None,
                 created_at: Any = None, remedies: bool | None = None,
                 random_state: object = None, allow_weaker_policy: bool | None = None
                 ) -> tuple[str, Any]:
    """Record ``result`` as a new version of ``name``, with its gate suite beside it.

    Returns ``(version, artefact)``. ``policy`` (a :class:`~astrid_airflow.GatePolicy`,
    default policy if None) is stored with the suite, so reviewers see the rules.
    ``remedies`` True/False: the artefact records the release of least utility loss
    within ``policy`` (:func:`~astrid_airflow.choose_release`, seeded by
    ``random_state``; False: groupings only, no remedies); None: the learned grouping
    as it is, no release chosen. A ``policy`` weaker than the default is refused when
    ``allow_weaker_policy`` is False, and recorded in the release (``policy_note``,
    ``weaker_than_default``, ``allow_weaker_policy``) otherwise (docs/gate.md).
    """
    from astrid_airflow.gate import (
        check_weaker_policy,
        gate_extra_files,
        weaker_fields,
        weaker_record,
    )
    from astrid_airflow.release import GroupingArtefact

    check_weaker_policy(policy or {}, allow_weaker_policy)  # before the long choice

    if remedies is None:
        artefact = GroupingArtefact.from_result(result, table, created_at=created_at)
    else:
        from ._choice import choose_release
        from ._choice_budget import budget_left

        # the learn's budget bounds the choice too: what the search left of it
        artefact = choose_release(table, result, policy=policy, remedies=remedies,
                                  random_state=random_state, created_at=created_at,
                                  max_seconds=budget_left(result))
    if artefact.release is not None and weaker_fields(policy or {}):
        import dataclasses

        artefact = dataclasses.replace(artefact, release={
            **artefact.release, **weaker_record(policy, allow_weaker_policy)})
    return store.save(name, artefact,
                      extra_files=gate_extra_files(artefact, policy)), artefact


def choice_reserve(table: Any, policy: Any = None, remedies: bool | None = True) -> float:
    """``astrid(reserve_fits=)`` for a learn that chooses a release afterwards: the
    choice's expected cost (:func:`~astrid_airflow.release_choice_fits`), 0 without one."""
    if not remedies:
        return 0.0
    from astrid_airflow.gate import GatePolicy

    from ._choice_budget import release_choice_fits

    policy = GatePolicy() if policy is None else policy
    if isinstance(policy, Mapping):
        policy = GatePolicy.from_dict(policy)
    return release_choice_fits(len(table), len(table.columns) - 1, policy)


def reusable_version(store: Any, name: str, table: Any) -> tuple[str, Any] | None:
    """``(version, artefact)`` of the latest version of ``name`` if it was learned from a
    table with ``table``'s fingerprint, else None (also when there is none yet)."""
    from astrid_airflow._errors import StoreError
    from astrid_airflow.release import fingerprint_table

    try:
        latest = store.latest(name)
    except StoreError:  # no store or no version of this name yet
        return None
    previous = store.load(name, latest)
    if dict(previous.fingerprint) == fingerprint_table(table):
        return latest, previous
    return None


def learn_or_reuse(table: Any, store: Any, name: str, settings: Mapping[str, Any], *,
                   force: bool = False, scheduler: str | None = None, n_jobs: int = 1,
                   policy: Any = None, created_at: Any = None,
                   remedies: bool | None = None, random_state: object = None,
                   run: Callable[[Any, dict[str, Any]], Any] | None = None,
                   allow_weaker_policy: bool | None = None) -> Learned:
    """Learn a grouping of ``table`` into ``store`` as ``name``, unless already learned.

    Without ``force``, when the latest version of ``name`` was learned from a table with
    the same fingerprint (rows, columns, SHA-256 of the values) it is kept and nothing
    runs. Otherwise ``astrid`` runs with ``settings`` (locally with ``n_jobs``, or on the
    Dask cluster at ``scheduler``) and a new version is saved with its gate suite.
    ``run(table, settings)``, if given, replaces both (the operator's deferrable Dask
    path); ``remedies``/``random_state``/``allow_weaker_policy`` go to
    :func:`save_learned` (the release choice).
    """
    if not force and (found := reusable_version(store, name, table)) is not None:
        return Learned(name=name, version=found[0], artefact=found[1], learned=False)
    settings = dict(settings)
    if settings.get("max_seconds") is not None:  # the budget covers the choice too
        settings.setdefault("reserve_fits", choice_reserve(table, policy, remedies))
    if run is not None:
        result = run(table, dict(settings))
    elif scheduler:
        from astrid_airflow.scale import astrid_on_dask

        result = astrid_on_dask(table, scheduler=str(scheduler), **settings)
    else:
        from astrid_airflow.engine import astrid

        result = astrid(table, n_jobs=n_jobs, **settings)
    version, artefact = save_learned(result, table, store, name, policy=policy,
                                     created_at=created_at, remedies=remedies,
                                     random_state=random_state,
                                     allow_weaker_policy=allow_weaker_policy)
    return Learned(name=name, version=version, artefact=artefact, learned=True,
                   result=result)


# ------------------------------------------------------------------------------- gate
# Paths are anything with ``/``, ``.parent``, ``.name`` and ``.stem``: ``pathlib.Path``
# for the CLI, Airflow's ``ObjectStoragePath`` for the operators (which keep the I/O).

def metrics_path(surrogate: Any) -> Any:
    """``<stem>.metrics.json`` beside a staged surrogate."""
    return surrogate.parent / f"{surrogate.stem}.metrics.json"
