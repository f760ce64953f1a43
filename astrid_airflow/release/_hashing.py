"""64-bit row hashes and column coding for the privacy metrics.

:func:`splitmix` and the per-value hashes of Arrow arrays (canonical forms, so equal
values hash equally across containers and CSV round trips), :func:`row_hashes` (chained
column hashes of a table's rows), and the one-pass reading of
:func:`~._metrics.privacy_metrics`: :class:`_Column` (a column's hashes made block by
block, and integer codes when they come cheap), :func:`read_column`, :func:`read_group`
(a group's columns as one), the order-free row keys of :func:`accumulate`, and the
per-thread buffers of :class:`Scratch`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError

from ._table_source import TableSource, is_stringy, table_source

U64 = np.uint64
_NULL_HASH = U64(0x5BD1E9955BD1E995)


def splitmix(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """SplitMix64 finaliser: a bijective, well-mixed map of uint64 (wraps by design).

    In place when ``out`` is given (``out=x`` overwrites ``x``). Long arrays are mixed
    in blocks of :data:`BLOCK` values with one cached scratch block: the six steps then
    run in cache (faster than whole-array passes), same bits.
    """
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype == U64 \
            and x.shape[0] > BLOCK and (out is None or (
                isinstance(out, np.ndarray) and out.dtype == U64 and out.shape == x.shape)):
        out = np.empty_like(x) if out is None else out
        tmp = np.empty(BLOCK, dtype=U64)
        for lo in range(0, x.shape[0], BLOCK):
            _splitmix_block(x[lo:lo + BLOCK], out[lo:lo + BLOCK], tmp)
        return out
    z = np.add(x, U64(0x9E3779B97F4A7C15), out=out)
    z ^= z >> U64(30)
    z *= U64(0xBF58476D1CE4E5B9)
    z ^= z >> U64(27)
    z *= U64(0x94D049BB133111EB)
    z ^= z >> U64(31)
    return z


#: Values per block of the blocked hashing passes (512 KiB of uint64: cache-resident).
BLOCK = 1 << 16


def _splitmix_block(x: np.ndarray, z: np.ndarray, tmp: np.ndarray) -> None:
    # splitmix(x, out=z) for one block, shifts into the scratch ``tmp`` (no allocation).
    t = tmp[:z.shape[0]]
    np.add(x, U64(0x9E3779B97F4A7C15), out=z)
    for shift, mul in ((30, U64(0xBF58476D1CE4E5B9)), (27, U64(0x94D049BB133111EB)),
                       (31, None)):
        np.right_shift(z, U64(shift), out=t)
        np.bitwise_xor(z, t, out=z)
        if mul is not None:
            np.multiply(z, mul, out=z)


def _hash_strings(values: Any) -> np.ndarray:
    """Hashes of a (small) Arrow array of distinct strings/binaries; null hashes as ''."""
    objs = np.asarray(values.to_pylist(), dtype=object)
    objs[pd.isna(objs)] = ""
    return pd.util.hash_array(objs).astype(U64, copy=False)


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
        out = values[idx] if len(values) else np.zeros(len(arr), U64)
        if arr.null_count:
            fill = _hash_strings(pa.array([""]))[0] if is_stringy(typ.value_type) \
                else _NULL_HASH
            out[arr.is_null().to_numpy(zero_copy_only=False)] = fill
        return out
    if is_stringy(typ):
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
        if pa.types.is_integer(num.type):
            return _hash_integers(num)
        return _hash_floats(*_float_values(num))
    if pa.types.is_null(typ):
        return np.full(len(arr), _NULL_HASH, dtype=U64)
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


#: The largest magnitude below which every integer is exactly a float64.
_EXACT_FLOAT_INT = 2 ** 53
_WIDE_INT_SALT = U64(0xA0761D6478BD642F)


def _wider_than_floats(arr: Any) -> bool:
    """Whether integer ``arr`` (an Arrow array or chunked array) holds a value that a
    float64 may not represent exactly (beyond +-2^53)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_integer(arr.type) or len(arr) == arr.null_count:
        return False
    bounds = pc.min_max(arr)
    return int(bounds["max"].as_py()) > _EXACT_FLOAT_INT or \
        int(bounds["min"].as_py()) < -_EXACT_FLOAT_INT


