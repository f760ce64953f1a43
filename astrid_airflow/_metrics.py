"""Privacy and utility metrics of GoldenEye surrogates (ASTRID paper, Sec. 6.2).

Sec. 6.2, "Anonymisation and Surrogate Data", measures anonymity by P_anon, the
proportion of the original table's rows that are still intact after shuffling, and
utility by the accuracy of a classifier trained on the surrogate. This module computes

* :func:`intact_row_proportion`: the measured P_anon;
* :func:`expected_intact_row_proportion`: its expectation from the class and group
  value counts, before any shuffling;
* :func:`largest_group_unique_share`: the linkage risk P_anon misses (rows identifiable
  by the values of the largest group, which always travel together with their class);
* :func:`surrogate_utility`: train on surrogate, test on real, on a held-out part of the
  original that never contributed to the surrogate.

Rows are compared through 64-bit row hashes computed column by column in Arrow (see
:func:`row_hashes`), so the privacy metrics scale to tables of 10M rows without pandas.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._errors import DataError, ParameterError, short_list
from ._grouping import Grouping, as_grouping
from ._permutation import pandas_class_codes
from ._surrogate import (
    ProtectsNothingWarning,
    TableFile,
    is_arrow_table,
    make_surrogate,
    read_arrow,
    resolve_grouping,
)
from ._validation import check_positive_int, check_seed_sequence

__all__ = [
    "SurrogateMetrics",
    "UtilityResult",
    "expected_intact_row_proportion",
    "intact_row_proportion",
    "largest_group_unique_share",
    "row_hashes",
    "surrogate_metrics",
    "surrogate_utility",
]

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
        if isinstance(table, pd.DataFrame):
            self.columns = [str(c) for c in table.columns]
            self.num_rows = len(table)
        elif is_arrow_table(table):
            self.columns = list(table.column_names)
            self.num_rows = table.num_rows
        elif isinstance(table, (str, os.PathLike, TableFile)):
            import pyarrow.parquet as pq

            from ._io import filesystem, input_format

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
                self.columns = list(meta.schema.to_arrow_schema().names)
                self.num_rows = meta.num_rows
                table = None
        else:
            raise DataError(f"Cannot compute metrics of {type(table).__name__} ({what}); pass "
                            "a pandas DataFrame, a pyarrow Table or a Parquet/CSV path.")
        self.table = table

    def column(self, name: str) -> Any:
        if self.table is None:  # Parquet: read one column at a time
            return read_arrow(self.path, [name]).column(name)
        if isinstance(self.table, pd.DataFrame):
            return self.table[name]
        return self.table.column(name)

    def require(self, columns: Sequence[str], what: str) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise DataError(f"The {what} lacks column(s) {short_list(missing)}.")


# ------------------------------------------------------------------------- row hashes

def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a bijective, well-mixed map of uint64 (wraps by design)."""
    z = x + _U64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> _U64(27))) * _U64(0x94D049BB133111EB)
    return z ^ (z >> _U64(31))


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
    if pa.types.is_boolean(typ):
        arr = arr.cast(pa.uint8())
        typ = arr.type
    if pa.types.is_temporal(typ):
        arr = arr.cast(pa.int64()) if not pa.types.is_date32(typ) else \
            arr.cast(pa.int32()).cast(pa.int64())
        typ = arr.type
    if pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        vals = arr.cast(pa.float64()).fill_null(float("nan")).to_numpy(zero_copy_only=False)
        vals = vals + 0.0  # -0.0 -> 0.0
        missing = np.isnan(vals)
        out = _splitmix(vals.view(_U64))
        out[missing] = _NULL_HASH
        return out
    if pa.types.is_null(typ):
        return np.full(len(arr), _NULL_HASH, dtype=_U64)
    try:
        return _hash_array(arr.cast(pa.string()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(f"Cannot compare values of type {typ}: {exc}") from None


def _is_stringy(typ: Any) -> bool:
    import pyarrow as pa

    return (pa.types.is_string(typ) or pa.types.is_large_string(typ)
            or pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
            or (hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)))


def _column_hash(column: Any) -> np.ndarray:
    import pyarrow as pa

    if isinstance(column, pd.Series):
        try:
            column = pa.chunked_array([pa.Array.from_pandas(column.array)])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            column = pa.chunked_array([pa.array(column.astype(str).to_numpy(object))])
    if isinstance(column, pa.Array):
        column = pa.chunked_array([column])
    if column.num_chunks == 0:
        return np.zeros(0, dtype=_U64)
    return np.concatenate([_hash_array(c) for c in column.chunks])


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
        h = _splitmix(h ^ hc)
    return h


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
    unique = np.unique(row_hashes(orig, cols))
    return float(np.isin(unique, row_hashes(surr, cols)).mean())


# --------------------------------------------------------------- expected P_anon

def _log_comb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ok = (b >= 0) & (b <= a)
    out = np.full(np.broadcast(a, b).shape, -np.inf)
    aa, bb = np.broadcast_arrays(a, b)
    out[ok] = gammaln(aa[ok] + 1) - gammaln(bb[ok] + 1) - gammaln(aa[ok] - bb[ok] + 1)
    return out


def _p_match_chain(m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Exact P(J_1 ∩ ... ∩ J_G ≠ ∅) for rows with m[:, 0] <= EXACT_CAP (m sorted)."""
    r, g_count = m.shape
    out = np.empty(r)
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
            logt = _log_comb(s, t) + _log_comb(nb - s, mg - t) - _log_comb(nb, mg)
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
    m = np.sort(np.asarray(m, dtype=np.int64), axis=1)
    n = np.asarray(n, dtype=np.int64)
    out = np.empty(m.shape[0])
    if m.shape[1] == 1:
        out[:] = 1.0
        return out
    frac = m / n[:, None]
    single = m[:, 0] == 1
    out[single] = np.prod(frac[single, 1:], axis=1)
    chain = ~single & (m[:, 0] <= EXACT_CAP)
    if chain.any():
        out[chain] = _p_match_chain(m[chain], n[chain])
    big = ~single & ~chain
    if big.any():
        mu = n[big] * np.prod(frac[big], axis=1)
        out[big] = -np.expm1(-mu)
    return out


def _group_counts(src: TableSource, grouping: Grouping, class_hash: np.ndarray,
                  rows: np.ndarray) -> np.ndarray:
    """``(len(rows), G)``: for each of ``rows``, the same-class rows sharing its group values.

    Kept only for the representative rows and as uint32, to bound memory on big tables.
    """
    out = np.empty((rows.shape[0], grouping.k), dtype=np.uint32)
    for g, cols in enumerate(grouping.groups):
        key = _splitmix(row_hashes(src, cols) ^ class_hash)
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        out[:, g] = counts[inverse[rows]]
    return out


def _class_hash_and_sizes(src: TableSource, target: str) -> tuple[np.ndarray, np.ndarray]:
    h = row_hashes(src, [target])
    _, inverse, counts = np.unique(h, return_inverse=True, return_counts=True)
    return _splitmix(h + _U64(1)), counts[inverse]


def _prepare(table: Any, grouping_or_artefact: Any, target: str | None
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
    src, grouping, target, _ = _prepare(table, grouping, target)
    if grouping.k == 1:
        return 1.0
    class_hash, sizes = _class_hash_and_sizes(src, target)
    _, first = np.unique(row_hashes(src, [*grouping.columns, target]), return_index=True)
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
        src, resolved, _, _ = _prepare(table, grouping, target)
    largest = max(resolved.groups, key=len)
    _, inverse, counts = np.unique(row_hashes(src, largest), return_inverse=True,
                                   return_counts=True)
    return float(np.mean(counts[inverse] == 1))


# ----------------------------------------------------------------------------- utility

@dataclass(frozen=True)
class UtilityResult:
    """Train-on-surrogate / test-on-real accuracies (means over ``n_repeats`` splits)."""

    accuracy_original: float
    accuracy_surrogate: float
    difference: float
    n_train: int
    n_test: int
    n_repeats: int
    classifier: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _classifier_preset(classifier: Any, artefact: Any) -> Any:
    if classifier is not None:
        return classifier
    spec = getattr(artefact, "classifier", None)
    if isinstance(spec, dict) and isinstance(spec.get("preset"), str):
        return spec["preset"]
    if isinstance(spec, str):
        return spec
    return "svm"


def surrogate_utility(table: Any, grouping_or_artefact: Any, *, target: str | None = None,
                      classifier: Any = None, test_size: float = 0.25,
                      random_state: object = None, n_repeats: int = 1) -> UtilityResult:
    """Accuracy of a classifier trained on a surrogate vs on the original (Sec. 6.2).

    Parameters
    ----------
    table : DataFrame or pyarrow.Table
        The reference table (attributes and class).
    grouping_or_artefact : GroupingArtefact, Grouping, str or list of lists
    target : str, optional
        Class column (required with a grouping).
    classifier : {"svm", "rf", "nb"} or scikit-learn classifier, optional
        Default: the artefact's preset, else ``"svm"``.
    test_size : float, default 0.25
        Held-out share of every class.
    random_state : None, int, SeedSequence or Generator
    n_repeats : int, default 1
        Independent splits (and surrogates) averaged, as the paper averages 100.

    Returns
    -------
    UtilityResult
        ``accuracy_original``: trained on the original training part; ``accuracy_surrogate``:
        trained on a surrogate of that same training part; ``difference`` = surrogate −
        original; both scored on the same held-out original rows.

    Notes
    -----
    The split comes first and the surrogate is made from the training part only, so no
    held-out row contributes to the scored surrogate. Shuffling the whole table and then
    splitting would leak: with a one-group grouping the surrogate is the original rows
    reordered, so test rows would reappear intact in the training data.
    """
    from sklearn.model_selection import train_test_split

    from ._classifiers import make_classifier
    from ._io import check_table

    grouping, target, artefact = resolve_grouping(grouping_or_artefact, target)
    if is_arrow_table(table):
        table = table.to_pandas()
    if not isinstance(table, pd.DataFrame):
        raise DataError(f"surrogate_utility needs a DataFrame or pyarrow Table, got "
                        f"{type(table).__name__}.")
    if artefact is not None:
        artefact.check_table(table)
    check_table(table, target, min_rows_per_class=2)
    grouping.check_partition_of([c for c in table.columns if c != target])
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)) \
            or not 0.0 < test_size < 1.0:
        raise ParameterError(f"Invalid test_size: {test_size!r}. Must be a number in (0, 1).")
    n_repeats = check_positive_int(n_repeats, "n_repeats")
    classifier = _classifier_preset(classifier, artefact)
    codes = pandas_class_codes(table[target], target)
    acc_o, acc_s = [], []
    n_train = n_test = 0
    for child in check_seed_sequence(random_state).spawn(n_repeats):
        split_seed, shuffle_seed, model_seed = child.spawn(3)
        try:
            train, test = train_test_split(
                table, test_size=test_size, stratify=codes,
                random_state=int(split_seed.generate_state(1)[0] >> 1))
        except ValueError as exc:  # a class too small for the held-out share
            raise DataError(f"Cannot split the table for the utility check: {exc}") from None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ProtectsNothingWarning)
            surrogate = make_surrogate(train, grouping, target=target,
                                       random_state=shuffle_seed)
        seed = int(model_seed.generate_state(1)[0] >> 1)
        x_test, y_test = test.drop(columns=[target]), test[target].to_numpy()
        for data, scores in ((train, acc_o), (surrogate, acc_s)):
            model = make_classifier(classifier, random_state=seed,
                                    n_attributes=len(grouping.columns))
            model.fit(data.drop(columns=[target]), data[target].to_numpy())
            scores.append(float(np.mean(model.predict(x_test) == y_test)))
        n_train, n_test = len(train), len(test)
    a_o, a_s = float(np.mean(acc_o)), float(np.mean(acc_s))
    return UtilityResult(accuracy_original=a_o, accuracy_surrogate=a_s, difference=a_s - a_o,
                         n_train=n_train, n_test=n_test, n_repeats=n_repeats,
                         classifier=classifier if isinstance(classifier, str) else
                         type(classifier).__name__)


# ---------------------------------------------------------------------------- bundle

@dataclass(frozen=True)
class SurrogateMetrics:
    """The metrics reported with every surrogate (``to_dict()`` is JSON-able).

    ``accuracy_*`` are None when utility was not computed; ``utility_rows`` is the number
    of reference rows the utility check used (a stratified subsample of large tables).
    """

    intact_row_proportion: float
    expected_intact_row_proportion: float
    largest_group_unique_share: float
    accuracy_original: float | None
    accuracy_surrogate: float | None
    accuracy_difference: float | None
    rows: int
    protects_nothing: bool
    groups: int
    largest_group: tuple[str, ...]
    utility_rows: int | None = None
    utility_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["largest_group"] = list(self.largest_group)
        return d


def stratified_subsample(codes: np.ndarray, size: int, seed: np.random.SeedSequence
                         ) -> np.ndarray:
    """Sorted row indices of a stratified random subsample of about ``size`` rows.

    Every class keeps its share (at least 2 rows, or all of a smaller class).
    """
    rng = np.random.default_rng(seed)
    frac = size / codes.shape[0]
    picks = []
    for c in np.unique(codes):
        rows = np.flatnonzero(codes == c)
        take = min(rows.size, max(2, math.floor(rows.size * frac + 0.5)))
        picks.append(rng.choice(rows, size=take, replace=False))
    return np.sort(np.concatenate(picks))


def surrogate_metrics(original: Any, surrogate: Any, grouping_or_artefact: Any, *,
                      target: str | None = None, utility: bool = True,
                      classifier: Any = None, random_state: object = None,
                      utility_max_rows: int = 20_000, n_repeats: int = 1
                      ) -> SurrogateMetrics:
    """All metrics of one surrogate of ``original``.

    Parameters
    ----------
    original, surrogate : DataFrame, pyarrow.Table or Parquet/CSV path
    grouping_or_artefact : GroupingArtefact, Grouping, str or list of lists
    target : str, optional
    utility : bool, default True
        Compute :func:`surrogate_utility` on ``original`` (its own split and
        surrogate; the ``surrogate`` argument is only used for the privacy metrics).
        If the data cannot support it (a class with fewer than 2 rows, a single class)
        the accuracies are None and ``utility_note`` gives the reason.
    classifier, random_state, n_repeats
        Passed to :func:`surrogate_utility`.
    utility_max_rows : int, default 20000
        Larger tables use a stratified subsample of this many rows for the utility
        check (classifier training cost grows faster than linearly); ``utility_note`` says
        so.
    """
    src, grouping, target_name, artefact = _prepare(original, grouping_or_artefact, target)
    intact = intact_row_proportion(src, surrogate, columns=[*grouping.columns, target_name])
    expected = expected_intact_row_proportion(src, grouping, target_name)
    unique_share = largest_group_unique_share(src, grouping)
    acc_o = acc_s = diff = None
    utility_rows = note = None
    if utility:
        seed = check_seed_sequence(random_state)
        sub_seed, util_seed = seed.spawn(2)
        if src.num_rows > utility_max_rows:
            codes = pandas_class_codes(pd.Series(row_hashes(src, [target_name])), target_name)
            rows = stratified_subsample(codes, utility_max_rows, sub_seed)
            frame = _take_rows(src, rows)
            note = (f"utility computed on a stratified random subsample of {len(rows)} of "
                    f"{src.num_rows} rows")
        else:
            frame = _as_frame(src)
        try:
            res = surrogate_utility(frame, artefact if artefact is not None else grouping,
                                    target=target_name, classifier=classifier,
                                    random_state=util_seed, n_repeats=n_repeats)
        except DataError as exc:  # e.g. a one-class batch: the surrogate is still valid
            note = f"utility not computed: {exc}"
        else:
            acc_o, acc_s, diff = res.accuracy_original, res.accuracy_surrogate, res.difference
            utility_rows = len(frame)
    else:
        note = "utility not computed"
    return SurrogateMetrics(
        intact_row_proportion=intact, expected_intact_row_proportion=expected,
        largest_group_unique_share=unique_share, accuracy_original=acc_o,
        accuracy_surrogate=acc_s, accuracy_difference=diff, rows=src.num_rows,
        protects_nothing=grouping.k == 1, groups=grouping.k,
        largest_group=tuple(max(grouping.groups, key=len)), utility_rows=utility_rows,
        utility_note=note)


def _as_frame(src: TableSource) -> pd.DataFrame:
    if isinstance(src.table, pd.DataFrame):
        return src.table
    table = src.table if src.table is not None else read_arrow(src.path)
    return table.to_pandas()


def _take_rows(src: TableSource, rows: np.ndarray) -> pd.DataFrame:
    if isinstance(src.table, pd.DataFrame):
        return src.table.iloc[rows].reset_index(drop=True)
    table = src.table if src.table is not None else read_arrow(src.path)
    return table.take(rows).to_pandas()
