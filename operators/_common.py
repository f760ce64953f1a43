"""What every ASTRID operator shares: error translation, run-derived seeds, paths.

Only the operators turn library errors into Airflow errors: an ``AstridError`` is a
problem with the input (a bad table, a corrupt artefact, a schema mismatch) that a
retry cannot fix, so it becomes an ``AirflowFailException`` (no retries). Anything
else (a network blip while reading object storage) stays retryable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import numbers
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from airflow.sdk import ObjectStoragePath

from astrid_airflow import AstridError

from ._compat import AirflowFailException

__all__ = [
    "as_path",
    "atomic_copy",
    "atomic_write_text",
    "default_deferrable",
    "derive_seed",
    "jobs_within_slots",
    "json_small",
    "local_input",
    "local_output",
    "policy_overrides",
    "resolve_seed",
    "sha256_of",
    "store_filesystem",
    "store_from_connection",
    "store_location",
    "store_url",
    "timeout_seconds",
    "translate_errors",
    "to_bool",
    "to_float",
    "to_int",
]

# Seeds are 63-bit so they survive every JSON/XCom/SQLite round trip as integers.
_SEED_BITS = 63


@contextlib.contextmanager
def translate_errors(what: str) -> Iterator[None]:
    """Re-raise an ``AstridError`` as a non-retryable ``AirflowFailException``."""
    try:
        yield
    except AstridError as exc:
        raise AirflowFailException(f"{what}: {type(exc).__name__}: {exc}") from exc


def derive_seed(context: Mapping[str, Any]) -> int:
    """A seed that depends only on which task of which run this is.

    The seed is the first 63 bits of SHA-256 over ``dag_id``, ``run_id``, ``task_id``
    and ``map_index`` (not the try number), so a retry of the same task instance
    reproduces its output byte for byte while every run gets a fresh stream.
    Without a run context (unit tests calling ``execute({})``) every part is empty.
    """
    ti = context.get("ti") or context.get("task_instance")
    run_id = context.get("run_id") or getattr(ti, "run_id", "") or ""
    parts = (
        getattr(ti, "dag_id", "") or "",
        str(run_id),
        getattr(ti, "task_id", "") or "",
        str(getattr(ti, "map_index", -1)),
    )
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - _SEED_BITS)


def run_timestamp(context: Mapping[str, Any]) -> Any:
    """When the run was due (``run_after``, else its logical date), or None.

    Stamped on artefacts instead of the wall clock, so a retried task writes the same
    ``created_at``.
    """
    dag_run = context.get("dag_run")
    for value in (getattr(dag_run, "run_after", None), context.get("logical_date")):
        if value is not None:
            return value
    return None


def resolve_seed(random_state: object, context: Mapping[str, Any]) -> int:
    """``random_state`` as a non-negative int; ``None``/``""`` derive one from the run."""
    if random_state is None or (isinstance(random_state, str) and random_state.strip() in
                                {"", "None", "run"}):
        return derive_seed(context)
    return to_int(random_state, "random_state", minimum=0)


def to_int(value: object, name: str, *, minimum: int | None = None) -> int:
    """An int from a number or a rendered template string, else a failure naming it."""
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, numbers.Integral):
            out = int(value)
        elif isinstance(value, str):
            out = int(value.strip())
        else:
            raise TypeError
    except (TypeError, ValueError):
        raise AirflowFailException(f"Invalid {name}: {value!r}. Must be an integer.") from None
    if minimum is not None and out < minimum:
        raise AirflowFailException(f"Invalid {name}: {out}. Must be an integer >= {minimum}.")
    return out


def to_float(value: object, name: str) -> float:
    """A float from a number or a rendered template string, else a failure naming it."""
    try:
        if isinstance(value, bool):
            raise TypeError
        out = float(value.strip() if isinstance(value, str) else value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise AirflowFailException(f"Invalid {name}: {value!r}. Must be a number.") from None
    if math.isnan(out):
        raise AirflowFailException(f"Invalid {name}: NaN. Must be a number.")
    return out


def to_bool(value: object, name: str) -> bool:
    """A bool from a bool or a rendered template (``"True"``, ``"false"``, ``"1"``...)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "1", "yes"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "0", "no", ""}:
        return False
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise AirflowFailException(f"Invalid {name}: {value!r}. Must be true or false.")


