"""The learn step: a reference table becomes a grouping and, with a store, a version.

``astrid learn`` and ``AstridLearnOperator`` are adapters over :func:`learn_release`:
they parse their arguments, bring the table to a file and print or return what it did.
The stage reads, cleans and checks the table, fills the settings left out from the
table's size, reserves the release choice's share of the budget, and learns or reuses.

A version is reused, not learned again, only when the latest one was learned from a table
with the same fingerprint *and* by the same learn: the record of its search settings,
gate policy and remedies (``learn.json``, saved with the version) equals this one's. The
seed, the parallelism, the progress output and the time budget are not in the record:
they do not change what is learned (an operator derives a fresh seed per run; comparing
it would learn again on every run).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: the learn's record, saved beside ``artefact.json`` in every version learned here
LEARN_FILE = "learn.json"

# settings that change nothing learned, so a version learned with others is reused
_NOT_RECORDED = ("random_state", "n_jobs", "backend", "progress", "max_seconds",
                 "reserve_fits")
# the settings a mapping may leave out for the table's size to decide
_SIZE_DEFAULTS = ("classifier", "sample", "adaptive")


@dataclass(frozen=True)
class LearnRequest:
    """One learn (:func:`learn_release`).

    Attributes
    ----------
    table : str, path-like or DataFrame
        The reference table: CSV, Parquet or ARFF (local path or fsspec URL), a
        PostgreSQL URL (``read_table``), or a table already read.
    target : str
        Class column.
    settings : SearchSettings or mapping, optional
        The search: a :class:`~astrid_airflow.SearchSettings` (used as it is) or a
        mapping of ``astrid`` keywords; from a mapping, ``classifier``, ``sample`` and
        ``adaptive`` left out take :func:`~astrid_airflow.large_table_defaults` of the
        (cleaned) table's rows when ``table_defaults`` (logged above 20,000 rows).
    clean : bool
        Drop rows with missing values and constant columns first.
    store : ArtefactStore, optional
        Save the result there as ``name`` (a new version, or the latest one reused);
        None: learn only, no release chosen.
    name : str, optional
        The artefact name (with ``store``).
    policy : GatePolicy or mapping, optional
        The gate policy the release is chosen for (default policy if None).
    remedies : bool or None
        True: choose the release of least utility loss within ``policy``; False: the
        grouping only, no remedies; None: the learned grouping, no release chosen.
    allow_weaker_policy : bool or None
        Accept a policy weaker than the default (recorded), refuse it when False.
    random_state : int or None
        Seed of the release choice, and of the search unless ``settings`` sets one.
    force : bool
        Learn even when the latest version would be reused.
    n_jobs, scheduler : int, str
        Local parallel fits, or the Dask scheduler the search runs on.
    run : callable, optional
        ``run(table, settings) -> AstridResult`` replaces both (an operator's
        deferrable Dask path).
    created_at : datetime or str, optional
        Stamped on the artefact (an operator's run time; default now).
    max_seconds : float, optional
        Budget of the whole learn, the release choice included (over ``settings``').
    table_defaults : bool
        Fill the settings left out from the table's size (see ``settings``).
    synthesis_budget : (float, float), optional
        ``(epsilon, delta)``: the groups the release synthesises are measured with
        Gaussian noise for (epsilon, delta)-differential privacy, split over them
        (``choose_release``); None: no noise.
    synthesis : bool
        False: the release synthesises no group (``choose_release(synthesis=False)``).
    """

    table: Any
    target: str = "class"
    settings: Any = None
    clean: bool = False
    store: Any = None
    name: str | None = None
    policy: Any = None
    remedies: bool | None = True
    allow_weaker_policy: bool | None = None
    random_state: Any = None
    force: bool = False
    n_jobs: int = 1
    scheduler: str | None = None
    run: Callable[[Any, dict[str, Any]], Any] | None = None
    created_at: Any = None
    synthesis_budget: Any = None
    synthesis: bool = True
    max_seconds: float | None = None
    table_defaults: bool = True


@dataclass(frozen=True)
class Learned:
    """What :func:`learn_release` did.

    Attributes
    ----------
    name, version : str or None
        The artefact's name and version (``name@version``); None without a store.
    artefact : GroupingArtefact or None
        The version's artefact (None without a store).
    learned : bool
        False when the latest version was kept: the same table, the same learn.
    result : AstridResult or None
        The run's result (None when reused: the version's ``artefact.result`` holds it).
    rows : int or None
        Rows of the table learned from (after cleaning).
    """

    name: str | None
    version: str | None
    artefact: Any
    learned: bool
    result: Any = None
    rows: int | None = None

    @property
    def reused(self) -> bool:
        """The latest version was kept (nothing ran)."""
        return not self.learned


def learn_release(request: LearnRequest) -> Learned:
    """Learn a grouping of ``request.table``; with a store, save it or reuse the latest.

    Refuses a bad name or a weaker policy not allowed before reading the table, and a
    table that cannot be analysed before any fit. With ``max_seconds``, the search
    reserves the release choice's expected cost (:func:`choice_reserve`).

    Raises
    ------
    ParameterError, DataError, BudgetError, StoreError
        A bad request or table, a budget that does not fit, a store that cannot be
        written (nothing saved).
    """
    from astrid_airflow.gate import check_weaker_policy

    if request.store is not None or request.name is not None:
        from astrid_airflow._errors import ParameterError
        from astrid_airflow.release import check_artefact_name

        if request.store is None or not request.name:
            raise ParameterError("A store and an artefact name go together.")
        check_artefact_name(request.name)
        check_weaker_policy(request.policy or {}, request.allow_weaker_policy)
        request.store.check_signing_key()  # a bad key refused before minutes of work
    table = reference_table(request.table, request.target, clean=request.clean)
    table = without_identifiers(table, request.target, request.policy)
    if request.synthesis_budget is not None:  # refused before any fit
        from astrid_airflow.release import check_budget

        check_budget(*request.synthesis_budget, len(table))
    settings = search_keywords(request, len(table))
    if request.store is None:
        return Learned(None, None, None, True, _search(table, settings, request),
                       rows=len(table))
    record = learn_record(settings, request.policy, request.remedies,
                          request.allow_weaker_policy, request.synthesis_budget,
                          request.synthesis)
    if not request.force and \
            (found := reusable_version(request.store, request.name, table, record)):
        return Learned(request.name, found[0], found[1], False, rows=len(table))
    if settings.get("max_seconds") is not None:  # the budget covers the choice too
        settings.setdefault("reserve_fits",
                            choice_reserve(table, request.policy, request.remedies))
    result = _search(table, settings, request)
    version, artefact = save_learned(
        result, table, request.store, request.name, policy=request.policy,
        created_at=request.created_at, remedies=request.remedies,
        random_state=request.random_state,
        allow_weaker_policy=request.allow_weaker_policy, record=record,
        synthesis_budget=request.synthesis_budget, synthesis=request.synthesis)
    return Learned(request.name, version, artefact, True, result, rows=len(table))


def without_identifiers(table: Any, target: str, policy: Any) -> Any:
    """``table`` without the policy's declared identifiers (never published, so never
    learned on), after checking the declaration against its columns (``ParameterError``
    before any fit)."""
    from astrid_airflow.gate import check_policy
    from astrid_airflow.release import drop_identifiers

    model = check_policy(policy).attacker_model
    model.check_table(list(map(str, table.columns)), target)
    table, dropped = drop_identifiers(table, model.identifiers)
    if dropped:
        logging.getLogger(__name__).info(
            "Identifier column(s) %s dropped: never published.", dropped)
    return table


def reference_table(source: Any, target: str, *, clean: bool = False) -> Any:
    """The table read (``read_table``), cleaned if asked, checked (``DataError``)."""
    from astrid_airflow.io import check_table, drop_missing_and_constant, read_table

    table = read_table(source)
    if clean:
        check_table(table, target)
        table = drop_missing_and_constant(table, target)
    check_table(table, target)
    return table


def search_keywords(request: LearnRequest, n_rows: int) -> dict[str, Any]:
    """The ``astrid`` keywords of ``request``: its settings, target and seed, the
    table's size defaults (:func:`resolve_table_defaults`) and its budget."""
    from astrid_airflow.engine import SearchSettings

    given = request.settings
    if isinstance(given, SearchSettings):
        default = SearchSettings()
        settings = {f.name: getattr(given, f.name) for f in dataclasses.fields(given)
                    if f.name in _SIZE_DEFAULTS
                    or getattr(given, f.name) != getattr(default, f.name)}
    else:
        settings = dict(given or {})
    settings["target"] = request.target
    settings.setdefault("random_state", request.random_state)
    if request.max_seconds is not None:
        settings["max_seconds"] = request.max_seconds
    return resolve_table_defaults(settings, n_rows) if request.table_defaults else settings


