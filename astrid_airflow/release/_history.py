"""Successive releases: what a new release discloses next to the earlier ones.

Two releases of one destination made from overlapping batches can be differenced: a
batch, then the same batch minus one person, gives that person's class and every value
by subtracting the two files' per-class value counts. So each release keeps a *source
fingerprint* of every row it was made from (:func:`source_fingerprints`): a keyed hash of
the row (the class included, the declared identifiers not), never the row itself, with
its class. A new release is refused when, against any earlier release of the
destination, the rows it adds or the rows it drops hold between 1 and ``k - 1`` rows of
a class (:func:`differencing`). Exact duplicate rows are one person there: the rows are
compared as sets.

The key is derived from the signing key in force (``ASTRID_SIGNING_KEY``), so someone who
reads the archive but holds no key cannot test whether a row they know was released.
Without a key (only files from before signing was the default: the gate creates a key
when there is none) the fingerprints are unkeyed (the file says so) and such a test is
possible for a reader who knows a whole row (docs/privacy.md, "Successive releases").
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from astrid_airflow._errors import ReleaseError

#: The gate's file of source fingerprints, beside its validation JSON:
#: ``<stem>.source_rows.parquet``; publish archives it with the release.
SOURCE_ROWS_SUFFIX = ".source_rows.parquet"

_FORMAT = b"1"
_PERSON = b"astrid-rows"  # blake2b's personalisation: these hashes are no other's
_UNKEYED = b"astrid source rows, no signing key"


def _fingerprint_key(key: bytes | None) -> bytes:
    return hashlib.blake2b(key or _UNKEYED, digest_size=32, person=_PERSON).digest()


def key_id(key: bytes | None) -> str:
    """Which key made a file's fingerprints (never the key): files of two keys are not
    comparable."""
    return hashlib.blake2b(_fingerprint_key(key), digest_size=8).hexdigest()


@dataclass(frozen=True)
class SourceRows:
    """The distinct source rows of one release: ``fingerprints`` (16-byte keyed hashes)
    with each row's ``classes`` (as text), and the ``key_id`` that made them."""

    fingerprints: np.ndarray
    classes: np.ndarray
    key_id: str
    keyed: bool

    def to_bytes(self) -> bytes:
        """The Parquet file the gate writes (``<stem>.source_rows.parquet``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({
            "fingerprint": pa.array(list(self.fingerprints), type=pa.binary(16)),
            "class": pa.array(self.classes.astype(str), type=pa.string())},
        ).replace_schema_metadata({"astrid_source_rows": _FORMAT,
                                   "key_id": self.key_id.encode(),
                                   "keyed": b"true" if self.keyed else b"false"})
        sink = io.BytesIO()
        pq.write_table(table, sink)
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, shown: str) -> SourceRows:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(io.BytesIO(data))
        except (pa.ArrowException, OSError) as exc:
            raise ReleaseError(f"Refusing to publish: {shown} is not a file of source "
                               f"fingerprints ({exc}).") from None
        meta = table.schema.metadata or {}
        if meta.get(b"astrid_source_rows") != _FORMAT or \
                table.schema.names != ["fingerprint", "class"]:
            raise ReleaseError(f"Refusing to publish: {shown} is not a file of source "
                               "fingerprints of a known format.")
        return cls(np.array(table.column("fingerprint").to_pylist(), dtype=object),
                   np.array(table.column("class").to_pylist(), dtype=object),
                   meta.get(b"key_id", b"").decode(), meta.get(b"keyed") == b"true")


def source_fingerprints(table: Any, columns: Sequence[str], target: str,
                        key: bytes | None) -> SourceRows:
    """The distinct rows of ``table`` on ``columns`` (the class ``target`` among them),
    each as a keyed 16-byte hash, with its class."""
    from ._hashing import row_hashes

    cols = list(dict.fromkeys([*columns, target]))
    hashes = row_hashes(table, cols)
    labels = np.asarray(table[target].astype(str) if hasattr(table, "iloc")
                        else table.column(target).to_pandas().astype(str), dtype=object)
    _, first = np.unique(hashes, return_index=True)  # duplicates: one person
    first.sort()
    mac = _fingerprint_key(key)
    prints = np.array([hashlib.blake2b(h.tobytes(), key=mac, digest_size=16).digest()
                       for h in hashes[first]], dtype=object)
    return SourceRows(prints, labels[first], key_id(key), key is not None)


@dataclass(frozen=True)
class Isolation:
    """Rows of one class that a new release ``"adds"`` to or ``"drops"`` from an
    earlier one, fewer than ``k``: differencing the two files gives their values."""

    earlier: str
    direction: str
    label: str
    rows: int
    k: int

    def line(self) -> str:
        return (f"against release {self.earlier!r} it {self.direction} {self.rows} "
                f"row(s) of class {self.label!r} (fewer than k = {self.k})")


@dataclass(frozen=True)
class Differencing:
    """What a new release discloses next to the earlier ones of its destination.

    ``isolations``: each earlier release and class where the difference isolates fewer
    than ``k`` rows (the release is refused if any); ``compared``: the earlier releases
    checked; ``not_compared``: those whose fingerprints are missing or of another key.
    """

    isolations: tuple[Isolation, ...]
    compared: tuple[str, ...]
    not_compared: tuple[str, ...]

    @property
    def safe(self) -> bool:
        return not self.isolations

    def to_dict(self) -> dict[str, Any]:
        return {"compared": list(self.compared), "not_compared": list(self.not_compared),
                "isolations": [i.line() for i in self.isolations]}


def differencing(new: SourceRows, earlier: Mapping[str, SourceRows | None],
                 k: int) -> Differencing:
    """Compare ``new`` with each earlier release (``{release_id: rows or None}``).

    For each earlier release E and class c, the rows of class c in ``new`` but not in E,
    and those in E but not in ``new``, must number 0 or at least ``k``.
    """
    isolations: list[Isolation] = []
    compared, skipped = [], []
    mine = dict(zip(new.fingerprints, new.classes, strict=True))
    for rid, rows in sorted(earlier.items()):
        if rows is None or rows.key_id != new.key_id:
            skipped.append(rid)
            continue
        compared.append(rid)
        theirs = dict(zip(rows.fingerprints, rows.classes, strict=True))
        for direction, a, b in (("adds", mine, theirs), ("drops", theirs, mine)):
            counts: dict[str, int] = {}
            for fp, label in a.items():
                if fp not in b:
                    counts[label] = counts.get(label, 0) + 1
            isolations.extend(Isolation(rid, direction, label, n, k)
                              for label, n in sorted(counts.items()) if 0 < n < k)
    return Differencing(tuple(isolations), tuple(compared), tuple(skipped))