def _hash_integers(arr: Any) -> np.ndarray:
    """Hashes of an Arrow integer array of any width (uint64, int64 near 2^63).

    An integer that is exactly a float64 hashes as that float (``1 == 1.0``); one that
    no float equals hashes by its own bits, so two distinct integers never merge through
    rounding (two IDs would otherwise count as one value).
    """
    if not _wider_than_floats(arr):
        return _hash_floats(*_float_values(arr))
    ints = arr.fill_null(0).to_numpy(zero_copy_only=False)
    missing = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    floats = ints.astype(np.float64)
    exact = np.zeros(len(ints), dtype=bool)
    # a float is cast back only where the cast is defined (below 2^63, or 2^64 unsigned)
    limit, back = (2.0 ** 64, U64) if ints.dtype.kind == "u" else (2.0 ** 63, np.int64)
    ok = floats < limit
    exact[ok] = floats[ok].astype(back) == ints[ok]
    out = _hash_floats(floats, missing)
    wide = ~exact if missing is None else ~exact & ~missing
    if wide.any():
        bits = ints[wide].astype(back, copy=False).view(U64)
        out[wide] = splitmix(splitmix(bits) ^ _WIDE_INT_SALT)
    return out


def _hash_floats(vals: np.ndarray, missing: np.ndarray | None) -> np.ndarray:
    """The hashes of float64 ``vals`` (read-only is fine), -0.0 as 0.0 and missing
    values alike; block by block, in cache."""
    n = vals.shape[0]
    out = np.empty(n, dtype=U64)
    canonical = out.view(np.float64)
    tmp = np.empty(min(n, BLOCK), dtype=U64)
    for lo in range(0, n, BLOCK):
        block = slice(lo, lo + BLOCK)
        np.add(vals[block], 0.0, out=canonical[block])  # -0.0 -> 0.0
        _splitmix_block(out[block], out[block], tmp)
    if missing is not None and missing.any():
        out[missing] = _NULL_HASH
    return out


def _column_hash(column: Any) -> np.ndarray:
    column = _chunked(column)
    if column.num_chunks == 0:
        return np.zeros(0, dtype=U64)
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


def code_cap(n: int) -> int:
    # Most codes a column or group may span to be counted by np.bincount (8 bytes each).
    return max(2 * n, 1 << 16)


class Scratch:
    """Buffers reused from one group to the next, per thread, during one metrics pass:
    on large tables a fresh array costs more in page faults than the pass that fills
    it."""

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


def empty(scratch: Scratch | None, name: str, n: int, dtype: Any) -> np.ndarray:
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

    def __init__(self, column: Any, codes: bool, scratch: Scratch | None = None):
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
        if pa.types.is_dictionary(column.type) or is_stringy(column.type):
            self._dictionary(column, codes, scratch)
            return
        num = _numeric(column)
        if num is None or _wider_than_floats(num):  # the null type, text, wide integers
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
                                   lambda: empty(scratch, "codes", self.n, np.intp))
            self.codes, self.levels = coded or (None, 0)

    @classmethod
    def of_hashes(cls, hashes: np.ndarray, codes: np.ndarray | None, levels: int
                  ) -> _Column:
        self = cls.__new__(cls)
        self.n, self.codes, self.levels = hashes.shape[0], codes, levels
        self._parts = [("hashes", hashes, None)]
        return self

    def _dictionary(self, column: Any, codes: bool, scratch: Scratch | None) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if not pa.types.is_dictionary(column.type):
            column = pc.dictionary_encode(column)
        column = column.unify_dictionaries()  # one dictionary, indices valid in every chunk
        null = _hash_strings(pa.array([""]))[0] if is_stringy(column.type.value_type) \
            else _NULL_HASH  # as _hash_array hashes a missing value
        table = np.append(_hash_array(column.chunk(0).dictionary), null)
        if codes:
            # Dictionary entries with equal hashes get one code (the null slot if used).
            canon, uniques = pd.factorize(table if column.null_count else table[:-1])
            self.codes = empty(scratch, "codes", self.n, np.intp)
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
        :data:`BLOCK` rows; a block is scratch, valid until the next one."""
        out = np.empty(min(self.n, BLOCK), dtype=U64)
        tmp = np.empty_like(out)
        at = 0
        for kind, values, extra in self._parts:
            m = values.shape[0]
            for lo in range(0, m, BLOCK):
                hi = min(m, lo + BLOCK)
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
        out = np.empty(self.n, dtype=U64) if out is None else out
        for lo, z in self.blocks():
            out[lo:lo + z.shape[0]] = z
        self._parts = [("hashes", out, None)]
        return out


def _integer_codes(parts: list[tuple[np.ndarray, np.ndarray | None]], n: int,
                   integral: bool, empty: Callable[[], np.ndarray]
                   ) -> tuple[np.ndarray, int] | None:
    """``(value - minimum, levels)`` of float64 ``parts`` (values, missing mask) when
    every present value is an integer and they span less than :func:`code_cap`
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
    if not hi - lo < code_cap(n):  # also NaN-safe: inf spans fail
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
    h = np.full(src.num_rows, U64(0x243F6A8885A308D3), dtype=U64)
    for c in columns:
        hc = _column_hash(src.column(c))
        if hc.shape[0] != h.shape[0]:
            raise DataError(f"Column {c!r} has {hc.shape[0]} values for {h.shape[0]} rows.")
        h ^= hc
        splitmix(h, out=h)
    return h