def resolve_table_defaults(settings: Mapping[str, Any], n_rows: int) -> dict[str, Any]:
    """``settings`` with ``classifier``, ``sample`` and ``adaptive`` left out taken from
    :func:`~astrid_airflow.large_table_defaults` of ``n_rows``: the paper's run up to
    20,000 rows, the scalable path above (said in the log)."""
    from astrid_airflow.engine import large_table_defaults

    chosen = large_table_defaults(n_rows)
    out = dict(settings)
    filled = [key for key in _SIZE_DEFAULTS if key not in out]
    out.update({key: chosen[key] for key in filled})
    if chosen["adaptive"] and filled:
        logging.getLogger("astrid_airflow").info(
            "learn: %s rows: large-table defaults %s (docs/engine.md)", f"{n_rows:,}",
            " ".join(f"{key}={out[key]}" for key in filled))
    return out


def learn_record(settings: Mapping[str, Any], policy: Any = None,
                 remedies: bool | None = True, allow_weaker_policy: bool | None = None,
                 synthesis_budget: Any = None, synthesis: bool = True) -> dict[str, Any]:
    """What decides a learn's outcome on a given table, as JSON: the search settings
    (checked, defaults filled; not the seed, parallelism, progress or budget), the gate
    policy (the default one if None), ``remedies``, ``allow_weaker_policy`` and, when
    set, the synthesis budget."""
    from astrid_airflow.engine import SearchSettings
    from astrid_airflow.io import plain

    keywords = {k: v for k, v in settings.items() if k not in ("target", "random_state")}
    checked = SearchSettings.of(None, **keywords)
    search = {f.name: getattr(checked, f.name) for f in dataclasses.fields(checked)
              if f.name not in _NOT_RECORDED}
    if search["adaptive"] is not None:
        search["adaptive"] = search["adaptive"].to_dict()
    if not isinstance(search["classifier"], str):  # a scikit-learn model: its parameters
        search["classifier"] = repr(search["classifier"])
    record = {"target": settings.get("target"), "search": search,
              "policy": _policy_dict(policy), "remedies": remedies,
              "allow_weaker_policy": allow_weaker_policy}
    if synthesis_budget is not None:  # a record without one stays the same bytes
        record["synthesis_budget"] = list(synthesis_budget)
    if not synthesis:
        record["synthesis"] = False
    return json.loads(json.dumps(plain(record), default=repr, sort_keys=True))


