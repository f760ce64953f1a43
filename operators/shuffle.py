"""``GoldenEyeShuffleOperator``: a staged GoldenEye surrogate of a table, plus metrics.

The surrogate is written atomically (temporary file, rename) and its privacy and
utility metrics are computed on the complete temporary file *before* it is moved into
place, so a failure leaves nothing staged. The seed comes from the run: a retry of the
same task instance writes the same bytes. The staging is the library's stage
(``stage_release``, as ``astrid shuffle``), which also writes ``<stem>.metrics.json``;
the operator adds templating, the seed, object-storage I/O, lineage and the Spark path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator, ObjectStoragePath

from ._common import (
    as_path,
    json_small,
    local_output,
    resolve_seed,
    store_filesystem,
    store_location,
    store_url,
    to_bool,
    translate_errors,
)
from ._lineage import RecordsLineage, numeric
from ._signing import signed
from .sql import as_table, local_table, sql_errors

__all__ = [
    "GoldenEyeShuffleOperator", "metrics_path", "resolve_artefact", "split_ref",
]


def artefact_dataset(store: str, artefact: str) -> dict[str, Any]:
    """The lineage record of artefact ``NAME@VERSION`` in ``store`` (its Asset's URI)."""
    name, _, version = str(artefact).partition("@")
    return {"location": f"{str(store).rstrip('/')}/{name}", "version": version or None}


def _shuffle_lineage(payload: dict[str, Any]) -> dict[str, Any]:
    """Table and artefact in, the staged surrogate (with its metrics) out."""
    return {"inputs": [{"location": payload["original"]},
                       artefact_dataset(payload["store"], payload["artefact"])],
            "outputs": [{"location": payload["surrogate"], "rows": payload.get("rows"),
                         "metrics": numeric(payload.get("metrics") or {})}]}


def metrics_path(surrogate: ObjectStoragePath) -> ObjectStoragePath:
    """``<stem>.metrics.json`` beside a staged surrogate (the stage's metrics record)."""
    from astrid_airflow.pipeline import metrics_path as beside

    return beside(surrogate)


def split_ref(ref: object) -> tuple[str | None, str]:
    """``"NAME@VERSION"`` → ``(NAME, VERSION)``; ``"NAME"`` and ``"latest"`` too.

    ``"latest"`` alone has no name (the operator's ``name`` supplies it).
    """
    from astrid_airflow import split_artefact_ref

    text = str(ref).strip()
    if text in {"", "latest"}:
        return None, "latest"
    name, version = split_artefact_ref(text.removesuffix("@"))
    return name, version or "latest"


def resolve_artefact(root: str, fs: Any, ref: object, name: object = None
                     ) -> tuple[Any, str, str]:
    """``(store, NAME, VERSION)`` of an operator's ``artefact``/``name`` arguments."""
    from astrid_airflow import ArtefactStore, ParameterError

    found, version = split_ref(ref)
    found = found or (str(name) if name else None)
    if not found:
        raise ParameterError(f"Invalid artefact reference {ref!r}: "
                             "give NAME@VERSION, or 'latest' with name=.")
    store = ArtefactStore(root, fs=fs)
    return store, found, store.resolve(found, version)


class GoldenEyeShuffleOperator(RecordsLineage, BaseOperator):
    """Shuffle a table with a stored grouping artefact into a staged surrogate.

    Parameters
    ----------
    table : str or ObjectStoragePath
        The table to shuffle: the reference table or a new batch with its schema;
        ``.parquet`` or ``.csv``, or a database table ``conn://CONN_ID/SCHEMA.TABLE``
        (streamed into a temporary Parquet file first) (templated).
    table_conn_id : str, optional
        The Airflow connection of ``table``: a common.sql database connection, in which
        ``table`` is a table (``[SCHEMA.]TABLE``) or a ``SELECT`` query, or the
        object-storage connection that opens a ``table`` URL. Without it, ``table`` is a
        file, a URL or the legacy ``conn://CONN_ID/SCHEMA.TABLE`` (templated).
    store : str or ObjectStoragePath, optional
        Root of the artefact store (templated).
    store_conn_id : str, optional
        The Airflow connection of the store: an ``astrid`` connection (the store is the
        connection's Store URL; leave ``store`` empty) or the object-storage connection
        that opens the ``store`` URL (``aws_default``...). Without it ``store`` alone
        (legacy: ``s3://CONN_ID@bucket/...``) (templated).
    artefact : str
        ``NAME@VERSION`` (``VERSION`` like ``v0003``), ``NAME`` or ``NAME@latest``; or
        ``latest`` together with ``name`` (templated).
    out : str or ObjectStoragePath
        Staged surrogate file; the suffix chooses Parquet or CSV (templated).
    name : str, optional
        Artefact name when ``artefact`` is just ``latest`` (templated).
    random_state : int or None
        Seed (templated). ``None`` derives it from dag_id, run_id, task_id and map
        index, so a retry reproduces the surrogate byte for byte.
    utility : bool, default True
        Also compute the train-on-surrogate/test-on-real accuracies (templated).
    engine : {"local", "spark"}, default "local"
        ``"spark"`` shuffles a Parquet dataset on storage the cluster reads with
        :func:`~astrid_airflow.spark_shuffle_parquet` (for tables beyond one machine);
        ``out`` is then a Parquet directory and only the intact-row proportion is
        measured (in Spark). The release gate stays local-only (templated).
    spark_conf : dict, optional
        Spark settings for ``SparkSession.builder`` (e.g. ``{"spark.master":
        "spark://host:7077"}``); default: the active session (templated).
    remedies : bool, default True
        Apply the artefact's release recipe before the shuffle; ``False``
        stages the raw GoldenEye release (pass the same to the gate) (templated).
    allow_unsigned : bool, default False
        Read an artefact store that no configured key signed (saved before signing was
        the default) as checksummed only; recorded in the receipt and the release
        manifest (templated). ``ASTRID_ALLOW_UNSIGNED=1`` does the same for a worker.

    Returns (XCom)
    --------------
    dict
        ``surrogate``, ``original``, ``artefact`` (``NAME@VERSION``), ``store``,
        ``seed``, ``rows``, ``seconds`` and ``metrics`` (intact-row proportion and its
        expectation, largest-group unique share, accuracies). The same JSON is written
        to ``<stem>.metrics.json`` beside the surrogate.
    """

    template_fields: Sequence[str] = (
        "table_conn_id", "store_conn_id",
        "table", "store", "artefact", "out", "name", "random_state", "utility", "engine",
        "spark_conf", "remedies", "allow_unsigned",
    )
    ui_color = "#f3e3c3"

    def __init__(self, *, table: Any, store: Any = None, artefact: str, out: Any,
                 table_conn_id: str | None = None, store_conn_id: str | None = None,
                 name: str | None = None, random_state: int | str | None = None,
                 utility: bool | str = True, engine: str = "local",
                 spark_conf: dict[str, Any] | None = None, remedies: bool | str = True,
                 allow_unsigned: bool | str = False, **kwargs: Any) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.table = table
        self.store = store
        self.table_conn_id = table_conn_id
        self.store_conn_id = store_conn_id
        self.artefact = artefact
        self.out = out
        self.name = name
        self.random_state = random_state
        self.utility = utility
        self.engine = engine
        self.spark_conf = spark_conf
        self.remedies = remedies
        self.allow_unsigned = allow_unsigned

    @signed  # the store is signed / verified with the pipeline's key
    def execute(self, context: Any) -> dict[str, Any]:
        from astrid_airflow import ParameterError, StageRequest, stage_release

        table = as_table(self.table, "table", self.table_conn_id)
        out = as_path(self.out, "out")
        store_path = store_location(self.store, self.store_conn_id)
        root, fs = store_url(store_path), store_filesystem(store_path)
        seed = resolve_seed(self.random_state, context)
        started = time.perf_counter()
        # a failed run's lineage names what it read (replaced by the full record below)
        self._lineage = {"inputs": [{"location": str(table)}]}
        with translate_errors(f"Cannot shuffle {table}"), sql_errors(f"Cannot read {table}"):
            store, name, version = resolve_artefact(root, fs, self.artefact, self.name)
            self._lineage["inputs"].append(artefact_dataset(root, f"{name}@{version}"))
            artefact = store.load(name, version)
            if str(self.engine) not in {"local", "spark"}:
                raise ParameterError(f"Invalid engine {self.engine!r}: 'local' or 'spark'.")
            if str(self.engine) == "spark":
                return self._spark(table, artefact, out, name, version, root, seed, started,
                                   to_bool(self.remedies, "remedies"))
            # the surrogate is uploaded first, then its metrics record (kept beside the
            # staged file, and archived with a release, for auditors)
            with local_table(table) as src, local_output(metrics_path(out)) as record, \
                    local_output(out) as dst:
                staged = stage_release(StageRequest(
                    source=src, artefact=artefact, destination=dst, random_state=seed,
                    utility=to_bool(self.utility, "utility"), overwrite=True,
                    remedies=to_bool(self.remedies, "remedies"), metrics_file=record,
                    original_name=str(table), surrogate_name=str(out),
                    artefact_ref=f"{name}@{version}", store=root))
        self._log_staged(staged, out, f"{name}@{version}")
        self._lineage = _shuffle_lineage(staged.record)
        return staged.record

    def _log_staged(self, staged: Any, out: Any, ref: str) -> None:
        metrics = staged.metrics
        if staged.protects_nothing:
            self.log.warning("The grouping of %s has a single group: every surrogate "
                             "row is an original row. This surrogate PROTECTS NOTHING.", ref)
        self.log.info("Staged %s (%s rows, seed %d): intact-row proportion %.4f "
                      "(expected %.4f).", out, metrics.get("rows"), staged.seed,
                      metrics.get("intact_row_proportion", float("nan")),
                      metrics.get("expected_intact_row_proportion", float("nan")))

    def _spark(self, table: Any, artefact: Any, out: Any, name: str, version: str,
               root: str, seed: int, started: float, remedies: bool = True
               ) -> dict[str, Any]:
        """Shuffle a Parquet dataset with Spark; metrics are what Spark measures."""
        from pyspark.sql import SparkSession

        from astrid_airflow import spark_shuffle_parquet

        def url(path: Any) -> str:
            return path.path if getattr(path, "protocol", "") in {"", "file", "local"} \
                else str(path)

        builder = SparkSession.builder
        for key, value in dict(self.spark_conf or {}).items():
            builder = builder.config(key, str(value))
        result = spark_shuffle_parquet(url(table), artefact, url(out), random_state=seed,
                                       spark=builder.getOrCreate(), overwrite=True,
                                       remedies=remedies)
        self.log.info("Spark staged %s (%d rows, seed %d): intact-row proportion %s.",
                      out, result.rows, seed, result.intact_row_proportion)
        payload = json_small({
            "surrogate": str(out), "original": str(table), "artefact": f"{name}@{version}",
            "store": root, "seed": seed, "rows": result.rows, "engine": "spark",
            "seconds": round(time.perf_counter() - started, 3),
            "metrics": {"intact_row_proportion": result.intact_row_proportion,
                        "rows": result.rows, "groups": result.groups},
        })
        self._lineage = _shuffle_lineage(payload)
        return payload