def policy_overrides(policy: object) -> dict[str, Any]:
    """Gate thresholds from a (possibly templated) dict: numbers or numeric strings.

    Template rendering turns every value into a string, so thresholds are converted
    back to floats here; ``classifier`` and the attacker model's roles
    (``identifiers``, ``quasi_identifiers``, ``sensitive``) stay as given; ``None``/empty
    values are dropped (the stored policy applies).
    """
    if policy is None or policy == "":
        return {}
    if isinstance(policy, str):
        from astrid_airflow.io import load_json

        try:
            policy = load_json(policy, "gate policy JSON")
        except ValueError:  # not JSON, or nested too deep
            raise AirflowFailException(f"Invalid gate policy {policy[:200]!r}: expected a "
                                       "dict or its JSON.") from None
    if not isinstance(policy, Mapping):
        raise AirflowFailException(f"Invalid gate policy {policy!r}: expected a dict.")
    from astrid_airflow.release import ROLES

    out: dict[str, Any] = {}
    for key, value in policy.items():
        if value is None or value == "" or value == "None":
            continue
        # the attacker model's roles: lists or comma-separated text, as on the CLI
        out[str(key)] = value if key == "classifier" or key in ROLES else \
            to_float(value, str(key))
    return out


def default_deferrable() -> bool:
    """``[operators] default_deferrable`` (False when unset): the deferrable default."""
    from ._compat import airflow_conf

    return airflow_conf().getboolean("operators", "default_deferrable", fallback=False)


def jobs_within_slots(n_jobs: int, task: Any) -> int:
    """``n_jobs`` clamped to the pool slots the running task holds, saying so.

    A pool counts cores through ``pool_slots``. A task running holds its slots; asking
    joblib for more workers (``n_jobs=-1``, a templated ``n_jobs``, an explicit smaller
    ``pool_slots``) would take cores the pool gave other tasks, so the workers are cut
    to the slots with a warning in the task log (joblib's negative values count from
    the cores: -1 all, -2 all but one).
    """
    cores = os.cpu_count() or 1
    wanted = n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)
    slots = max(1, int(getattr(task, "pool_slots", 1) or 1))
    if wanted <= slots:
        return n_jobs
    task.log.warning("n_jobs=%d asks for %d workers but this task holds %d slot(s) of pool "
                     "%r: using %d. To use more, raise pool_slots (and the pool's size: a "
                     "task asking for more slots than its pool has is never scheduled).",
                     n_jobs, wanted, slots, getattr(task, "pool", None), slots)
    return slots


def timeout_seconds(task: Any) -> float | None:
    """The task's ``execution_timeout`` in seconds (None when it has none)."""
    timeout = getattr(task, "execution_timeout", None)
    return None if timeout is None else timeout.total_seconds()


def as_path(value: object, name: str, conn_id: str | None = None) -> ObjectStoragePath:
    """An ``ObjectStoragePath`` from a path, URL or ``ObjectStoragePath``.

    ``conn_id`` is the Airflow connection that opens the URL (as
    ``ObjectStoragePath(url, conn_id=...)``); the legacy ``s3://CONN_ID@bucket/...``
    form carries it in the URL instead.
    """
    if isinstance(value, ObjectStoragePath) and not conn_id:
        return value
    if isinstance(value, (str, os.PathLike)) and os.fspath(value).strip():
        text = os.fspath(value).strip()
        # plain local paths are made absolute so the tasks do not depend on the cwd
        if "://" not in text:
            text = "file://" + os.path.abspath(text)
        return ObjectStoragePath(text, conn_id=conn_id) if conn_id else ObjectStoragePath(text)
    raise AirflowFailException(f"Invalid {name}: {value!r}. Must be a path or URL.")


def store_from_connection(connection: Any) -> ObjectStoragePath:
    """An ``astrid`` connection's store: its host URL, opened with ``storage_conn_id``."""
    root = (connection.host or "").strip()
    if not root:
        raise AirflowFailException(f"Connection {connection.conn_id!r} (astrid) names no "
                                   "store: set its Store URL (host).")
    extra = connection.extra_dejson or {}
    # the form's field; older UIs store it with the provider's prefix
    storage = extra.get("storage_conn_id") or extra.get("extra__astrid__storage_conn_id")
    return as_path(root, f"store of connection {connection.conn_id!r}", storage or None)


def store_location(store: object, store_conn_id: str | None) -> ObjectStoragePath:
    """The artefact store of an operator: ``store`` opened through ``store_conn_id``.

    ``store_conn_id`` names an ``astrid`` connection (the store is the connection's;
    ``store`` must then be empty) or any object-storage connection (``aws_default``...)
    that opens the ``store`` URL. Without it, ``store`` alone (the legacy form, a
    connection id possibly inside the URL).
    """
    if not store_conn_id:
        return as_path(store, "store")
    from airflow.sdk import BaseHook

    from ._compat import AirflowNotFoundException

    try:
        connection = BaseHook.get_connection(store_conn_id)
    except AirflowNotFoundException:
        raise AirflowFailException(f"Airflow connection {store_conn_id!r} (store_conn_id) "
                                   "is not defined.") from None
    if connection.conn_type == "astrid":
        if store not in (None, ""):
            raise AirflowFailException(
                f"store={store!r} and store_conn_id={store_conn_id!r} (an astrid "
                "connection, which names its own store): give one of them.")
        return store_from_connection(connection)
    return as_path(store, "store", store_conn_id)