def _policy_dict(policy: Any) -> dict[str, Any]:
    from astrid_airflow.gate import GatePolicy

    if policy is None:
        policy = GatePolicy()
    elif isinstance(policy, Mapping):
        policy = GatePolicy.from_dict(policy)
    return policy.to_dict()


def _search(table: Any, settings: dict[str, Any], request: LearnRequest) -> Any:
    """The search: ``request.run``, on the Dask cluster, or here with ``n_jobs``."""
    if request.run is not None:
        return request.run(table, dict(settings))
    if request.scheduler:
        from astrid_airflow.scale import astrid_on_dask

        return astrid_on_dask(table, scheduler=str(request.scheduler), **settings)
    from astrid_airflow.engine import astrid

    return astrid(table, n_jobs=request.n_jobs, **settings)


def save_learned(result: Any, table: Any, store: Any, name: str, *, policy: Any = None,
                 created_at: Any = None, remedies: bool | None = None,
                 random_state: object = None, allow_weaker_policy: bool | None = None,
                 record: Mapping[str, Any] | None = None,
                 synthesis_budget: Any = None, synthesis: bool = True
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
    ``record`` (:func:`learn_record`) is saved as ``learn.json``: what a later learn
    compares to reuse the version.
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
                                  max_seconds=budget_left(result),
                                  synthesis_budget=synthesis_budget, synthesis=synthesis)
    if artefact.release is not None and weaker_fields(policy or {}):
        artefact = dataclasses.replace(artefact, release={
            **artefact.release, **weaker_record(policy, allow_weaker_policy)})
    extra = gate_extra_files(artefact, policy)
    if record is not None:
        extra[LEARN_FILE] = _record_bytes(record)
    return store.save(name, artefact, extra_files=extra), artefact


def _record_bytes(record: Mapping[str, Any]) -> bytes:
    return (json.dumps(dict(record), indent=2, sort_keys=True) + "\n").encode("utf-8")


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


def reusable_version(store: Any, name: str, table: Any,
                     record: Mapping[str, Any] | None = None) -> tuple[str, Any] | None:
    """``(version, artefact)`` of the latest version of ``name`` if it was learned from a
    table with ``table``'s fingerprint and, with ``record``, by the same learn (its
    ``learn.json`` equals ``record``; a version without one is not reused), else None
    (also when there is none yet)."""
    from astrid_airflow._errors import StoreError
    from astrid_airflow.io import load_json
    from astrid_airflow.release import fingerprint_table

    try:
        latest = store.latest(name)
    except StoreError:  # no store or no version of this name yet
        return None
    previous = store.load(name, latest)
    if dict(previous.fingerprint) != fingerprint_table(table):
        return None
    if record is not None:
        try:
            saved = load_json(store.read_file(name, latest, LEARN_FILE), LEARN_FILE)
        except (StoreError, ValueError):  # learned before records were kept, or corrupt
            return None
        if saved != json.loads(_record_bytes(record)):
            return None
    return latest, previous


def learn_or_reuse(table: Any, store: Any, name: str, settings: Mapping[str, Any], *,
                   force: bool = False, scheduler: str | None = None, n_jobs: int = 1,
                   policy: Any = None, created_at: Any = None,
                   remedies: bool | None = None, random_state: object = None,
                   run: Callable[[Any, dict[str, Any]], Any] | None = None,
                   allow_weaker_policy: bool | None = None) -> Learned:
    """:func:`learn_release` with the arguments as keywords and ``settings`` as given
    (``astrid``'s own defaults for what they leave out): learn ``table`` into ``store``
    as ``name`` unless the latest version is of the same table by the same learn."""
    settings = dict(settings)
    return learn_release(LearnRequest(
        table=table, target=settings.pop("target", "class"), settings=settings,
        store=store, name=name, policy=policy, remedies=remedies,
        allow_weaker_policy=allow_weaker_policy, random_state=random_state, force=force,
        n_jobs=n_jobs, scheduler=scheduler, run=run, created_at=created_at,
        table_defaults=False))
