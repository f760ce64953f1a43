"""``AstridLearnOperator``: learn a grouping on a reference table, keep it as a version.

The expensive step of the pipeline (ASTRID runs hundreds of classifier fits), so it is
skipped when the latest stored version was learned from the same table (fingerprint: row
count + content hash, see ``GroupingArtefact``) by the same learn (search settings, gate
policy, remedies; not the run-derived seed). The learn is the library's stage
(``learn_release``, as ``astrid learn``); the operator adds templating, its run-derived
seed, the table's download, the timeout, links, lineage and Asset events.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from airflow.sdk import BaseOperator

from ._common import (
    default_deferrable,
    jobs_within_slots,
    json_small,
    policy_overrides,
    resolve_seed,
    run_timestamp,
    store_filesystem,
    store_location,
    store_url,
    timeout_seconds,
    to_bool,
    to_float,
    to_int,
    translate_errors,
)
from ._compat import AirflowFailException
from ._lineage import RecordsLineage
from ._signing import signed
from .assets import emit_alias_events
from .links import ArtefactLink, push_links
from .sql import as_table, local_table, sql_errors

__all__ = ["LEARN_EXECUTION_TIMEOUT", "AstridLearnOperator"]

# Default ``execution_timeout`` of a learn task: a hung or runaway search is killed (and
# retried) instead of holding its pool slots forever. Generous (docs/performance.md has
# the learn times); a constant until the library's cost estimate can size it per table.
LEARN_EXECUTION_TIMEOUT = _dt.timedelta(hours=6)


class AstridLearnOperator(RecordsLineage, BaseOperator):
    """Run ASTRID on a reference table and save the grouping as a new artefact version.

    Parameters
    ----------
    reference : str or ObjectStoragePath
        The reference table: CSV, Parquet or ARFF, local path or URL, or a database
        table ``conn://CONN_ID/SCHEMA.TABLE`` (see ``astrid_airflow.operators.sql``)
        (templated).
    reference_conn_id : str, optional
        The Airflow connection of ``reference``: a common.sql database connection, in which
        ``reference`` is a table (``[SCHEMA.]TABLE``) or a ``SELECT`` query, or the
        object-storage connection that opens a ``reference`` URL. Without it, ``reference`` is a
        file, a URL or the legacy ``conn://CONN_ID/SCHEMA.TABLE`` (templated).
    store : str or ObjectStoragePath, optional
        Root of the artefact store (templated).
    store_conn_id : str, optional
        The Airflow connection of the store: an ``astrid`` connection (the store is the
        connection's Store URL; leave ``store`` empty) or the object-storage connection
        that opens the ``store`` URL (``aws_default``...). Without it ``store`` alone
        (legacy: ``s3://CONN_ID@bucket/...``) (templated).
    name : str
        Artefact name in the store (templated).
    target : str, default "class"
        Class column (templated).
    classifier : str or None, default "svm"
        Classifier preset: ``svm``, ``rf``, ``nb`` or ``hgb``; ``"auto"`` (or None) takes
        the library's defaults for the table's size as ``astrid learn`` without
        ``--classifier`` does (``large_table_defaults``: ``svm`` up to 20,000 rows;
        above, ``hgb`` in adaptive mode), the choice logged (templated).
    n_search, n_test : int or None, default 100, 250
        The paper's R' and R: permutations per reward evaluation and per p-value
        (budgets in adaptive mode); None (or an empty template) is the library's
        default, 100 and 250 (templated).
    alpha : float, default 0.05
        Significance level (templated).
    random_state : int or None
        Seed of the search (templated). ``None`` derives one from the run, so a retry
        of the same task instance learns the same grouping.
    n_jobs : int, default 1
        Parallel fits (-1: all cores) (templated). A literal ``n_jobs >= 1`` is also the
        default ``pool_slots``, so a pool counts the cores the task uses; with ``-1``, a
        template or a Dask ``scheduler`` the default stays 1 slot (the scheduler assigns
        slots before templates render): pass ``pool_slots`` then. At task start,
        ``n_jobs`` above the slots the task holds is cut to them, with a warning in the
        task log (no worker beyond the cores the pool gave it).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): the fits run on that cluster
        instead of in the worker, with the same result as a local run (templated).
    clean : bool, default False
        Drop rows with missing values and constant columns first, as the paper did for
        the UCI data (templated).
    force : bool, default False
        Learn even when the latest version would be reused (the same table, the same
        settings, policy and remedies) (templated).
    adaptive : bool, default False
        Adaptive mode: racing in the search and sequential p-values, far fewer fits,
        the same decisions as the exact tests up to a reported risk (templated; see
        docs/performance.md). The artefact records the stopping record.
    max_seconds : float or None, default 14400 (4 hours)
        Budget of the whole learn, the release choice included: a few fits are timed
        first and, when the estimated run exceeds it, the task fails before the search
        with a message saying what would fit (rows to sample, the ``hgb`` preset,
        ``adaptive``); a run that still reaches it stops there, saving nothing. The
        task's ``execution_timeout`` (less the time already spent) bounds it too: an
        estimate above the timeout fails before fitting, naming both, and is not
        retried (a retry would repeat the same doomed work). ``None`` or ``""``: no
        budget but the timeout (templated). 4 hours: a daily schedule can retry twice and
        still publish the same day, and learning only reruns when the reference table changed.
    sample : int, "auto" or None, default "auto"
        Learn on a stratified sample of the reference table: N rows, ``"auto"`` (tables
        above 20,000 rows: the size where the classifier's accuracy stops improving, see
        docs/engine.md; smaller tables whole) or None (every row). Recorded in the
        artefact's result (``sample``); the shuffle still applies to every row
        (templated).
    gate_policy : dict, optional
        Default thresholds of the release gate (``GatePolicy`` fields); the suite built
        from them is saved as ``suite.json`` in the new version, and the release
        (grouping + remedies) is chosen to pass them (templated).
    allow_weaker_policy : bool, default False
        Accept a ``gate_policy`` that loosens a privacy threshold of the default policy
        (refused otherwise); recorded in the artefact's release (templated;
        docs/gate.md).
    allow_unsigned : bool, default False
        Read an artefact store that no configured key signed (saved before signing was
        the default) as checksummed only, when reusing an unchanged version (templated).
        ``ASTRID_ALLOW_UNSIGNED=1`` does the same for a worker.
    remedies : bool, default True
        Choose and record the release of least utility loss within the policy
        (:func:`~astrid_airflow.choose_release`, as ``astrid learn --store``);
        ``False`` records the learned grouping without a recipe (templated).
    search : SearchSettings or dict, optional
        Every setting of the search as one parameter object
        (:class:`~astrid_airflow.SearchSettings`, or a dict of its fields): the search
        runs as ``astrid(settings=search)`` would, so fields left out take
        ``SearchSettings``' defaults (``sample=None``: every row; ``max_seconds=None``:
        no budget but the task's timeout), and it reaches the settings the keywords do
        not (``scoring``, ``classifier_params``, ``screen``, ``over_budget``). With
        ``search``, the keywords ``classifier``, ``n_search``, ``n_test``, ``alpha``,
        ``adaptive``, ``sample`` and ``max_seconds`` must stay at their defaults (one
        place per setting: otherwise the task fails, naming them); ``n_jobs``,
        ``backend`` and ``progress`` are the operator's (``n_jobs``, ``scheduler``, the
        task log) and may not be set in it (templated).
    deferrable : bool, optional
        Default ``[operators] default_deferrable`` (False when unset). With a Dask
        ``scheduler``: start the whole search on the cluster and defer to
        ``DaskRunTrigger`` (the triggerer polls it every ``poll_interval`` seconds), so
        the task holds no worker slot meanwhile; on resume the table is read again and
        must be unchanged (templated).
    poll_interval : float, default 10
        Seconds between the trigger's status checks.
    link_base_url : dict or str, optional
        Storage prefix → public base URL of the "Artefact" extra link (see
        ``astrid_airflow.operators.links``).

    Returns (XCom)
    --------------
    dict
        ``artefact`` (``NAME@VERSION``), ``name``, ``version``, ``store``, ``path``,
        ``learned`` (False when skipped), ``grouping``, ``k``, ``rows``, ``seed``,
        ``seconds``; with ``multiple_outputs`` (the default) each key is also its own XCom.

    Notes
    -----
    Outlets that are ``AssetAlias`` objects receive an event for the artefact Asset
    (``artefact_asset(store, name)``) only when a new version was written; plain
    ``Asset`` outlets get Airflow's usual event on every success.

    ``execution_timeout`` defaults to ``LEARN_EXECUTION_TIMEOUT`` (6 h); an explicit
    value, or one from the DAG's ``default_args``, wins.
    """

    template_fields: Sequence[str] = (
        "reference_conn_id", "store_conn_id",
        "reference", "store", "name", "target", "classifier", "n_search", "n_test",
        "alpha", "random_state", "clean", "force", "gate_policy", "scheduler", "adaptive",
        "remedies", "allow_weaker_policy", "allow_unsigned",
        "n_jobs", "max_seconds", "sample", "deferrable", "search",
    )
    ui_color = "#e8d8f0"
    operator_extra_links = (ArtefactLink(),)

    def __init__(self, *, reference: Any, store: Any = None, name: str, target: str = "class",
                 reference_conn_id: str | None = None, store_conn_id: str | None = None,
                 classifier: str | None = "svm", n_search: int | str | None = 100,
                 n_test: int | str | None = 250,
                 alpha: float | str = 0.05, random_state: int | str | None = None,
                 n_jobs: int | str = 1, clean: bool | str = False, force: bool | str = False,
                 gate_policy: Mapping[str, Any] | None = None, scheduler: str | None = None,
                 adaptive: bool | str = False, remedies: bool | str = True,
                 link_base_url: Any = None,
                 max_seconds: float | str | None = 4 * 3600,
                 sample: int | str | None = "auto", deferrable: bool | str | None = None,
                 poll_interval: float = 10.0, allow_weaker_policy: bool | str = False,
                 search: Any = None, allow_unsigned: bool | str = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        # our defaults yield to explicit arguments and to the DAG's default_args
        defaults = {"execution_timeout": LEARN_EXECUTION_TIMEOUT}
        if isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and n_jobs >= 1 \
                and not scheduler:
            defaults["pool_slots"] = n_jobs  # one slot per core of the fits
        for key, value in defaults.items():
            if key not in (kwargs.get("default_args") or {}):
                kwargs.setdefault(key, value)
        super().__init__(**kwargs)
        self.reference = reference
        self.store = store
        self.reference_conn_id = reference_conn_id
        self.store_conn_id = store_conn_id
        self.name = name
        self.target = target
        self.classifier = classifier
        self.n_search = n_search
        self.n_test = n_test
        self.alpha = alpha
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.clean = clean
        self.force = force
        self.gate_policy = gate_policy
        self.scheduler = scheduler
        self.adaptive = adaptive
        self.remedies = remedies
        self.link_base_url = link_base_url
        self.max_seconds = max_seconds
        self.sample = sample
        self.deferrable = default_deferrable() if deferrable is None else deferrable
        self.poll_interval = poll_interval
        self.allow_weaker_policy = allow_weaker_policy
        self.allow_unsigned = allow_unsigned
        self.search = search

    @signed  # the store is signed / verified with the pipeline's key
    def execute(self, context: Any) -> dict[str, Any]:
        from astrid_airflow import ArtefactStore, learn_release

        reference = as_table(self.reference, "reference", self.reference_conn_id)
        store_path = store_location(self.store, self.store_conn_id)
        store = ArtefactStore(store_url(store_path), fs=store_filesystem(store_path))
        name, started = str(self.name), time.perf_counter()
        self._lineage = {"inputs": [{"location": str(reference)}]}  # a failure names it
        with translate_errors(f"Cannot learn {name!r} from {reference}"), \
                sql_errors(f"Cannot read {reference}"):
            request, timeout = self._request(context, store, name, started)
            with local_table(reference) as local, _timeout_is_final(timeout):
                learned = learn_release(dataclasses.replace(request, table=local))
        return self._outcome(context, learned, store, reference, started)

    def _request(self, context: Any, store: Any, name: str, started: float
                 ) -> tuple[Any, float | None]:
        """The learn this task asks for (no table yet), and the ``execution_timeout``
        when it is what bounds the budget (see :func:`_budget_within_timeout`)."""
        from astrid_airflow import GatePolicy, LearnRequest, fingerprint_table
        from astrid_airflow.gate import check_weaker_policy

        policy = GatePolicy.from_dict(policy_overrides(self.gate_policy))
        allow_weaker = to_bool(self.allow_weaker_policy, "allow_weaker_policy")
        check_weaker_policy(policy, allow_weaker)  # before reading or learning
        scheduler = str(self.scheduler) if self.scheduler else None
        n_jobs = to_int(self.n_jobs, "n_jobs")
        if not scheduler:  # local fits: no more workers than the slots held
            n_jobs = jobs_within_slots(n_jobs, self)
        target, seed = str(self.target), resolve_seed(self.random_state, context)
        settings = self._search_settings(target, seed)
        budget, timeout = _budget_within_timeout(
            _budget(settings.pop("max_seconds", self.max_seconds)), timeout_seconds(self),
            started)
        return LearnRequest(
            table=None, target=target, settings=settings,
            clean=to_bool(self.clean, "clean"), store=store, name=name, policy=policy,
            remedies=to_bool(self.remedies, "remedies"), allow_weaker_policy=allow_weaker,
            random_state=seed, force=to_bool(self.force, "force"), n_jobs=n_jobs,
            scheduler=scheduler, created_at=run_timestamp(context), max_seconds=budget,
            # the Dask search may defer (worker slot freed) and resume here
            run=(lambda t, s: self._on_dask(t, fingerprint_table(t), s))
            if scheduler else None), timeout

    def _outcome(self, context: Any, learned: Any, store: Any, reference: Any,
                 started: float) -> dict[str, Any]:
        """Log, link, lineage and Asset events of what the learn did; its XCom."""
        name, version, artefact = learned.name, learned.version, learned.artefact
        if learned.reused:
            self.log.info("Reference table and learn unchanged (%s rows, sha256 %s…): "
                          "keeping %s@%s, not learning again.", artefact.fingerprint["rows"],
                          artefact.fingerprint["sha256"][:12], name, version)
        else:
            # the per-k table the CLI prints: the reviewer's view of why this k
            self.log.info("ASTRID result for %s:\n%s", name, learned.result.format_table())
            if artefact.release_refused:
                self.log.warning("No release of %s within the gate policy: %s. The "
                                 "shuffle will refuse to publish.", name,
                                 artefact.release_refused)
            self.log.info("Saved %s@%s: grouping %s (k=%d) in %.1f s.", name, version,
                          artefact.grouping, artefact.k, time.perf_counter() - started)
        seed = artefact.random_state if learned.reused else learned.result.random_state
        payload = self._payload(store, name, version, artefact, learned=learned.learned,
                                seed=seed, started=started)
        push_links(self, context, artefact=payload["path"])
        if learned.reused:
            return payload
        self._lineage = {"inputs": [{"location": str(reference), "rows": payload["rows"]}],
                         "outputs": [{"location": f"{store.root.rstrip('/')}/{name}",
                                      "version": version}]}
        emit_alias_events(self, context, root=store.root, name=name, extra={
            "artefact": payload["artefact"], "path": payload["path"]})
        return payload

    def _search_settings(self, target: str, seed: int) -> dict[str, Any]:
        """The search settings of the learn: ``search`` whole, else the keywords
        (``classifier="auto"``: left out, so the stage takes the library's defaults for
        the table's size, ``resolve_table_defaults``)."""
        if self.search is not None:
            set_too = [name for name, default in SEARCH_KEYWORDS.items()
                       if str(getattr(self, name)) != str(default)]
            return dict(target=target, random_state=seed, progress=None,
                        **search_fields(self.search, set_too))
        settings = dict(target=target, n_search=_int_or_default(self.n_search, "n_search"),
                        n_test=_int_or_default(self.n_test, "n_test"),
                        alpha=to_float(self.alpha, "alpha"), random_state=seed,
                        adaptive=to_bool(self.adaptive, "adaptive"), sample=self.sample,
                        # progress lines (estimate, fits, time left) in the task log
                        progress=None)
        if _unset(self.classifier) or str(self.classifier).strip().lower() == "auto":
            if not settings["adaptive"]:  # adaptive=True stays; else the size decides
                del settings["adaptive"]
        else:
            settings["classifier"] = str(self.classifier)
        return settings

    def _on_dask(self, table: Any, fingerprint: Mapping[str, Any],
                 settings: dict[str, Any]) -> Any:
        """The search on the Dask cluster: waited for here, or deferred (slot freed)."""
        from astrid_airflow import astrid_on_dask, collect_astrid, submit_astrid

        scheduler = str(self.scheduler)
        resumed = getattr(self, "_resumed", None)
        if resumed is not None:  # back from the triggerer: the run has ended
            if resumed.get("fingerprint") != fingerprint["sha256"]:
                raise AirflowFailException("The reference table changed while the cluster "
                                           "learned; not saving a grouping of other data.")
            return collect_astrid(scheduler, resumed["key"])  # raises the run's error
        if not to_bool(self.deferrable, "deferrable"):
            return astrid_on_dask(table, scheduler=scheduler, **settings)
        from .triggers import DaskRunTrigger

        key = submit_astrid(table, scheduler=scheduler, **settings)
        self.log.info("ASTRID run %s started on %s; deferring (worker slot freed).", key,
                      scheduler)
        self.defer(trigger=DaskRunTrigger(scheduler, key, poll_interval=self.poll_interval),
                   method_name="execute_complete",
                   kwargs={"fingerprint": fingerprint["sha256"]})

    @signed  # the store is signed / verified with the pipeline's key
    def execute_complete(self, context: Any, event: Mapping[str, Any],
                         fingerprint: str | None = None) -> dict[str, Any]:
        """Resume after ``DaskRunTrigger``: re-read the table, collect, save as usual."""
        self._resumed = {**dict(event), "fingerprint": fingerprint}
        return self.execute(context)

    @staticmethod
    def _payload(store: Any, name: str, version: str, artefact: Any, *, learned: bool,
                 seed: int | None, started: float) -> dict[str, Any]:
        return json_small({
            "artefact": f"{name}@{version}",
            "name": name,
            "version": version,
            "store": store.root,
            "path": store.location(name, version).path,
            "learned": learned,
            "grouping": str(artefact.grouping),
            "release": None if not artefact.release else {
                "status": artefact.release.get("status"),
                "reason": artefact.release.get("reason"),
                "utility": artefact.release.get("utility")},
            "k": artefact.k,
            "rows": artefact.fingerprint.get("rows"),
            "seed": seed,
            "seconds": round(time.perf_counter() - started, 3),
        })


def _budget_within_timeout(budget: float | None, timeout: float | None, started: float
                           ) -> tuple[float | None, float | None]:
    """The learn's budget: ``max_seconds`` or what ``execution_timeout`` leaves, the
    smaller; with the timeout when it is the bound (else None)."""
    if timeout is None:
        return budget, None
    left = max(1e-3, timeout - (time.perf_counter() - started))
    if budget is not None and budget <= left:
        return budget, None
    return left, timeout


@contextlib.contextmanager
def _timeout_is_final(timeout: float | None) -> Iterator[None]:
    """A learn over the budget the ``execution_timeout`` sets fails for good, naming it:
    every retry would repeat the same doomed work."""
    from astrid_airflow import BudgetError

    try:
        yield
    except BudgetError as exc:
        if timeout is None:
            raise
        raise AirflowFailException(
            f"The task's execution_timeout ({timeout:g} s) is below what this learn needs "
            f"(its own cost estimate, or its run so far), so it fails now and is not "
            f"retried: {exc}") from exc


#: the keywords a ``search`` object also sets, with their defaults: one place per setting
SEARCH_KEYWORDS = {"classifier": "svm", "n_search": 100, "n_test": 250, "alpha": 0.05,
                   "adaptive": False, "sample": "auto", "max_seconds": 4 * 3600}
#: what the operator decides itself (its n_jobs and scheduler, progress in the task log)
_OPERATOR_OWNED = ("n_jobs", "backend", "progress")


def search_fields(search: Any, set_too: Sequence[str] = ()) -> dict[str, Any]:
    """``search`` (a ``SearchSettings`` or a dict of its fields) as the keywords of
    ``astrid``, checked: every field but the operator's own; a failure names what is wrong
    (an unknown or operator-owned field, a keyword in ``set_too`` set twice, a bad value)."""
    import dataclasses

    from astrid_airflow import SearchSettings

    if isinstance(search, Mapping):
        names = {f.name for f in dataclasses.fields(SearchSettings)}
        unknown = sorted(set(map(str, search)) - names)
        if unknown:
            raise AirflowFailException(f"Invalid search: unknown field(s) {unknown}. "
                                       f"Fields: {sorted(names)}.")
        search = SearchSettings(**dict(search))
    if not isinstance(search, SearchSettings):
        raise AirflowFailException(f"Invalid search: {search!r}. Must be a SearchSettings, "
                                   "a dict of its fields or None.")
    owned = [n for n in _OPERATOR_OWNED
             if getattr(search, n) != getattr(SearchSettings(), n)]
    if owned or set_too:
        raise AirflowFailException(
            f"Invalid search: {', '.join(owned + list(set_too))} set both in search and "
            "by the operator; give each setting once (n_jobs, backend and progress are "
            "the operator's: its n_jobs, scheduler and task log).")
    search.validated()  # a bad value fails here, one line, before the search
    # the keywords' fields always (the operator has its own defaults for them); others
    # only where set (a default reserve_fits would hide the release choice's reserve)
    default = SearchSettings()
    return {f.name: getattr(search, f.name) for f in dataclasses.fields(search)
            if f.name not in _OPERATOR_OWNED
            and (f.name in SEARCH_KEYWORDS or getattr(search, f.name) != getattr(default, f.name))}


def _unset(value: Any) -> bool:
    """None, or a template that rendered it (``"None"``, ``""``)."""
    return value is None or (isinstance(value, str) and value.strip() in ("", "None", "none"))


def _int_or_default(value: Any, name: str) -> int:
    """``n_search`` / ``n_test``: an int >= 1, or the library's default when unset."""
    return int(SEARCH_KEYWORDS[name]) if _unset(value) else to_int(value, name, minimum=1)


def _budget(value: Any) -> float | None:
    """``max_seconds`` from a number or a rendered template; None or "" for no budget."""
    return None if _unset(value) else to_float(value, "max_seconds")