#: Folding multiplier (odd: a bijection of uint64) and the group hashes' seed.
_FOLD = U64(0xD6E8FEB86659FD93)
_SEED = U64(0x243F6A8885A308D3)


def _fold(key: np.ndarray, h: np.ndarray) -> None:
    """``key = (key ^ h) * _FOLD`` in place (a group's hash, column after column): two
    passes where a SplitMix64 chain step costs ten. Bijective in ``h`` for a fixed
    ``key`` and vice versa, and not symmetric, so rows differing anywhere get keys equal
    with probability ~2^-64 (the value hashes are well mixed)."""
    for lo in range(0, key.shape[0], BLOCK):  # both steps on a cached block
        k = key[lo:lo + BLOCK]
        np.bitwise_xor(k, h if np.ndim(h) == 0 else h[lo:lo + BLOCK], out=k)
        np.multiply(k, _FOLD, out=k)


def accumulate(key: np.ndarray, blocks: Iterator[tuple[int, np.ndarray]], g: int) -> None:
    """``key += (h ^ salt_g) * mul_g`` for the hashes ``h`` of group ``g`` (the class:
    ``g = G``), block by block (mod 2^64).

    A sum commutes, so groups may be added in any order by any thread. The salt and the
    odd multiplier differ between groups (values swapped between two groups change the
    key), and each term is a bijection of ``h``: rows differing in some group get equal
    keys with probability ~2^-64, as with a chained hash.
    """
    salt, mul = splitmix(np.array([2 * g, 2 * g + 1], dtype=U64) + _SEED)
    mul |= U64(1)
    tmp = np.empty(BLOCK, dtype=U64)
    for lo, z in blocks:
        t = tmp[:z.shape[0]]
        np.bitwise_xor(z, salt, out=t)
        np.multiply(t, mul, out=t)
        part = key[lo:lo + z.shape[0]]
        np.add(part, t, out=part)


def read_column(source: TableSource, name: str, codes: bool,
                 scratch: Scratch | None = None) -> _Column:
    col = _Column(source.column(name, dictionary=True), codes, scratch)
    if col.n != source.num_rows:
        raise DataError(f"Column {name!r} has {col.n} values for {source.num_rows} rows.")
    return col


def read_group(source: TableSource, columns: Sequence[str], codes: bool,
                scratch: Scratch | None = None) -> _Column:
    """A group as one column: a single column as read (its codes in ``scratch``);
    several, their hashes folded (from the seed) and their codes combined in mixed radix
    while the product of their levels stays below :func:`code_cap`."""
    if len(columns) == 1:
        return read_column(source, columns[0], codes, scratch)
    n = source.num_rows
    h = np.full(n, _SEED, dtype=U64)
    code, levels = None, 1
    for i, c in enumerate(columns):
        col = read_column(source, c, codes)
        for lo, z in col.blocks():
            _fold(h[lo:lo + z.shape[0]], z)
        if i == 0:
            code, levels = col.codes, col.levels
        elif code is not None and col.codes is not None and levels * col.levels <= code_cap(n):
            code = code * col.levels + col.codes
            levels *= col.levels
        else:
            code = None
    return _Column.of_hashes(h, code, levels)