def is_local(path: ObjectStoragePath) -> bool:
    return path.protocol in {"", "file", "local"}


def store_url(path: ObjectStoragePath) -> str:
    """What the library's fsspec-based store takes: a local path or a plain URL.

    A connection id in the URL (``s3://conn@bucket``) is Airflow's: the library opens the
    URL with ``store_filesystem(path)``, the filesystem Airflow built from that
    connection.
    """
    if is_local(path):
        return path.path
    return f"{path.protocol}://{path.path}"


def store_filesystem(path: ObjectStoragePath) -> Any:
    """The fsspec filesystem of a remote ``path``, from its Airflow connection (None locally).

    Passed to the library (``ArtefactStore(fs=)``, ``validate_surrogate(fs=)``) so the
    artefact store uses the same connection model as inputs and outputs, not fsspec's own
    credential chain.
    """
    return None if is_local(path) else path.fs


@contextlib.contextmanager
def local_input(path: ObjectStoragePath) -> Iterator[str]:
    """A local file name for ``path``: the file itself, or a temporary download."""
    if is_local(path):
        if not Path(path.path).is_file():
            raise AirflowFailException(f"Input file {path.path!r} does not exist.")
        yield path.path
        return
    with tempfile.TemporaryDirectory(prefix="astrid_in_") as tmp:
        local = Path(tmp) / path.name
        with path.open("rb") as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst)
        yield str(local)


@contextlib.contextmanager
def local_output(path: ObjectStoragePath) -> Iterator[str]:
    """A local file name to write ``path`` to; remote targets are uploaded afterwards.

    The library writes local files atomically itself; a remote upload goes to a
    temporary key first and is then moved onto the target.
    """
    if is_local(path):
        Path(path.path).parent.mkdir(parents=True, exist_ok=True)
        yield path.path
        return
    with tempfile.TemporaryDirectory(prefix="astrid_out_") as tmp:
        local = Path(tmp) / path.name
        yield str(local)
        atomic_copy(ObjectStoragePath("file://" + str(local)), path)


def atomic_copy(src: ObjectStoragePath, dst: ObjectStoragePath) -> None:
    """Copy ``src`` to ``dst`` so that a reader of ``dst`` sees the old or the new file.

    The library's one atomic writer does it: a local destination through a temporary
    file in its directory (fsync, rename), a remote one through a temporary key beside
    the target, moved onto it.
    """
    from astrid_airflow.io import atomic_path, fs_put_file

    if is_local(dst):
        with atomic_path(dst.path, overwrite=True) as tmp:
            with src.open("rb") as fin, open(tmp, "wb") as fout:
                shutil.copyfileobj(fin, fout, length=1 << 20)
        return
    with tempfile.TemporaryDirectory(prefix="astrid_copy_") as scratch:
        local = os.path.join(scratch, dst.name or "data")
        with src.open("rb") as fin, open(local, "wb") as fout:
            shutil.copyfileobj(fin, fout, length=1 << 20)
        fs_put_file(dst.fs, local, dst.path, overwrite=True)


def atomic_write_text(dst: ObjectStoragePath, text: str) -> None:
    """Write ``text`` to ``dst`` atomically (see :func:`atomic_copy`)."""
    from astrid_airflow.io import atomic_write_text as write_local
    from astrid_airflow.io import fs_write_bytes

    if is_local(dst):
        write_local(dst.path, text, overwrite=True)
        return
    fs_write_bytes(dst.fs, dst.path, text.encode("utf-8"), overwrite=True)


def sha256_of(path: ObjectStoragePath) -> str:
    """Hex SHA-256 of a file's bytes (identifies exactly what was gated/published)."""
    from astrid_airflow.io import file_sha256

    return file_sha256(path)


def json_small(obj: Any) -> Any:
    """A JSON-safe copy for XCom: numpy scalars to Python, NaN/inf to ``None``.

    The library's lenient converter (``astrid_airflow.io.plain``); what it leaves that
    JSON cannot hold (paths, dates) becomes text.
    """
    from astrid_airflow.io import plain

    return json.loads(json.dumps(plain(obj), default=_as_text, allow_nan=False))


def _as_text(value: Any) -> str:
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
