"""Privacy and utility metrics of GoldenEye surrogates (ASTRID paper, Sec. 6.2).

Sec. 6.2, "Anonymisation and Surrogate Data", measures anonymity by P_anon, the
proportion of the original table's rows that are still intact after shuffling, and
utility by the accuracy of a classifier trained on the surrogate. This module computes

* :func:`intact_row_proportion`: the measured P_anon;
* :func:`expected_intact_row_proportion`: its expectation from the class and group
  value counts, before any shuffling;
* :func:`largest_group_unique_share`: the linkage risk P_anon misses (rows identifiable
  by the values of the largest group, which always travel together with their class);

and :mod:`._utility` the utility (train on the surrogate, test on real rows), and
:mod:`._surrogate_metrics` all of them for one surrogate.

Rows are compared through 64-bit row hashes computed column by column in Arrow (see
:func:`row_hashes`), so the privacy metrics scale to tables of 10M rows without pandas.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError, short_list
from astrid_airflow.engine import Grouping, as_grouping
from astrid_airflow.io import TableFile, read_arrow

from ._surrogate import (
    is_arrow_table,
    resolve_grouping,
)

#: Rows whose smallest group count exceeds this use the Poisson approximation.
EXACT_CAP = 64

_U64 = np.uint64
_NULL_HASH = _U64(0x5BD1E9955BD1E995)


# ------------------------------------------------------------------------ table access

def table_source(table: Any, what: str) -> TableSource:
    return table if isinstance(table, TableSource) else TableSource(table, what)


class TableSource:
    """Column-wise access to a DataFrame, Arrow table or Parquet/CSV file."""

    def __init__(self, table: Any, what: str):
        self.path = None
        self.schema = None  # a Parquet file's Arrow schema (from its footer)
        if isinstance(table, pd.DataFrame):
            self.columns = [str(c) for c in table.columns]
            self.num_rows = len(table)
        elif is_arrow_table(table):
            self.columns = list(table.column_names)
            self.num_rows = table.num_rows
        elif isinstance(table, (str, os.PathLike, TableFile)):
            import pyarrow.parquet as pq

            from astrid_airflow.io import filesystem, input_format

            self.path = table if isinstance(table, TableFile) else os.fspath(table)
            kind = table.kind if isinstance(table, TableFile) else input_format(self.path)
            if kind != "parquet":  # CSV, ARFF: parsed whole, once
                table = read_arrow(self.path)
                self.columns, self.num_rows = list(table.column_names), table.num_rows
            else:
                shown = getattr(self.path, "path", self.path)
                fs, inner = filesystem(shown)
                try:
                    meta = pq.read_metadata(inner, filesystem=fs)
                except FileNotFoundError:
                    raise DataError(f"Unreadable file {shown!r}: no such file.") from None
                except Exception as exc:
                    raise DataError(f"Unreadable file {shown!r}: "
                                    f"{type(exc).__name__}: {exc}") from None
                self.schema = meta.schema.to_arrow_schema()
                self.columns = list(self.schema.names)
                self.num_rows = meta.num_rows
                table = None
        else:
            raise DataError(f"Cannot compute metrics of {type(table).__name__} ({what}); pass "
                            "a pandas DataFrame, a pyarrow Table or a Parquet/CSV path.")
        self.table = table

    def column(self, name: str, *, dictionary: bool = False) -> Any:
        """Column ``name``; with ``dictionary``, a Parquet string column comes
        dictionary-encoded as stored (its indices and distinct values, never one Python
        or Arrow string per row)."""
        if self.table is None:  # Parquet: read one column at a time
            if dictionary and _is_stringy(self.schema.field(name).type):
                return self._dictionary_column(name)
            return read_arrow(self.path, [name]).column(name)
        if isinstance(self.table, pd.DataFrame):
            return self.table[name]
        return self.table.column(name)

    def _dictionary_column(self, name: str) -> Any:
        import pyarrow.parquet as pq

        from astrid_airflow.io import filesystem, read_schema

        shown = getattr(self.path, "path", self.path)
        if not getattr(self, "_checked", False):  # read_arrow's checks: a regular file,
            read_schema(shown, kind="parquet")  # unique column names
            self._checked = True
        fs, inner = filesystem(shown)
        try:
            return pq.read_table(inner, columns=[name], filesystem=fs,
                                 read_dictionary=[name]).column(name)
        except Exception as exc:
            raise DataError(f"Unreadable file {shown!r}: {type(exc).__name__}: {exc}") from None

    def require(self, columns: Sequence[str], what: str) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise DataError(f"The {what} lacks column(s) {short_list(missing)}.")


# ------------------------------------------------------------------------- row hashes

def splitmix(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """SplitMix64 finaliser: a bijective, well-mixed map of uint64 (wraps by design).

    In place when ``out`` is given (``out=x`` overwrites ``x``). Long arrays are mixed
    in blocks of :data:`_BLOCK` values with one cached scratch block: the six steps then
    run in cache (~3x faster on 10M values than whole-array passes), same bits.
    """
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype == _U64 \
            and x.shape[0] > _BLOCK and (out is None or (
                isinstance(out, np.ndarray) and out.dtype == _U64 and out.shape == x.shape)):
        out = np.empty_like(x) if out is None else out
        tmp = np.empty(_BLOCK, dtype=_U64)
        for lo in range(0, x.shape[0], _BLOCK):
            _splitmix_block(x[lo:lo + _BLOCK], out[lo:lo + _BLOCK], tmp)
        return out
    z = np.add(x, _U64(0x9E3779B97F4A7C15), out=out)
    z ^= z >> _U64(30)
    z *= _U64(0xBF58476D1CE4E5B9)
    z ^= z >> _U64(27)
    z *= _U64(0x94D049BB133111EB)
    z ^= z >> _U64(31)
    return z


#: Values per block of the blocked hashing passes (512 KiB of uint64: cache-resident).
_BLOCK = 1 << 16


def _splitmix_block(x: np.ndarray, z: np.ndarray, tmp: np.ndarray) -> None:
    # splitmix(x, out=z) for one block, shifts into the scratch ``tmp`` (no allocation).
    t = tmp[:z.shape[0]]
    np.add(x, _U64(0x9E3779B97F4A7C15), out=z)
    for shift, mul in ((30, _U64(0xBF58476D1CE4E5B9)), (27, _U64(0x94D049BB133111EB)),
                       (31, None)):
        np.right_shift(z, _U64(shift), out=t)
        np.bitwise_xor(z, t, out=z)
        if mul is not None:
            np.multiply(z, mul, out=z)


def _hash_strings(values: Any) -> np.ndarray:
    """Hashes of a (small) Arrow array of distinct strings/binaries; null hashes as ''."""
    objs = np.asarray(values.to_pylist(), dtype=object)
    objs[pd.isna(objs)] = ""
    return pd.util.hash_array(objs).astype(_U64, copy=False)


def _hash_array(arr: Any) -> np.ndarray:
    """64-bit hashes of the values of one Arrow array (one chunk).

    Canonical forms make equal values hash equally across containers and CSV round trips:
    a categorical hashes as its values, integers and floats as float64 (``1 == 1.0``),
    NaN as missing, and a missing string as the empty string (CSV cannot tell them
    apart; merging them can only raise the intact-row count, the conservative side).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    typ = arr.type
    if pa.types.is_dictionary(typ):
        values = _hash_array(arr.dictionary)
        idx = arr.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.intp)
        out = values[idx] if len(values) else np.zeros(len(arr), _U64)
        if arr.null_count:
            fill = _hash_strings(pa.array([""]))[0] if _is_stringy(typ.value_type) \
                else _NULL_HASH
            out[arr.is_null().to_numpy(zero_copy_only=False)] = fill
        return out
    if _is_stringy(typ):
        enc = pc.dictionary_encode(arr)
        values = _hash_strings(enc.dictionary)
        if arr.null_count:
            values = np.append(values, _hash_strings(pa.array([""])))
            idx = enc.indices.fill_null(len(values) - 1)
        else:
            idx = enc.indices
        return values[idx.to_numpy(zero_copy_only=False).astype(np.intp)]
    num = _numeric(arr)
    if num is not None:
        return _hash_floats(*_float_values(num))
    if pa.types.is_null(typ):
        return np.full(len(arr), _NULL_HASH, dtype=_U64)
    try:
        return _hash_array(arr.cast(pa.string()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(f"Cannot compare values of type {typ}: {exc}") from None


def _numeric(arr: Any) -> Any:
    """``arr`` (an Arrow array or chunked array) as integers, floats or decimals
    (booleans as 0/1, times as integers); None for other types."""
    import pyarrow as pa

    typ = arr.type
    if pa.types.is_boolean(typ):
        arr = arr.cast(pa.uint8())
    elif pa.types.is_temporal(typ):
        arr = arr.cast(pa.int64()) if not pa.types.is_date32(typ) else \
            arr.cast(pa.int32()).cast(pa.int64())
    typ = arr.type
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return arr
    return None


def _float_values(arr: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``(values as float64, missing mask or None)`` of numeric ``arr`` (the array may
    be Arrow's, read-only): integers compare equal to the same floats, NaN to null."""
    import pyarrow as pa

    vals = arr.cast(pa.float64()).fill_null(float("nan")).to_numpy(zero_copy_only=False)
    missing = np.isnan(vals) if arr.null_count or pa.types.is_floating(arr.type) else None
    return vals, missing


def _hash_floats(vals: np.ndarray, missing: np.ndarray | None) -> np.ndarray:
    """The hashes of float64 ``vals`` (read-only is fine), -0.0 as 0.0 and missing
    values alike; block by block, in cache."""
    n = vals.shape[0]
    out = np.empty(n, dtype=_U64)
    canonical = out.view(np.float64)
    tmp = np.empty(min(n, _BLOCK), dtype=_U64)
    for lo in range(0, n, _BLOCK):
        block = slice(lo, lo + _BLOCK)
        np.add(vals[block], 0.0, out=canonical[block])  # -0.0 -> 0.0
        _splitmix_block(out[block], out[block], tmp)
    if missing is not None and missing.any():
        out[missing] = _NULL_HASH
    return out


def _is_stringy(typ: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_string(typ) or pa.types.is_large_string(typ)
            or pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
            or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)))


def _column_hash(column: Any) -> np.ndarray:
    column = _chunked(column)
    if column.num_chunks == 0:
        return np.zeros(0, dtype=_U64)
    return np.concatenate([_hash_array(c) for c in column.chunks])


def _chunked(column: Any) -> Any:
    """A pandas Series, Arrow array or chunked array as an Arrow chunked array."""
    import pyarrow as pa

    if isinstance(column, pd.Series):
        try:
            column = pa.Array.from_pandas(column.array)
            # Arrow-backed pandas strings come back chunked: use them as they are (wrapping
            # them again failed and fell back to Python objects, ~40x slower)
            if not isinstance(column, pa.ChunkedArray):
                column = pa.chunked_array([column])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            column = pa.chunked_array([pa.array(column.astype(str).to_numpy(object))])
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    return column


def _code_cap(n: int) -> int:
    # Most codes a column or group may span to be counted by np.bincount (8 bytes each).
    return max(2 * n, 1 << 16)


class _Scratch:
    """Buffers reused from one group to the next, per thread, during one metrics pass:
    on 10M rows a fresh array costs more in page faults (~0.5 ms a MiB on this kind of
    VM) than the pass that fills it."""

    def __init__(self) -> None:
        import threading

        self._local = threading.local()  # freed with this object, in every thread

    def get(self, name: str, n: int, dtype: Any) -> np.ndarray:
        bufs = vars(self._local)
        buf = bufs.get(name)
        if buf is None or buf.shape[0] < n or buf.dtype != dtype:
            buf = bufs[name] = np.empty(n, dtype=dtype)
        return buf[:n]

    def release(self) -> None:
        import threading

        self._local = threading.local()  # the old one's buffers go, in every thread


def _empty(scratch: _Scratch | None, name: str, n: int, dtype: Any) -> np.ndarray:
    return np.empty(n, dtype=dtype) if scratch is None else scratch.get(name, n, dtype)


class _Column:
    """One column read for the one-pass metrics.

    Its values' hashes (those of :func:`_column_hash`) are made block by block from
    Arrow's buffers (:meth:`blocks`), never held whole unless asked (:meth:`hashes`).
    With ``codes``, also integer codes ``0 <= code < levels``, equal exactly where the
    hashes are, when they come cheap: categoricals and strings (each distinct value
    hashed once) and integer-valued numbers of a small span (value minus minimum); else
    ``codes`` is None and the caller counts hashes. ``scratch``: where the codes may go
    (the caller is done with them before it reads the next column).
    """

    def __init__(self, column: Any, codes: bool, scratch: _Scratch | None = None):
        import pyarrow as pa

        column = _chunked(column)
        self.n = len(column)
        self.codes: np.ndarray | None = np.zeros(0, dtype=np.intp) if codes else None
        self.levels = 1
        # (kind, per-row values, extra): ("take", indices, hash table),
        # ("floats", float64 values, missing mask or None), ("hashes", hashes, None)
        self._parts: list[tuple[str, np.ndarray, Any]] = []
        if self.n == 0:
            return
        if pa.types.is_dictionary(column.type) or _is_stringy(column.type):
            self._dictionary(column, codes, scratch)
            return
        num = _numeric(column)
        if num is None:  # the null type, or values compared as text
            self.codes = None
            self._parts.append(("hashes", _column_hash(column), None))
            return
        for c in num.cast(pa.float64()).chunks:
            if len(c) == 0:
                continue
            if c.null_count:
                vals = c.fill_null(float("nan")).to_numpy()
                missing = np.isnan(vals)
            else:
                vals = c.to_numpy()  # Arrow's buffer, read-only: no copy
                missing = np.isnan(vals) if pa.types.is_floating(num.type) else None
                missing = missing if missing is not None and missing.any() else None
            self._parts.append(("floats", vals, missing))
        if codes:
            coded = _integer_codes([(v, m) for _, v, m in self._parts], self.n,
                                   pa.types.is_integer(num.type),
                                   lambda: _empty(scratch, "codes", self.n, np.intp))
            self.codes, self.levels = coded or (None, 0)

    @classmethod
    def of_hashes(cls, hashes: np.ndarray, codes: np.ndarray | None, levels: int
                  ) -> _Column:
        self = cls.__new__(cls)
        self.n, self.codes, self.levels = hashes.shape[0], codes, levels
        self._parts = [("hashes", hashes, None)]
        return self

    def _dictionary(self, column: Any, codes: bool, scratch: _Scratch | None) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        column = column.unify_dictionaries()  # one dictionary, indices valid in every chunk
        null = _hash_strings(pa.array([""]))[0] if _is_stringy(column.type.value_type) \
            else _NULL_HASH  # as _hash_array hashes a missing value
        table = np.append(_hash_array(column.chunk(0).dictionary), null)
        if codes:
            # Dictionary entries with equal hashes get one code (the null slot if used).
            canon, uniques = pd.factorize(table if column.null_count else table[:-1])
            self.codes = _empty(scratch, "codes", self.n, np.intp)
            self.levels = len(uniques)
        at = 0
        for c in column.chunks:
            if len(c) == 0:
                continue
            indices = c.indices
            if c.null_count:
                if indices.type.bit_width < 32:
                    indices = indices.cast(pa.int32())
                indices = indices.fill_null(len(table) - 1)
            idx = indices.to_numpy()
            if codes:
                np.take(canon, idx, out=self.codes[at:at + idx.shape[0]])
            self._parts.append(("take", idx, table))
            at += idx.shape[0]

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """``(first row, hashes of the block's rows)``, block after block of at most
        :data:`_BLOCK` rows; a block is scratch, valid until the next one."""
        out = np.empty(min(self.n, _BLOCK), dtype=_U64)
        tmp = np.empty_like(out)
        at = 0
        for kind, values, extra in self._parts:
            m = values.shape[0]
            for lo in range(0, m, _BLOCK):
                hi = min(m, lo + _BLOCK)
                if kind == "hashes":
                    yield at + lo, values[lo:hi]
                    continue
                z = out[:hi - lo]
                if kind == "take":
                    np.take(extra, values[lo:hi], out=z)
                else:
                    np.add(values[lo:hi], 0.0, out=z.view(np.float64))  # -0.0 -> 0.0
                    _splitmix_block(z, z, tmp)
                    if extra is not None and extra[lo:hi].any():
                        z[extra[lo:hi]] = _NULL_HASH
                yield at + lo, z
            at += m

    def hashes(self, out: np.ndarray | None = None) -> np.ndarray:
        """All the hashes as one array, in ``out`` if given (kept: later :meth:`blocks`
        read it)."""
        if len(self._parts) == 1 and self._parts[0][0] == "hashes":
            return self._parts[0][1]
        out = np.empty(self.n, dtype=_U64) if out is None else out
        for lo, z in self.blocks():
            out[lo:lo + z.shape[0]] = z
        self._parts = [("hashes", out, None)]
        return out


def _integer_codes(parts: list[tuple[np.ndarray, np.ndarray | None]], n: int,
                   integral: bool, empty: Callable[[], np.ndarray]
                   ) -> tuple[np.ndarray, int] | None:
    """``(value - minimum, levels)`` of float64 ``parts`` (values, missing mask) when
    every present value is an integer and they span less than :func:`_code_cap`
    (missing values get the last code; ``empty()`` gives the array to fill); else None.

    Exact: integer-valued floats within a small span subtract exactly, so distinct
    values get distinct codes, as they get distinct hashes.
    """
    present = [v if m is None else v[~m] for v, m in parts]
    present = [p for p in present if p.shape[0]]
    if not present:
        return np.zeros(n, dtype=np.intp), 1
    if not integral:
        head = present[0][:256]  # a quick no for continuous columns
        if not np.array_equal(head, np.rint(head)) or \
                not all(np.array_equal(p, np.rint(p)) for p in present):
            return None
    lo, hi = min(p.min() for p in present), max(p.max() for p in present)
    if not hi - lo < _code_cap(n):  # also NaN-safe: inf spans fail
        return None
    span = int(hi - lo) + 1
    codes = empty()
    at, missing = 0, False
    with np.errstate(invalid="ignore"):  # NaN (missing) casts to junk, replaced below
        for v, m in parts:
            out = codes[at:at + v.shape[0]]
            np.subtract(v, lo, out=out, casting="unsafe")
            if m is not None:
                out[m] = span
                missing = True
            at += v.shape[0]
    return codes, span + missing


def row_hashes(table: Any, columns: Sequence[str]) -> np.ndarray:
    """64-bit hashes of the rows of ``table`` restricted to ``columns``, in that order.

    Computed one column at a time (SplitMix64 chaining of per-column value hashes), so a
    Parquet file is never held whole. Two rows with equal values hash equally whatever
    the container (DataFrame, Arrow, Parquet, CSV); distinct rows collide with probability
    about 2^-64 per pair, i.e. < 3e-6 for any pair in 10M rows.
    """
    src = table_source(table, "table")
    src.require(columns, "table")
    h = np.full(src.num_rows, _U64(0x243F6A8885A308D3), dtype=_U64)
    for c in columns:
        hc = _column_hash(src.column(c))
        if hc.shape[0] != h.shape[0]:
            raise DataError(f"Column {c!r} has {hc.shape[0]} values for {h.shape[0]} rows.")
        h ^= hc
        splitmix(h, out=h)
    return h


# ------------------------------------------------------------- sort-free counting

#: Rows sampled to guess a key's cardinality (only the speed depends on the guess).
_SAMPLE = 20_000


def _few_distinct(keys: np.ndarray) -> bool:
    # Few distinct keys: a hash table stays in cache and beats sorting; many: sort.
    step = max(1, keys.shape[0] // _SAMPLE)
    return len(pd.unique(keys[::step])) <= _SAMPLE // 20


def _repeats(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(keys occurring more than once, their counts)``, from one (SIMD) sort."""
    s = np.sort(keys)
    new = np.empty(s.shape[0], dtype=bool)
    new[:1] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    runs = np.diff(starts, append=s.shape[0])
    rep = runs > 1
    return s[starts[rep]], runs[rep]


def _key_counts(keys: np.ndarray, ones_as_none: bool = False) -> np.ndarray | None:
    """For every row, how many rows share its key (uint32), without sorting rows.

    With ``ones_as_none``, None when every key is distinct (a continuous group: the
    common case on big tables, and 4 bytes a row saved).
    """
    if _few_distinct(keys):
        codes, uniques = pd.factorize(keys)
        counts = np.bincount(codes, minlength=len(uniques)).astype(np.uint32)
        out = counts[codes]
        return None if ones_as_none and len(uniques) == keys.shape[0] else out
    dkeys, dcounts = _repeats(keys)
    if ones_as_none and dkeys.shape[0] == 0:
        return None
    out = np.ones(keys.shape[0], dtype=np.uint32)
    if dkeys.shape[0]:
        pos = pd.Index(dkeys).get_indexer(keys)  # hash table of the repeated keys only
        hit = pos >= 0
        out[hit] = dcounts[pos[hit]]
    return out


def _first_rows(keys: np.ndarray) -> np.ndarray:
    """Ascending indices of the first row of every distinct key (hash tables, one sort)."""
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    if _few_distinct(keys):
        return _first_of_codes(pd.factorize(keys)[0])
    dkeys, _ = _repeats(keys)
    if dkeys.shape[0] == 0:
        return np.arange(n)
    rows = np.flatnonzero(pd.Index(dkeys).get_indexer(keys) >= 0)  # rows of repeated keys
    keep = np.ones(n, dtype=bool)
    keep[rows] = False
    keep[rows[_first_of_codes(pd.factorize(keys[rows])[0])]] = True
    return np.flatnonzero(keep)


def _first_of_codes(codes: np.ndarray) -> np.ndarray:
    # Codes numbered in order of first appearance: a row is first iff it raises the max.
    seen = np.maximum.accumulate(codes)
    new = np.empty(codes.shape[0], dtype=bool)
    new[:1] = True
    np.greater(seen[1:], seen[:-1], out=new[1:])
    return np.flatnonzero(new)


def _share_found(unique_keys: np.ndarray, keys: np.ndarray) -> float:
    """Share of ``unique_keys`` occurring in ``keys``.

    A bitmap of the keys' top bits first drops the keys that cannot occur on the other
    side (both ways; ~10% of random keys pass), then pandas' hash-table ``isin`` decides
    on the rest: exact, and far cheaper than hashing 10M keys when few rows match.
    """
    n = unique_keys.shape[0]
    bits = min(28, max(12, (max(n, keys.shape[0]) - 1).bit_length() + 3))
    shift = _U64(64 - bits)
    seen = np.zeros(1 << bits, dtype=bool)

    def mark(values: np.ndarray) -> None:
        for lo in range(0, values.shape[0], _BLOCK):  # block by block: no big temporaries
            seen[values[lo:lo + _BLOCK] >> shift] = True

    def marked(values: np.ndarray) -> np.ndarray:
        hit = np.empty(values.shape[0], dtype=bool)
        for lo in range(0, values.shape[0], _BLOCK):
            hit[lo:lo + _BLOCK] = seen[values[lo:lo + _BLOCK] >> shift]
        return values[hit]

    mark(keys)
    cand = marked(unique_keys)
    if cand.shape[0] < n // 2:
        seen[:] = False
        mark(cand)
        keys = marked(keys)
    found = pd.Series(cand, copy=False).isin(keys).to_numpy()
    return np.count_nonzero(found) / n


def _all_distinct(keys: np.ndarray, scratch: _Scratch | None = None) -> bool:
    """Whether no two ``keys`` are equal: one sort of their top 32 bits (half the cost
    of sorting the keys), the few rows whose top bits repeat then compared in full."""
    n = keys.shape[0]
    step = max(1, n // _SAMPLE)
    sample = keys[::step]
    if len(pd.unique(sample)) < sample.shape[0]:  # a quick no
        return False
    s = np.right_shift(keys, _U64(32), out=_empty(scratch, "top", n, np.uint32))
    s.sort()
    repeated = s[1:][s[1:] == s[:-1]]
    if repeated.shape[0] == 0:
        return True
    if repeated.shape[0] > n // 64:  # ~n^2 / 2^33 expected: many rows share top bits
        return _repeats(keys)[0].shape[0] == 0
    mask = _U64((1 << 20) - 1)
    hit = np.zeros(1 << 20, dtype=bool)  # keys equal in full are equal in these bits
    hit[repeated & mask] = True
    cand = keys[hit[(keys >> _U64(32)) & mask]]
    return np.unique(cand).shape[0] == cand.shape[0]


def _coded_counts(codes: np.ndarray, levels: int, classes: np.ndarray, n_classes: int,
                  share: bool, with_class: bool
                  ) -> tuple[np.ndarray | None, float | None] | None:
    """Counting on integer codes (``np.bincount``, no hash table, no sort).

    Returns ``(counts, unique share)``: ``counts`` (with ``with_class``) the rows of each
    row's class sharing its code, as uint32, None when all are 1; with ``share``, the
    share of rows whose code no other row has. None when the class-by-code table would
    be too big to count this way. ``codes`` is the caller's to give up (overwritten).
    """
    n = codes.shape[0]
    cap = _code_cap(n)
    unique = per_value = None
    if share or levels * n_classes > cap:
        per_value = np.bincount(codes, minlength=levels)
        if share:
            unique = int(np.count_nonzero(per_value == 1)) / n
        if per_value.max(initial=0) <= 1:  # distinct values: distinct with their class
            return None, unique
    if not with_class:
        return None, unique
    rest = None
    if levels * n_classes > cap:
        # Only repeated values can repeat within a class: number them; the others share
        # a last code whose rows count 1.
        repeated = per_value > 1
        rest = int(np.count_nonzero(repeated))
        if (rest + 1) * n_classes > cap:
            return None
        remap = np.full(levels, rest, dtype=np.intp)
        remap[repeated] = np.arange(rest)
        codes, levels = remap[codes], rest + 1
    key = np.multiply(codes, n_classes, out=codes)
    key += classes
    per_key = np.bincount(key, minlength=levels * n_classes)
    if rest is not None:
        per_key[rest * n_classes:] = 1
    if per_key.max(initial=0) <= 1:
        return None, unique
    return per_key.astype(np.uint32)[key], unique


def _hashed_counts(keys: np.ndarray, class_hash: Callable[[], np.ndarray], share: bool,
                   with_class: bool, scratch: _Scratch | None = None
                   ) -> tuple[np.ndarray | None, float | None]:
    """:func:`_coded_counts` for 64-bit group keys (``class_hash()``: the class salt)."""
    if _all_distinct(keys, scratch):
        return None, 1.0 if share else None
    unique = float(np.mean(_key_counts(keys) == 1)) if share else None
    if not with_class:
        return None, unique
    k = keys ^ class_hash()
    return _key_counts(splitmix(k, out=k), ones_as_none=True), unique


# -------------------------------------------------------------------------- P_anon

def intact_row_proportion(original: Any, surrogate: Any, *,
                          columns: Sequence[str] | None = None) -> float:
    """The paper's P_anon: share of the original's unique rows found intact in the surrogate.

    Parameters
    ----------
    original, surrogate : DataFrame, pyarrow.Table or Parquet/CSV path
        The table before and after shuffling.
    columns : sequence of str, optional
        Columns that make up a row; default every column of ``original`` (attributes
        and class).

    Returns
    -------
    float
        ``|{distinct original rows r : r occurs in the surrogate}| / |{distinct original
        rows}|`` (Sec. 6.2). 0 means no original row survives; 1 means all do.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"a": [1, 2, 3], "y": [0, 0, 0]})
    >>> intact_row_proportion(t, t.iloc[::-1])
    1.0
    """
    orig = table_source(original, "original")
    surr = table_source(surrogate, "surrogate")
    cols = list(orig.columns) if columns is None else [str(c) for c in columns]
    if not cols:
        raise ParameterError("Invalid columns: []. Must name at least one column.")
    orig.require(cols, "original table")
    surr.require(cols, "surrogate")
    if orig.num_rows == 0:
        raise DataError("The original table is empty (0 rows).")
    h = row_hashes(orig, cols)
    return float(_share_found(h[_first_rows(h)], row_hashes(surr, cols)))


# --------------------------------------------------------------- expected P_anon

def _log_comb(a: np.ndarray, b: np.ndarray, log_factorial: np.ndarray) -> np.ndarray:
    """log C(a, b) elementwise for integer arrays (-inf where b < 0 or b > a), from a
    table of ``gammaln(i + 1)``: the values ``gammaln`` gives on the same integers, at a
    lookup's cost (the chain's batches hold millions of entries)."""
    a, b = np.broadcast_arrays(a, b)
    ok = (b >= 0) & (b <= a)
    out = np.full(a.shape, -np.inf)
    aa, bb = a[ok], b[ok]
    out[ok] = log_factorial[aa] - log_factorial[bb] - log_factorial[aa - bb]
    return out


def _all_ones(sizes: np.ndarray, n_groups: int) -> np.ndarray:
    """The probability of an all-ones row per class size, computed exactly as the
    general path computes it for such a row (same operations, same order)."""
    m = np.ones((sizes.shape[0], n_groups), dtype=np.int64)
    return np.prod((m / sizes[:, None])[:, 1:], axis=1)


def _p_match_chain(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Exact P(J_1 ∩ ... ∩ J_G ≠ ∅) for rows with m[:, 0] <= EXACT_CAP (m sorted)."""
    from scipy.special import gammaln

    r, g_count = m.shape
    out = np.empty(r)
    n = np.asarray(n, dtype=np.int64)
    log_factorial = gammaln(np.arange(int(n.max(initial=0)) + 1, dtype=float) + 1)
    batch = max(1, 2_000_000 // (EXACT_CAP + 1) ** 2)
    for lo in range(0, r, batch):
        mb, nb = m[lo:lo + batch], n[lo:lo + batch, None, None]
        size = int(mb[:, 0].max()) + 1
        s = np.arange(size)[None, :, None]
        t = np.arange(size)[None, None, :]
        p = np.zeros((mb.shape[0], size))
        p[np.arange(mb.shape[0]), mb[:, 0]] = 1.0  # |J_1| = m_1 for sure
        for g in range(1, g_count):
            mg = mb[:, g][:, None, None]
            # Hypergeometric: |I ∩ J_g| = t given |I| = s, J_g a random m_g-subset.
            logt = (_log_comb(s, t, log_factorial) + _log_comb(nb - s, mg - t, log_factorial)
                    - _log_comb(nb, mg, log_factorial))
            p = np.einsum("rs,rst->rt", p, np.exp(logt))
        out[lo:lo + batch] = 1.0 - p[:, 0]
    return np.clip(out, 0.0, 1.0)


def match_probabilities(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """P(some surrogate row equals an original row) from its group counts.

    Parameters
    ----------
    m : ndarray of shape (n_rows, G)
        ``m[i, g]``: rows of row i's class whose group-g values equal row i's.
    n : ndarray of shape (n_rows,)
        Size n_c of row i's class.

    Notes
    -----
    Surrogate row j equals row i iff, for every group g, pi_g(j) lands in the m_g rows
    that share row i's group-g values, i.e. j ∈ J_g = pi_g^{-1}(that set). The J_g are
    independent uniform random m_g-subsets of the class, so the probability is
    P(J_1 ∩ ... ∩ J_G ≠ ∅), computed exactly by the hypergeometric chain over |J_1 ∩ ...
    ∩ J_g| when the smallest m_g is at most ``EXACT_CAP`` (with smallest m_g = 1 it
    reduces to the product of m_g / n_c over the other groups; with all m_g = 1 to
    n_c^-(G-1)). Beyond the cap the Poisson approximation 1 - exp(-mu) with
    mu = n_c * prod_g(m_g / n_c) is used.
    """
    m = np.asarray(m)
    return _match_probabilities(lambda lo, hi: m[lo:hi], m.shape, n)


#: Rows per block in :func:`_match_probabilities` (bounds its int64/float temporaries).
_PROB_ROWS = 1 << 18


def _match_probabilities(rows_of: Callable[[int, int], np.ndarray], shape: tuple[int, int],
                         n: np.ndarray, presorted: bool = False) -> np.ndarray:
    """:func:`match_probabilities` of the ``shape`` matrix whose rows ``lo:hi`` are
    ``rows_of(lo, hi)``, in blocks of :data:`_PROB_ROWS` rows (``presorted``: each row
    comes sorted ascending as int64, so the sort is skipped).

    Every value is computed as by one call on the whole matrix (row-wise products; the
    exact chain gets all its rows in one call, in order), so blocking changes no bit.
    """
    n_rows, n_groups = shape
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(n_rows)
    if n_groups == 1:
        out[:] = 1.0
        return out
    chain_rows, chain_m = [], []
    for lo in range(0, n_rows, _PROB_ROWS):
        hi = min(n_rows, lo + _PROB_ROWS)
        raw = rows_of(lo, hi)
        nb, ob = n[lo:hi], out[lo:hi]
        ones = raw.max(axis=1) == 1
        if ones.any():  # every group value unique in its class: n_c^-(G-1), once per n_c
            sizes, where = np.unique(nb[ones], return_inverse=True)
            ob[ones] = _all_ones(sizes, n_groups)[where]
            if ones.all():
                continue
        m = raw if presorted else np.sort(np.asarray(raw, dtype=np.int64), axis=1)
        if ones.any():
            m, nb, sub = m[~ones], nb[~ones], np.flatnonzero(~ones)
        else:
            sub = None
        ob = np.empty(m.shape[0]) if sub is not None else ob
        frac = m / nb[:, None]
        single = m[:, 0] == 1
        ob[single] = np.prod(frac[single, 1:], axis=1)
        chain = ~single & (m[:, 0] <= EXACT_CAP)
        if chain.any():
            chain_at = np.flatnonzero(chain)
            chain_rows.append(lo + (chain_at if sub is None else sub[chain_at]))
            chain_m.append(m[chain])
        big = ~single & ~chain
        if big.any():
            mu = nb[big] * np.prod(frac[big], axis=1)
            ob[big] = -np.expm1(-mu)
        if sub is not None:
            out[lo + sub[~chain]] = ob[~chain]
    if chain_rows:
        rows = np.concatenate(chain_rows)
        out[rows] = _p_match_chain(np.concatenate(chain_m), n[rows])
    return out


def _group_counts(src: TableSource, grouping: Grouping, class_hash: np.ndarray,
                  rows: np.ndarray) -> np.ndarray:
    """``(len(rows), G)``: for each of ``rows``, the same-class rows sharing its group values.

    Kept only for the representative rows and as uint32, to bound memory on big tables.
    """
    out = np.empty((rows.shape[0], grouping.k), dtype=np.uint32)
    for g, cols in enumerate(grouping.groups):
        key = row_hashes(src, cols)
        key ^= class_hash
        out[:, g] = _key_counts(splitmix(key, out=key))[rows]
    return out


def _class_hash_and_sizes(src: TableSource, target: str) -> tuple[np.ndarray, np.ndarray]:
    h = row_hashes(src, [target])
    return _class_hash_and_sizes_of(h)


def _class_hash_and_sizes_of(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # h: row hashes of the class column; returns a salted class key and class sizes.
    return splitmix(h + _U64(1)), _key_counts(h)


def prepared_source(table: Any, grouping_or_artefact: Any, target: str | None
             ) -> tuple[TableSource, Grouping, str, Any]:
    grouping, target, artefact = resolve_grouping(grouping_or_artefact, target)
    src = table_source(table, "table")
    if artefact is not None and src.table is not None:
        artefact.check_table(src.table)
    src.require([target], "table")
    grouping.check_partition_of([c for c in src.columns if c != target])
    if src.num_rows == 0:
        raise DataError("The table is empty (0 rows).")
    return src, grouping, target, artefact


def expected_intact_row_proportion(table: Any, grouping: Any, target: str | None = None
                                   ) -> float:
    """Expected P_anon of a GoldenEye surrogate of ``table``, before shuffling.

    Parameters
    ----------
    table : DataFrame, pyarrow.Table or Parquet/CSV path
        The table to be shuffled.
    grouping : GroupingArtefact, Grouping, str or list of lists
        The grouping (an artefact supplies ``target``).
    target : str, optional
        The class column.

    Returns
    -------
    float
        The mean, over the distinct rows r of ``table``, of P(r occurs in the surrogate),
        which is the expectation of :func:`intact_row_proportion`.

    Notes
    -----
    With G groups and a row whose group values are each unique in its class of n_c rows,
    the probability is exactly n_c^-(G-1). Duplicated group values raise it; the exact
    probability is P(J_1 ∩ ... ∩ J_G ≠ ∅) for independent uniform random subsets of the
    class with the sizes m_g of the duplicate sets (see :func:`match_probabilities`).
    A one-group grouping gives 1: the surrogate protects nothing.
    """
    src, grouping, target, _ = prepared_source(table, grouping, target)
    if grouping.k == 1:
        return 1.0
    class_hash, sizes = _class_hash_and_sizes(src, target)
    first = _first_rows(row_hashes(src, [*grouping.columns, target]))
    counts = _group_counts(src, grouping, class_hash, first)
    return float(match_probabilities(counts, sizes[first]).mean())


def largest_group_unique_share(table: Any, grouping: Any, target: str | None = None
                               ) -> float:
    """Share of rows whose values on the largest group's columns are unique in the table.

    GoldenEye keeps each group's columns together and with their class, so a row whose
    largest-group values are unique can be linked back by anyone who knows those values,
    revealing its class, however small P_anon is. The largest group is the one with the
    most columns (the first such in the grouping's order).

    Parameters
    ----------
    table : DataFrame, pyarrow.Table or Parquet/CSV path
    grouping : GroupingArtefact, Grouping, str or list of lists
    target : str, optional
        Only used to validate the grouping against the table's attributes.

    Returns
    -------
    float
        ``|{i : no other row has row i's values on the largest group}| / n_rows``.
    """
    if target is None and not hasattr(grouping, "target"):
        resolved = as_grouping(grouping)
        src = table_source(table, "table")
        src.require(list(resolved.columns), "table")
        if src.num_rows == 0:
            raise DataError("The table is empty (0 rows).")
    else:
        src, resolved, _, _ = prepared_source(table, grouping, target)
    largest = max(resolved.groups, key=len)
    return float(np.mean(_key_counts(row_hashes(src, largest)) == 1))


def privacy_metrics(src: TableSource, surrogate: Any, grouping: Grouping, target: str
                     ) -> tuple[float, float, float]:
    """``(intact, expected, unique share)`` as the three public functions give them.

    One pass over the columns instead of one per metric: each column of either table is
    read once (Parquet strings dictionary-encoded, never one string per row) and hashed
    block by block (:class:`_Column`); its codes are counted where that is exact and
    cheap (:func:`_coded_counts`: ``np.bincount``, no hash table, no sort), other groups
    count their hashes. Groups are handled on :func:`~astrid_airflow.engine.n_threads`
    threads (Arrow reads, numpy, ``bincount`` and sorts free the GIL), at most that many
    at a time, and their counts are taken in order. The row keys are sums over the groups
    (:func:`_accumulate`, both sides alike), so each thread adds the groups it handles to
    its own sums and the total does not depend on the thread count; they group rows as
    the chained column hashes of :func:`row_hashes` do, which changes no count.
    """
    import threading

    surr = table_source(surrogate, "surrogate")
    surr.require([*grouping.columns, target], "surrogate")
    n, k = src.num_rows, grouping.k
    largest = grouping.groups.index(max(grouping.groups, key=len))
    cls = _read_column(src, target, codes=True)
    classes, n_classes = cls.codes, cls.levels
    if classes is None:
        classes, uniques = pd.factorize(cls.hashes())
        n_classes = len(uniques)
    class_sizes = np.bincount(classes, minlength=n_classes)
    lock = threading.Lock()
    salt: list[np.ndarray] = []
    sums: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    scratch = _Scratch()

    def salted() -> np.ndarray:  # the class salt of hashed group keys, made once
        with lock:
            if not salt:
                salt.append(splitmix(cls.hashes() + _U64(1)))
            return salt[0]

    def group(g: int) -> tuple[np.ndarray | None, float | None]:
        with lock:  # this thread's row-key sums
            me = threading.get_ident()
            if me not in sums:
                sums[me] = np.zeros(n, dtype=_U64), np.zeros(surr.num_rows, dtype=_U64)
            key, key_s = sums[me]
        col = _read_group(src, grouping.groups[g], codes=True, scratch=scratch)
        share, with_class = g == largest, k > 1
        counted = None if col.codes is None else \
            _coded_counts(col.codes, col.levels, classes, n_classes, share, with_class)
        col.codes = None
        if counted is None:
            counted = _hashed_counts(col.hashes(scratch.get("hashes", n, _U64)), salted,
                                     share, with_class, scratch)
        _accumulate(key, col.blocks(), g)
        del col
        _accumulate(key_s, _read_group(surr, grouping.groups[g], codes=False).blocks(), g)
        return counted

    counts: list[np.ndarray | None] = [None] * k
    share = 0.0
    for g, (c, g_share) in enumerate(_in_order(group, range(k))):
        counts[g] = c
        share = g_share if g_share is not None else share
    (key, key_s), *others = sums.values()
    for other, other_s in others:
        key += other
        key_s += other_s
    del others, salt[:]
    sums.clear()
    scratch.release()
    _accumulate(key, cls.blocks(), k)
    _accumulate(key_s, _read_column(surr, target, codes=False).blocks(), k)
    # Rows distinct on some group (with their class) are distinct: no duplicate rows.
    distinct = share == 1.0 or (k > 1 and any(c is None for c in counts))
    first = None if distinct else _first_rows(key)
    intact = float(_share_found(key if first is None else key[first], key_s))
    del key, key_s
    if k == 1:
        return intact, 1.0, share
    return intact, _expected(counts, k, first, classes, class_sizes), share


#: Folding multiplier (odd: a bijection of uint64) and the group hashes' seed.
_FOLD = _U64(0xD6E8FEB86659FD93)
_SEED = _U64(0x243F6A8885A308D3)


def _fold(key: np.ndarray, h: np.ndarray) -> None:
    """``key = (key ^ h) * _FOLD`` in place (a group's hash, column after column): two
    passes where a SplitMix64 chain step costs ten. Bijective in ``h`` for a fixed
    ``key`` and vice versa, and not symmetric, so rows differing anywhere get keys equal
    with probability ~2^-64 (the value hashes are well mixed)."""
    for lo in range(0, key.shape[0], _BLOCK):  # both steps on a cached block
        k = key[lo:lo + _BLOCK]
        np.bitwise_xor(k, h if np.ndim(h) == 0 else h[lo:lo + _BLOCK], out=k)
        np.multiply(k, _FOLD, out=k)


def _accumulate(key: np.ndarray, blocks: Iterator[tuple[int, np.ndarray]], g: int) -> None:
    """``key += (h ^ salt_g) * mul_g`` for the hashes ``h`` of group ``g`` (the class:
    ``g = G``), block by block (mod 2^64).

    A sum commutes, so groups may be added in any order by any thread. The salt and the
    odd multiplier differ between groups (values swapped between two groups change the
    key), and each term is a bijection of ``h``: rows differing in some group get equal
    keys with probability ~2^-64, as with a chained hash.
    """
    salt, mul = splitmix(np.array([2 * g, 2 * g + 1], dtype=_U64) + _SEED)
    mul |= _U64(1)
    tmp = np.empty(_BLOCK, dtype=_U64)
    for lo, z in blocks:
        t = tmp[:z.shape[0]]
        np.bitwise_xor(z, salt, out=t)
        np.multiply(t, mul, out=t)
        part = key[lo:lo + z.shape[0]]
        np.add(part, t, out=part)


def _read_column(source: TableSource, name: str, codes: bool,
                 scratch: _Scratch | None = None) -> _Column:
    col = _Column(source.column(name, dictionary=True), codes, scratch)
    if col.n != source.num_rows:
        raise DataError(f"Column {name!r} has {col.n} values for {source.num_rows} rows.")
    return col


def _read_group(source: TableSource, columns: Sequence[str], codes: bool,
                scratch: _Scratch | None = None) -> _Column:
    """A group as one column: a single column as read (its codes in ``scratch``);
    several, their hashes folded (from the seed) and their codes combined in mixed radix
    while the product of their levels stays below :func:`_code_cap`."""
    if len(columns) == 1:
        return _read_column(source, columns[0], codes, scratch)
    n = source.num_rows
    h = np.full(n, _SEED, dtype=_U64)
    code, levels = None, 1
    for i, c in enumerate(columns):
        col = _read_column(source, c, codes)
        for lo, z in col.blocks():
            _fold(h[lo:lo + z.shape[0]], z)
        if i == 0:
            code, levels = col.codes, col.levels
        elif code is not None and col.codes is not None and levels * col.levels <= _code_cap(n):
            code = code * col.levels + col.codes
            levels *= col.levels
        else:
            code = None
    return _Column.of_hashes(h, code, levels)


def _in_order(fn: Callable[[Any], Any], items: Sequence[Any]) -> Any:
    """Yield ``fn(x)`` for ``x`` in ``items`` in order, computed on
    :func:`~astrid_airflow.engine.n_threads` threads at most that many ahead (so at
    most that many results are alive besides the one being consumed)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from astrid_airflow.engine import n_threads

    workers = min(n_threads(), len(items))
    if workers <= 1:
        for x in items:
            yield fn(x)
        return
    pool = ThreadPoolExecutor(workers)
    pending: deque = deque()
    try:
        for x in items:
            pending.append(pool.submit(fn, x))
            if len(pending) == workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


#: Below this, a product of n_c^-(G-1) could lose bits: the general path instead.
_TINY = 1e-280


def _expected(counts: list[np.ndarray | None], k: int, first: np.ndarray | None,
              classes: np.ndarray, class_sizes: np.ndarray) -> float:
    """Mean match probability over the distinct rows (``first``; None: every row).

    A row with some group count of 1 (every row, when some group is all distinct)
    matches with probability ``prod_g m_g / n_c^(G-1)``: the all-ones value of
    :func:`_match_probabilities` for its class, times its counts, in a few passes over
    columns instead of a per-row sort (equal to the general path within a few ulps).
    Other rows go through :func:`_match_probabilities` as before, bit for bit.
    """
    at = (lambda a: a) if first is None else (lambda a: a[first])
    present = class_sizes > 0
    ones = np.zeros(class_sizes.shape[0])
    ones[present] = _all_ones(class_sizes[present], k)
    kept = [c for c in counts if c is not None]
    rows = np.arange(classes.shape[0]) if first is None else first
    if ones[present].min() < _TINY:
        return float(_general_probabilities(kept, k, rows, class_sizes[at(classes)]).mean())
    probs = ones[at(classes)]
    low = None
    for c in kept:
        cf = at(c)
        probs *= cf
        if len(kept) == k:  # no all-distinct group: track each row's smallest count
            low = cf.copy() if low is None else np.minimum(low, cf, out=low)
    if low is not None:
        rest = np.flatnonzero(low > 1)
        if rest.shape[0]:
            probs[rest] = _general_probabilities(
                kept, k, rows[rest], class_sizes[classes[rows[rest]]])
    return float(probs.mean())


def _general_probabilities(kept: list[np.ndarray], k: int, rows: np.ndarray,
                           sizes: np.ndarray) -> np.ndarray:
    """:func:`match_probabilities` of ``rows`` from the counts of the ``kept`` groups
    (the other ``k - len(kept)`` groups count 1 everywhere)."""

    def rows_of(lo: int, hi: int) -> np.ndarray:
        # Sorted rows built cheaply: all-distinct groups give leading ones, and only the
        # other groups' counts need sorting (the same rows the general path sorts).
        m = np.ones((hi - lo, k), dtype=np.int64)
        if kept:
            rest = np.empty((hi - lo, len(kept)), dtype=np.int64)
            for j, c in enumerate(kept):
                rest[:, j] = c[rows[lo:hi]]
            rest.sort(axis=1)
            m[:, k - len(kept):] = rest
        return m

    return _match_probabilities(rows_of, (rows.shape[0], k), sizes, presorted=True)
