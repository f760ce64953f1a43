"""``AstridLearnOperator``: learn a grouping on a reference table, keep it as a version.

The expensive step of the pipeline (ASTRID runs hundreds of classifier fits), so it is
skipped when the reference table has not changed since the latest stored version: the
fingerprint (row count + content hash, see ``GroupingArtefact``) of the table is
compared with the latest version's, and only a difference (or ``force``) learns again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import BaseOperator

from ._common import (
    as_path,
    json_small,
    policy_overrides,
    resolve_seed,
    run_timestamp,
    store_url,
    to_bool,
    to_float,
    to_int,
    translate_errors,
)
from .assets import emit_alias_events
from .sql import as_table, local_table, sql_errors

__all__ = ["AstridLearnOperator"]


class AstridLearnOperator(BaseOperator):
    """Run ASTRID on a reference table and save the grouping as a new artefact version.

    Parameters
    ----------
    reference : str or ObjectStoragePath
        The reference table: CSV, Parquet or ARFF, local path or URL, or a database
        table ``conn://CONN_ID/SCHEMA.TABLE`` (see ``astrid_airflow.operators.sql``)
        (templated).
    store : str or ObjectStoragePath
        Root of the artefact store (templated).
    name : str
        Artefact name in the store (templated).
    target : str, default "class"
        Class column (templated).
    classifier : str, default "svm"
        Classifier preset: ``svm``, ``rf`` or ``nb`` (templated).
    n_search, n_test : int, default 100, 250
        The paper's R' and R: permutations per reward evaluation and per p-value
        (templated).
    alpha : float, default 0.05
        Significance level (templated).
    random_state : int or None
        Seed of the search (templated). ``None`` derives one from the run, so a retry
        of the same task instance learns the same grouping.
    n_jobs : int, default 1
        Parallel fits (-1: all cores).
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``): the fits run on that cluster
        instead of in the worker, with the same result as a local run (templated).
    clean : bool, default False
        Drop rows with missing values and constant columns first, as the paper did for
        the UCI data (templated).
    force : bool, default False
        Learn even if the reference table is unchanged (templated).
    adaptive : bool, default False
        Adaptive mode: racing in the search and sequential p-values, far fewer fits,
        the same decisions as the exact tests up to a reported risk (templated; see
        docs/performance.md). The artefact records the stopping record.
    gate_policy : dict, optional
        Default thresholds of the release gate (``GatePolicy`` fields); the suite built
        from them is saved as ``suite.json`` in the new version (templated).

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
    """

    template_fields: Sequence[str] = (
        "reference", "store", "name", "target", "classifier", "n_search", "n_test",
        "alpha", "random_state", "clean", "force", "gate_policy", "scheduler", "adaptive",
    )
    ui_color = "#e8d8f0"

    def __init__(self, *, reference: Any, store: Any, name: str, target: str = "class",
                 classifier: str = "svm", n_search: int | str = 100, n_test: int | str = 250,
                 alpha: float | str = 0.05, random_state: int | str | None = None,
                 n_jobs: int = 1, clean: bool | str = False, force: bool | str = False,
                 gate_policy: Mapping[str, Any] | None = None, scheduler: str | None = None,
                 adaptive: bool | str = False, **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.reference = reference
        self.store = store
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

    def execute(self, context: Any) -> dict[str, Any]:
        from astrid_airflow import (
            ArtefactStore,
            GatePolicy,
            GroupingArtefact,
            StoreError,
            astrid,
            check_table,
            drop_missing_and_constant,
            fingerprint_table,
            gate_extra_files,
            read_table,
        )

        reference = as_table(self.reference, "reference")
        root = store_url(as_path(self.store, "store"))
        name = str(self.name)
        target = str(self.target)
        force = to_bool(self.force, "force")
        seed = resolve_seed(self.random_state, context)
        started = time.perf_counter()
        with translate_errors(f"Cannot learn {name!r} from {reference}"), \
                sql_errors(f"Cannot read {reference}"):
            with local_table(reference) as local:
                table = read_table(local)
            if to_bool(self.clean, "clean"):
                check_table(table, target)
                table = drop_missing_and_constant(table, target)
            check_table(table, target)
            store = ArtefactStore(root)
            fingerprint = fingerprint_table(table)
            try:
                latest = store.latest(name)
            except StoreError:  # no store or no version of this name yet
                latest = None
            if latest is not None and not force:
                previous = store.load(name, latest)
                if dict(previous.fingerprint) == fingerprint:
                    self.log.info("Reference table unchanged (%s rows, sha256 %s…): keeping "
                                  "%s@%s, not learning again.", fingerprint["rows"],
                                  fingerprint["sha256"][:12], name, latest)
                    return self._payload(store, name, latest, previous, learned=False,
                                         seed=previous.random_state, started=started)
                self.log.info("Reference table changed since %s@%s: learning again.",
                              name, latest)
            policy = GatePolicy.from_dict(policy_overrides(self.gate_policy))
            settings = dict(target=target, classifier=str(self.classifier),
                            n_search=to_int(self.n_search, "n_search", minimum=1),
                            n_test=to_int(self.n_test, "n_test", minimum=1),
                            alpha=to_float(self.alpha, "alpha"), random_state=seed,
                            adaptive=to_bool(self.adaptive, "adaptive"), progress=False)
            if self.scheduler:
                from astrid_airflow import astrid_on_dask

                result = astrid_on_dask(table, scheduler=str(self.scheduler), **settings)
            else:
                result = astrid(table, n_jobs=to_int(self.n_jobs, "n_jobs"), **settings)
            artefact = GroupingArtefact.from_result(result, table,
                                                    created_at=run_timestamp(context))
            version = store.save(name, artefact, extra_files=gate_extra_files(artefact, policy))
        self.log.info("Saved %s@%s: grouping %s (k=%d) in %.1f s.", name, version,
                      artefact.grouping, artefact.k, time.perf_counter() - started)
        payload = self._payload(store, name, version, artefact, learned=True, seed=seed,
                                started=started)
        emit_alias_events(self, context, root=root, name=name, extra={
            "artefact": payload["artefact"], "path": payload["path"]})
        return payload

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
            "k": artefact.k,
            "rows": artefact.fingerprint.get("rows"),
            "seed": seed,
            "seconds": round(time.perf_counter() - started, 3),
        })
