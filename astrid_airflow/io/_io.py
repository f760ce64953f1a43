"""Reading tables (DataFrame, CSV, Parquet, ARFF) and checking them for ASTRID."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, os_error_message, short_list

from ._jsonable import native
from ._sql import is_sql_url
from ._tablefile import TableFile

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".arff": "arff"}


def input_format(path: str | os.PathLike) -> str:
    """``"csv"``, ``"parquet"`` or ``"arff"`` from the suffix of an input file.

    Every command that reads a table accepts exactly these (``DataError`` otherwise).
    """
    text = os.fspath(path)
    kind = _SUFFIXES.get(Path(text.split("?")[0]).suffix.lower())
    if kind is None:
        raise DataError(f"Unreadable file {text!r}: expected a .csv, .parquet or .arff file.")
    return kind


def read_arrow(source: str | os.PathLike | TableFile, columns: Sequence[str] | None = None, *,
               kind: str | None = None) -> Any:
    """Read a CSV, Parquet or ARFF file (local or fsspec URL) as a pyarrow Table.

    This is the one file reader: :func:`read_table` (learn, test, validate, fuse) is this
    table converted to pandas, and ``shuffle_file`` and the metrics use it directly, so
    every command sees the same columns with the same types.

    Parameters
    ----------
    source : str or path-like
        The file.
    columns : sequence of str, optional
        Read only these columns.
    kind : {"csv", "parquet", "arff"}, optional
        Format, when the file's suffix does not tell (temporary files).

    Notes
    -----
    CSV values are typed as pandas would type them: numbers, booleans, and text; date
    and time values stay text (pandas does not parse them either, and a surrogate then
    carries the exact text of its input, time zone included). Empty string fields are
    missing. Duplicated column names and infinite numbers are refused (``DataError``).
    """
    if isinstance(source, TableFile):  # a temporary file: its format is given
        source, kind = source.path, kind or source.kind
    text = os.fspath(source)
    kind = kind or input_format(text)
    cols = None if columns is None else list(columns)
    check_regular_file(text)
    with _read_errors(text):
        if kind == "csv":
            table = _read_csv_arrow(text, cols)
        elif kind == "parquet":
            import pyarrow.parquet as pq

            fs, inner = filesystem(text)
            with (fs.open(inner, "rb") if fs is not None else open(inner, "rb")) as fh:
                meta = pq.read_metadata(fh)
                names = meta.schema.to_arrow_schema().names
                _check_unique_names(names, text)
                check_expansion(meta.num_rows * len(cols or names), fh.seek(0, os.SEEK_END),
                                text)
            table = pq.read_table(inner, columns=cols, filesystem=fs)
        else:
            import pyarrow as pa

            frame = _read_arff(text)
            table = pa.Table.from_pandas(frame if cols is None else frame[cols],
                                         preserve_index=False)
    check_finite(table, text)
    return table


#: A Parquet file may hold at most this many cells per byte on disk once past
#: ``EXPANSION_FLOOR`` cells (ASTRID_MAX_CELLS_PER_BYTE overrides it): a few kilobytes
#: of run-length pages can claim 10^9 rows and exhaust memory when read. pyarrow's own
#: writer reaches about 250 cells per byte on an all-constant column; a random table
#: of floats, integers and text about 0.4 (tests/io/test_decompression_bound.py).
MAX_CELLS_PER_BYTE = 1000
EXPANSION_FLOOR = 100_000_000


def check_expansion(cells: int, size: int, shown: str) -> None:
    """Refuse (``DataError``, before reading) a file whose ``cells`` (rows times columns
    read) exceed both ``EXPANSION_FLOOR`` and ``MAX_CELLS_PER_BYTE`` per byte of its
    ``size``: a decompression bomb, or a table to read in parts."""
    limit = MAX_CELLS_PER_BYTE
    env = os.environ.get("ASTRID_MAX_CELLS_PER_BYTE")
    if env:
        try:
            limit = float(env)
        except ValueError:
            raise DataError(f"Invalid $ASTRID_MAX_CELLS_PER_BYTE {env[:20]!r}: expected a "
                            "number.") from None
    if cells > EXPANSION_FLOOR and cells > limit * max(int(size), 1):
        raise DataError(
            f"Refusing {shown!r}: it claims {cells:,} cells in {int(size):,} bytes, more "
            f"than {limit:g} per byte (a decompression bomb?); nothing was read. Raise "
            "$ASTRID_MAX_CELLS_PER_BYTE if the file is genuine.")


@contextlib.contextmanager
def _read_errors(text: str) -> Iterator[None]:
    """Every failure while reading file ``text`` becomes one ``DataError`` line."""
    try:
        yield
    except FileNotFoundError:
        raise DataError(f"Unreadable file {text!r}: no such file.") from None
    except IsADirectoryError:
        raise DataError(f"Unreadable file {text!r}: it is a directory.") from None
    except DataError:
        raise
    except OSError as exc:  # permission, symlink loop, I/O error (Arrow's IOError too)
        raise DataError(f"Unreadable file {text!r}: {os_error_message(exc)}") from None
    except Exception as exc:  # parsers raise many types; the user needs one line
        raise DataError(f"Unreadable file {text!r}: {type(exc).__name__}: "
                        f"{_first_line(exc)}") from None


def read_schema(source: str | os.PathLike, *, kind: str | None = None) -> Any:
    """The Arrow schema :func:`read_arrow` gives (a Parquet file's footer only)."""
    text = os.fspath(source)
    kind = kind or input_format(text)
    if kind != "parquet":
        return read_arrow(text, kind=kind).schema
    check_regular_file(text)
    import pyarrow.parquet as pq

    fs, inner = filesystem(text)
    with _read_errors(text):
        schema = pq.read_schema(inner, filesystem=fs)
    _check_unique_names(schema.names, text)
    return schema


def check_regular_file(path: str | os.PathLike, what: str = "Unreadable file") -> None:
    """Raise ``DataError`` if local ``path`` is a directory, pipe, socket or device.

    Reading a FIFO blocks forever and ``/dev/zero`` never ends: only regular files are
    inputs. A missing file passes (the open reports it); remote URLs are not checked.
    """
    import stat

    text = os.fspath(path)
    fs, inner = filesystem(text)
    if fs is not None:
        return
    try:
        mode = os.stat(inner).st_mode
    except OSError:  # missing, ELOOP...: the open says so
        return
    if stat.S_ISDIR(mode):
        raise DataError(f"{what} {text!r}: it is a directory.")
    if not stat.S_ISREG(mode):
        raise DataError(f"{what} {text!r}: not a regular file (a pipe, socket or device).")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def filesystem(path: str) -> tuple[Any, str]:
    """``(None, local path)`` or ``(fsspec filesystem, path inside it)``."""
    from ._fs import split_url

    fs, inner, local = split_url(path)
    return (None, inner) if local else (fs, inner)


def _read_csv_arrow(path: str, columns: list[str] | None) -> Any:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    fs, inner = filesystem(path)

    def open_() -> Any:
        return fs.open(inner, "rb") if fs is not None else open(inner, "rb")

    with open_() as fh:
        head = fh.read(1 << 20)
    if not head.removeprefix(b"\xef\xbb\xbf").strip():
        raise DataError(f"Unreadable file {path!r}: No columns to parse from file.")
    _check_unique_names(_csv_header_of(head), path)

    def parse(types: dict[str, Any]) -> Any:
        convert = pcsv.ConvertOptions(include_columns=columns, strings_can_be_null=True,
                                      column_types=types)
        with open_() as fh:  # streamed from the file: no second copy of its bytes
            return pcsv.read_csv(fh, convert_options=convert)

    table = parse({})
    binary = [f.name for f in table.schema if pa.types.is_binary(f.type)]
    if binary:  # Arrow keeps invalid UTF-8 as bytes; pandas refuses it: so do we
        raise DataError(f"Unreadable file {path!r}: column(s) {short_list(binary)} are not "
                        "UTF-8 text; save the file as UTF-8.")
    temporal = {f.name: pa.string() for f in table.schema if pa.types.is_temporal(f.type)}
    # Arrow infers dates/times (and turns "+02:00" into UTC); pandas keeps them as text.
    # Re-parse those columns as text so both sides, and the surrogate, keep the input.
    return parse(temporal) if temporal else table


def _csv_header_of(head: bytes) -> list[str]:
    import csv
    import io

    return next(csv.reader(io.StringIO(head.decode("utf-8-sig", errors="replace"))), [])


def check_finite(table: Any, shown: str = "the table") -> None:
    """Raise ``DataError`` if a numeric column of ``table`` holds ``inf`` or ``-inf``.

    Infinite values are refused wherever a table is read: no classifier, metric or
    expectation gives a meaningful answer on them (missing values are fine).
    """
    bad: dict[str, int] = {}
    if isinstance(table, pd.DataFrame):
        for i, c in enumerate(table.columns):
            col = table.iloc[:, i]  # by position: names may repeat (checked elsewhere)
            if pd.api.types.is_float_dtype(col.dtype):
                n = int(np.isinf(col.to_numpy(dtype=float, na_value=np.nan)).sum())
                if n:
                    bad[str(c)] = n
    else:
        import pyarrow as pa
        import pyarrow.compute as pc

        for f in table.schema:
            if pa.types.is_floating(f.type):
                n = int(pc.sum(pc.is_inf(table.column(f.name))).as_py() or 0)
                if n:
                    bad[f.name] = n
    if bad:
        where = shown if shown == "the table" else repr(shown)
        detail = ", ".join(f"{c!r}: {n}" for c, n in list(bad.items())[:10])
        raise DataError(f"Infinite values (inf/-inf) in {where}, column(s) {{{detail}}}"
                        f"{' …' if len(bad) > 10 else ''}: replace or drop them (missing "
                        "values are allowed).")


def read_table(source: pd.DataFrame | str | os.PathLike) -> pd.DataFrame:
    """Read a table from a DataFrame, CSV, Parquet or ARFF file (or fsspec URL).

    Files are read by :func:`read_arrow` (the one reader every command uses) and
    converted to pandas. Missing values stay missing (``NaN``/``<NA>``); nominal ARFF
    attributes become pandas categoricals with the declared categories; CSV dates and
    times stay text. A PostgreSQL URL with a table or a query
    (``postgresql://user@host/db?table=public.patients``) is read with
    :func:`~astrid_airflow.io._sql_read.read_sql` (typed, streamed in chunks). Infinite values
    are refused (``DataError``), in DataFrames too.
    """
    if isinstance(source, pd.DataFrame):
        check_finite(source)
        return source
    if isinstance(source, str) and is_sql_url(source):
        from ._sql_read import read_sql

        table = read_sql(source)
        check_finite(table, _sql_shown(source))
        return table
    if not isinstance(source, (str, os.PathLike)):
        raise DataError(f"Cannot read a table from {type(source).__name__}; "
                        "pass a DataFrame or a path to a CSV, Parquet or ARFF file.")
    path = os.fspath(source)
    if input_format(path) == "arff":  # read natively: keeps the declared categories
        check_regular_file(path)
        with _read_errors(path):
            frame = _read_arff(path)
        check_finite(frame, path)
        return frame
    # self_destruct: the Arrow buffers are freed while converting (no second full copy)
    return read_arrow(path).to_pandas(split_blocks=True, self_destruct=True)


def csv_floats_like(frame: pd.DataFrame, source: object, reference: pd.DataFrame
                    ) -> pd.DataFrame:
    """``frame`` read from ``source``, its whole-number columns typed as ``reference``'s.

    A CSV carries no types, and pyarrow writes the float 4.0 as ``4``: a float column
    that holds whole numbers reads back as integers. For a CSV ``source``, each integer
    column whose ``reference`` column is float is cast back (exact: the values were
    floats). Any other difference is left for the schema check to report. Without
    this, row hashes of ``4`` and ``4.0`` differ and every privacy measure comparing
    the two tables would see no row in common.
    """
    if isinstance(source, pd.DataFrame) or \
            Path(str(os.fspath(source)).split("?")[0]).suffix.lower() != ".csv":
        return frame
    cast = {c: reference[c].dtype for c in frame.columns
            if c in reference.columns and pd.api.types.is_integer_dtype(frame[c].dtype)
            and pd.api.types.is_float_dtype(reference[c].dtype)}
    return frame.astype(cast) if cast else frame


def suppressed_like(frame: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each column that is all missing in it *and* in ``reference``
    typed as ``reference``'s.

    A recipe that suppresses a whole column (a unique e-mail, a date stored as text)
    publishes a column with no value, and no file format keeps the type of a column
    with no value: a CSV reads it back as Arrow's null type, a Parquet dictionary as a
    categorical without categories. Both hold exactly the values of the reference's
    all-missing column (none), so giving them its type loses nothing and lets the
    schema and per-class checks compare like with like. A column with any value in
    either table is left for those checks to judge.
    """
    cast = [c for c in frame.columns if c in reference.columns
            and len(frame)
            and bool(frame[c].isna().all()) and bool(reference[c].isna().all())
            and frame[c].dtype != reference[c].dtype]
    if not cast:
        return frame
    out = frame.copy(deep=False)
    for c in cast:
        out[c] = pd.Series(reference[c].array[:0].take([-1] * len(frame), allow_fill=True),
                           index=frame.index, name=c)
    return out


def _sql_shown(url: str) -> str:
    return url.split("@", 1)[-1]  # no user or password in a message


def _check_unique_names(names: list[str], path: str) -> None:
    # pandas would rename a repeated header ('a2' -> 'a2.1') and Arrow fails with a dump
    seen, dup = set(), []
    for name in names:
        if name in seen and name not in dup:
            dup.append(name)
        seen.add(name)
    if dup:
        raise DataError(f"Unreadable file {path!r}: duplicated column name(s) "
                        f"{short_list(dup)}.")


def _read_arff(path: str) -> pd.DataFrame:
    import arff  # liac-arff
    import fsspec

    with fsspec.open(path, "r", encoding="utf-8", errors="replace") as fh:
        data = arff.load(fh)
    names = [a[0] for a in data["attributes"]]
    frame = pd.DataFrame(data["data"], columns=names)
    for name, kind in data["attributes"]:
        if isinstance(kind, list):
            frame[name] = pd.Categorical(frame[name], categories=kind)
        elif str(kind).upper() in {"REAL", "NUMERIC", "INTEGER"}:
            frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    return frame


def check_table(table: pd.DataFrame, target: str, *, min_rows_per_class: int = 1) -> None:
    """Raise ``DataError`` naming the problem if ``table`` cannot be analysed."""
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"Expected a pandas DataFrame, got {type(table).__name__}.")
    bad = [c for c in table.columns if not isinstance(c, str)]
    if bad:
        raise DataError(f"Column names must be strings; got {bad[:5]!r}.")
    dup = table.columns[table.columns.duplicated()].tolist()
    if dup:
        raise DataError(f"Duplicated column name(s): {short_list(sorted(set(dup)))}.")
    if target not in table.columns:
        raise DataError(f"Target column {target!r} is not in the table; "
                        f"columns are {short_list(table.columns)}.")
    if table.shape[1] < 2:
        raise DataError("The table has no attribute columns besides the target.")
    if len(table) == 0:
        raise DataError("The table is empty (0 rows).")
    y = table[target]
    if y.isna().any():
        raise DataError(f"Target column {target!r} has {int(y.isna().sum())} missing value(s).")
    counts = y.value_counts()
    labels = [native(v) for v in counts.index.tolist()]  # plain Python labels in messages
    if len(counts) < 2:
        raise DataError(f"Target column {target!r} has a single class ({labels[0]!r}); "
                        "at least two are needed.")
    small = {lab: int(n) for lab, n in zip(labels, counts.tolist()) if n < min_rows_per_class}
    if small:
        counts_shown = str(dict(list(small.items())[:5])) + (
            f" … and {len(small) - 5} more" if len(small) > 5 else "")
        raise DataError(
            f"Class(es) {short_list(list(small), limit=5)} of {target!r} have fewer than "
            f"{min_rows_per_class} rows ({counts_shown}); too few for the split"
            + (" (is the target a continuous number? every distinct value is a class)."
               if len(small) > 10 else "."))
    # only an object column can hold a list or dict (a per-value check, too costly to
    # run on string and number columns of a large table)
    nested = [c for c in table.columns if c != target and _may_nest(table[c].dtype)
              and table[c].map(_is_nested).any()]
    if nested:
        raise DataError(f"Column(s) {short_list(nested)} hold nested values (lists, dicts); "
                        "only scalar columns are supported.")


class LinkageWarning(UserWarning):
    """An attribute makes rows linkable or is too fine-grained to learn from."""


def check_attributes(table: pd.DataFrame, attributes: list[str],
                     target: str | None = None) -> None:
    """Checks before learning: no all-missing or constant attributes (errors); ID-like
    and very high-cardinality categorical attributes, and attributes that are the class
    under another name (one-to-one with ``target``), as warnings."""
    import warnings

    n = len(table)
    empty = [c for c in attributes if table[c].isna().all()]
    if empty:
        raise DataError(f"Attribute column(s) {short_list(empty)} have no values (all missing); "
                        "drop them before learning.")
    constant = [c for c in attributes if table[c].nunique(dropna=False) <= 1]
    if constant:
        raise DataError(f"Attribute column(s) {short_list(constant)} are constant; drop them "
                        "(or pass --clean, the paper's cleaning) before learning.")
    for c in attributes:
        col = table[c]
        if pd.api.types.is_float_dtype(col.dtype):
            continue
        levels = col.nunique(dropna=True)
        if n >= 20 and levels == n:
            warnings.warn(f"Column {c!r} looks like an ID: all {n} values are unique, which "
                          "makes every row linkable; drop it from tables you publish.",
                          LinkageWarning, stacklevel=3)
        elif not pd.api.types.is_numeric_dtype(col.dtype) and levels > max(50, n // 5):
            warnings.warn(f"Column {c!r} is a categorical with {levels} levels in {n} rows: "
                          "its one-hot encoding is wide and it identifies rows; consider "
                          "binning or dropping it.", LinkageWarning, stacklevel=3)
    for c in _copies_of_the_class(table, attributes, target):
        warnings.warn(f"Column {c!r} is the class column {target!r} under another name (its "
                      "values map one to one onto the classes): a classifier needs nothing "
                      "else, so the learned grouping says nothing of the other columns; "
                      "drop it (a stray copy, or a name with a space?).", LinkageWarning,
                      stacklevel=3)


def _copies_of_the_class(table: pd.DataFrame, attributes: list[str],
                         target: str | None) -> list[str]:
    """The attributes whose values map one to one onto the classes of ``target``."""
    if target is None or target not in table.columns:
        return []
    y = table[target]
    n_classes = y.nunique(dropna=False)
    out = []
    for c in attributes:
        col = table[c]
        if col.nunique(dropna=False) != n_classes:  # cheap: most columns stop here
            continue
        pairs = pd.DataFrame({"x": col.to_numpy(), "y": y.to_numpy()}).drop_duplicates()
        if len(pairs) == n_classes:
            out.append(c)
    return out


def _may_nest(dtype: object) -> bool:
    """Object columns and Arrow-backed ones of a nested type (list, struct, map)."""
    if isinstance(dtype, np.dtype) and dtype.kind == "O":
        return True
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is None:
        return False
    import pyarrow as pa

    return pa.types.is_nested(arrow)


def _is_nested(value: object) -> bool:
    return isinstance(value, (list, dict, tuple, set, np.ndarray))


def split_target(table: pd.DataFrame, target: str) -> tuple[pd.DataFrame, pd.Series]:
    """Attributes and class column, in table order."""
    return table.drop(columns=[target]), table[target]


def drop_missing_and_constant(table: pd.DataFrame, target: str,
                              keep: Sequence[str] = ()) -> pd.DataFrame:
    """The paper's cleaning: drop rows with a missing value, then constant attributes."""
    out = table.dropna(axis=0, how="any")
    constant = [c for c in out.columns
                if c != target and c not in keep and out[c].nunique(dropna=False) <= 1]
    out = out.drop(columns=constant)
    for c in out.columns:
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].cat.remove_unused_categories()
    return out.reset_index(drop=True)
