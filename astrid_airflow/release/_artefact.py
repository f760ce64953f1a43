"""Grouping artefacts: a learned grouping plus everything needed to reuse and audit it.

An artefact records the grouping ASTRID chose (paper, Alg. 1) with its full per-k table,
the class column and labels, the schema of the reference table, a fingerprint of that
table, the classifier settings, alpha, R' and R, the seed, the library version and the
creation time. It is serialised as JSON (schema version 1) and validated strictly on
load; a table to be shuffled with it is checked against the recorded schema first.
The fields are documented in ``docs/artefacts.md``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import (
    ArtefactError,
    GroupingError,
    ParameterError,
    SchemaMismatchError,
    findings,
    short_list,
)
from astrid_airflow.engine import Grouping
from astrid_airflow.io import native, strict

SCHEMA_VERSION = 1

# The settings of the run: fields an artefact copies from its result as they are.
_SETTINGS = ("classifier", "scoring", "alpha", "n_search", "n_test", "random_state")
# The JSON keys of schema version 1, in the order they are written.
_KEYS = ("schema_version", "grouping", "target", "classes", "schema", "fingerprint",
         "result", *_SETTINGS, "library_version", "created_at")
# Optional keys (written after the others, only when set): ``files`` maps each file the
# store saved with the version (e.g. the gate's suite.json) to its SHA-256, so a file
# edited, replaced or deleted afterwards is detected (see ``_gate``).
_OPTIONAL_KEYS = ("files", "release")
# Keys a result's ``to_dict()`` must provide (docs/architecture.md).
_RESULT_KEYS = ("grouping", "k", "table", "target", *_SETTINGS)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_KINDS = ("integer", "float", "boolean", "string", "datetime", "timedelta", "other")


# --------------------------------------------------------------------------- JSON values

def _json_scalar(value: Any, what: str) -> Any:
    """A JSON scalar for ``value`` (numpy scalars unwrapped), or ``ArtefactError``."""
    value = native(value)
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ArtefactError(f"{what} holds a non-finite number ({value!r}).")
        return value
    raise ArtefactError(f"{what} holds {value!r} ({type(value).__name__}), "
                        "which is not a JSON scalar (str, int, float, bool).")


# ------------------------------------------------------------------------- column kinds

def dtype_kind(dtype: Any, values: pd.Series | None = None) -> str:
    """Coarse kind of a pandas dtype: what a schema check compares (and, for numbers
    and booleans, the type a remedy publishes).

    Exact dtypes drift harmlessly between readers (int32/int64, ``str``/``object``,
    a nominal ARFF column as ``category`` but the same column from CSV as ``str``), so
    columns are compared by kind; a categorical has the kind of its categories. An
    object column has the kind inferred from ``values`` if given, else ``string``.
    """
    if isinstance(dtype, pd.CategoricalDtype):
        cats = dtype.categories
        if len(cats) == 0:
            return "empty"
        return dtype_kind(cats.dtype, pd.Series(cats))
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "float"
    if isinstance(dtype, pd.StringDtype):
        return "string"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "timedelta"
    if dtype == np.dtype(object) and values is not None:
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        return {
            "string": "string", "empty": "empty", "integer": "integer",
            "floating": "float", "mixed-integer-float": "float", "decimal": "float",
            "boolean": "boolean", "datetime": "datetime", "datetime64": "datetime",
            "date": "datetime", "timedelta": "timedelta", "timedelta64": "timedelta",
        }.get(inferred, "other")
    if dtype == np.dtype(object):
        return "string"
    return "other"


def _kind_of_arrow(typ: Any) -> str:
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        return _kind_of_arrow(typ.value_type)
    if pa.types.is_boolean(typ):
        return "boolean"
    if pa.types.is_integer(typ):
        return "integer"
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "float"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or (
            hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)):
        return "string"
    if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
        return "datetime"
    if pa.types.is_duration(typ):
        return "timedelta"
    if pa.types.is_null(typ):
        return "empty"
    return "other"


def column_kind(series: pd.Series) -> str:
    """The kind (``integer``, ``float``, ``boolean``, ``string``...) of a column."""
    return dtype_kind(series.dtype, series)


def compatible_kind(expected: str, got: str) -> bool:
    # An all-missing column fits anything; integers may arrive where floats were seen
    # (ARFF REAL is always float), but not the other way round.
    return got == expected or got == "empty" or (expected == "float" and got == "integer")


def schema_of(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Schema entries ``{name, dtype, kind[, categories, ordered]}`` of every column."""
    out = []
    for name in table.columns:
        col = table[name]
        entry: dict[str, Any] = {"name": str(name), "dtype": str(col.dtype),
                                 "kind": column_kind(col)}
        if isinstance(col.dtype, pd.CategoricalDtype):
            entry["categories"] = [_json_scalar(c, f"Categories of column {name!r}")
                                   for c in col.dtype.categories]
            entry["ordered"] = bool(col.dtype.ordered)
        out.append(entry)
    return out


# --------------------------------------------------------------------------- fingerprint

def fingerprint_table(table: pd.DataFrame) -> dict[str, Any]:
    """Row count and SHA-256 content hash of a table.

    The hash covers the column names and dtypes (in column order) and the 64-bit row
    hashes of :func:`pandas.util.hash_pandas_object` (``index=False``, fixed key), in
    row order: it is the same in every process and on every machine for a given pandas
    version, and changes if any value, column, dtype or the row order changes.

    Returns
    -------
    dict
        ``{"rows": int, "sha256": str}``.
    """
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"Cannot fingerprint {type(table).__name__}; "
                             "expected a pandas DataFrame.")
    digest = hashlib.sha256()
    header = {"rows": len(table),
              "columns": [[str(c), str(table[c].dtype)] for c in table.columns]}
    digest.update(json.dumps(header, sort_keys=True).encode())
    if len(table) and table.shape[1]:
        rows = pd.util.hash_pandas_object(table, index=False).to_numpy()
        digest.update(np.ascontiguousarray(rows, dtype="<u8").data)
    return {"rows": len(table), "sha256": digest.hexdigest()}


# ------------------------------------------------------------------------- schema check

@dataclass(frozen=True)
class SchemaCheck:
    """What :meth:`GroupingArtefact.check_table` found besides hard mismatches.

    Attributes
    ----------
    unseen_classes : list
        Class labels absent at learning time (allowed: their rows are still shuffled
        within their own class).
    unseen_categories : dict
        Column -> values outside the categories recorded for a categorical column.
    reordered : bool
        The columns are all there but in another order (harmless: columns are used by
        name).
    """

    unseen_classes: list = field(default_factory=list)
    unseen_categories: dict = field(default_factory=dict)
    reordered: bool = False

    @property
    def notes(self) -> list[str]:
        """Human-readable notes, one per finding (empty if the table matches exactly)."""
        out = []
        if self.unseen_classes:
            out.append(f"{len(self.unseen_classes)} class label(s) not seen at learning "
                       f"time: {short_list(self.unseen_classes)}; their rows are shuffled "
                       "within their own class.")
        for col, vals in self.unseen_categories.items():
            out.append(f"Column {col!r} has {len(vals)} value(s) outside its recorded "
                       f"categories: {short_list(vals)}.")
        if self.reordered:
            out.append("Columns are in a different order than at learning time.")
        return out


def _table_columns(table: Any) -> tuple[list[str], dict[str, str], dict[str, str], bool]:
    """Column names, kinds and dtype strings of a DataFrame/Arrow table/Arrow schema."""
    if isinstance(table, pd.DataFrame):
        names = [str(c) for c in table.columns]
        kinds = {str(c): column_kind(table[c]) for c in table.columns}
        dtypes = {str(c): str(table[c].dtype) for c in table.columns}
        return names, kinds, dtypes, True
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pa = None
    if pa is not None and isinstance(table, (pa.Table, pa.RecordBatch, pa.Schema)):
        schema = table if isinstance(table, pa.Schema) else table.schema
        names = list(schema.names)
        kinds = {f.name: _kind_of_arrow(f.type) for f in schema}
        dtypes = {f.name: str(f.type) for f in schema}
        return names, kinds, dtypes, not isinstance(table, pa.Schema)
    raise ParameterError(f"Cannot check {type(table).__name__} against an artefact; "
                         "expected a pandas DataFrame, a pyarrow Table or a pyarrow Schema.")


def unique_values(table: Any, column: str) -> list:
    if isinstance(table, pd.DataFrame):
        col = table[column]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy()
            vals = col.cat.categories[np.unique(codes[codes >= 0])]
        else:
            vals = col.dropna().unique()
        return [native(v) for v in vals]
    import pyarrow.compute as pc

    return [v for v in pc.unique(table.column(column)).to_pylist() if v is not None]


# ------------------------------------------------------------------------------ artefact

@dataclass(frozen=True, eq=True)
class GroupingArtefact:
    """A learned grouping and everything needed to reuse and audit it (schema v1).

    Build one with :meth:`from_result`; read one with :meth:`from_json`. Every field is
    described in ``docs/artefacts.md``.

    Attributes
    ----------
    grouping : Grouping
        The grouping ASTRID chose: a partition of the attribute columns.
    target : str
        The class column.
    classes : tuple
        The class labels seen at learning time (JSON scalars).
    schema : tuple of dict
        One entry per column, target included, in table order:
        ``{"name", "dtype", "kind"}`` plus ``"categories"`` and ``"ordered"`` for
        categoricals.
    fingerprint : dict
        ``{"rows": int, "sha256": str}`` of the reference table
        (:func:`fingerprint_table`).
    result : dict
        The full ``AstridResult.to_dict()`` (per-k table, p-values, order, a0, p_OG...).
    classifier, scoring, alpha, n_search, n_test, random_state
        The settings of the run (R' = ``n_search``, R = ``n_test``).
    library_version, created_at : str
        ``astrid_airflow.__version__`` and the UTC creation time (ISO 8601).
    schema_version : int
        Always 1 for this class.
    files : dict or None
        ``{file name: sha256}`` of the files saved with this version (set by
        ``ArtefactStore.save``; ``None`` for an artefact not read from a store or saved
        without extra files). Not part of equality: it records where the artefact was
        saved, not what was learned.
    release : dict or None
        The release chosen for this grouping (issue 17; optional, absent in older
        artefacts): ``{"recipe": ReleaseRecipe dict or None, "status": "chosen" |
        "refused" | "given", ...}`` plus, from :func:`~astrid_airflow.choose_release`,
        the policy, the candidates tried (risks and accuracy), the learned grouping and
        the utility cost of the remedies. :attr:`recipe` is the parsed recipe.
    """

    grouping: Grouping
    target: str
    classes: tuple
    schema: tuple
    fingerprint: dict
    result: dict
    classifier: Any
    scoring: str
    alpha: float
    n_search: int
    n_test: int
    random_state: int | None
    library_version: str
    created_at: str
    schema_version: int = SCHEMA_VERSION
    files: dict | None = field(default=None, compare=False)
    release: dict | None = None

    def __post_init__(self) -> None:
        # Normalise containers so that equality and JSON round trips are exact.
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "schema", tuple(dict(e) for e in self.schema))
        object.__setattr__(self, "fingerprint", dict(self.fingerprint))
        if self.files is not None:
            object.__setattr__(self, "files", dict(self.files))
        if self.release is not None:
            object.__setattr__(self, "release", strict(dict(self.release), ArtefactError))
        object.__setattr__(self, "result", strict(self.result, ArtefactError))
        object.__setattr__(self, "classifier", strict(self.classifier, ArtefactError))
        if isinstance(self.alpha, numbers.Real) and not isinstance(self.alpha, bool):
            object.__setattr__(self, "alpha", float(self.alpha))
        _validate(self.to_dict())

    __hash__ = None  # holds dicts

    # ----------------------------------------------------------------- convenience
    @property
    def k(self) -> int:
        """Number of groups of the grouping."""
        return self.grouping.k

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column of the schema, target included, in table order."""
        return tuple(e["name"] for e in self.schema)

    @property
    def attributes(self) -> tuple[str, ...]:
        """The attribute columns (schema minus target), in table order."""
        return tuple(c for c in self.columns if c != self.target)

    def column_schema(self, name: str) -> dict[str, Any]:
        """The schema entry of column ``name``."""
        for e in self.schema:
            if e["name"] == name:
                return dict(e)
        raise KeyError(name)

    @property
    def recipe(self) -> Any:
        """The release recipe (a :class:`~astrid_airflow.ReleaseRecipe`) or None."""
        if not self.release or self.release.get("recipe") is None:
            return None
        from ._remedies import ReleaseRecipe

        return ReleaseRecipe.from_dict(self.release["recipe"])

    @property
    def release_refused(self) -> str | None:
        """Why no release within the policy exists (``status == "refused"``), else None."""
        if self.release and self.release.get("status") == "refused":
            return str(self.release.get("reason") or "no release passed the policy")
        return None

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_result(cls, result: Any, reference_table: pd.DataFrame, *,
                    created_at: str | _dt.datetime | None = None) -> GroupingArtefact:
        """Record ``result`` (an ``AstridResult``) learned on ``reference_table``.

        Parameters
        ----------
        result : AstridResult or mapping
            Anything with ``to_dict()`` returning the keys listed in
            ``docs/architecture.md`` (or that dict itself).
        reference_table : pandas.DataFrame
            The table the grouping was learned on: its columns must be exactly the
            result's target and grouped attributes.
        created_at : str or datetime, optional
            Creation time (UTC); default now.
        """
        from astrid_airflow._version import __version__

        d = result.to_dict() if hasattr(result, "to_dict") else result
        if not isinstance(d, Mapping):
            raise ParameterError(f"Expected an AstridResult (or its to_dict()), "
                                 f"got {type(result).__name__}.")
        missing = [k for k in _RESULT_KEYS if k not in d]
        if missing:
            raise ArtefactError(f"The result lacks key(s) {missing} needed by an artefact.")
        if not isinstance(reference_table, pd.DataFrame):
            raise ParameterError(f"reference_table must be a pandas DataFrame, "
                                 f"got {type(reference_table).__name__}.")
        grouping = _parse_grouping(d["grouping"], "result['grouping']")
        target = d["target"]
        columns = [str(c) for c in reference_table.columns]
        if target not in columns:
            raise ArtefactError(f"The reference table has no target column {target!r}.")
        used = set(grouping.columns) | {target}
        missing_cols = [c for c in grouping.columns if c not in columns]
        if missing_cols:
            raise ArtefactError(f"The reference table lacks grouped column(s) "
                                f"{short_list(missing_cols)}; pass the table the grouping "
                                "was learned on.")
        extra = [c for c in columns if c not in used]
        if extra:
            raise ArtefactError(
                f"The reference table has column(s) {short_list(extra)} in no group of the "
                f"grouping {grouping}; pass the table the grouping was learned on (after "
                "cleaning).")
        classes = d.get("classes")
        if classes is None:
            classes = unique_values(reference_table, target)
        return cls(
            grouping=grouping,
            target=target,
            classes=tuple(_json_scalar(c, "The class labels") for c in classes),
            schema=tuple(schema_of(reference_table)),
            fingerprint=fingerprint_table(reference_table),
            result=strict(d, ArtefactError),
            **{key: d[key] for key in _SETTINGS},
            library_version=__version__,
            created_at=_utc_iso(created_at),
        )

    # ------------------------------------------------------------------ (de)serialise
    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict with the keys of schema version 1, in order."""
        out = {
            "schema_version": self.schema_version,
            "grouping": self.grouping.to_list(),
            "target": self.target,
            "classes": list(self.classes),
            "schema": [strict(e, ArtefactError) for e in self.schema],
            "fingerprint": dict(self.fingerprint),
            "result": strict(self.result, ArtefactError),
            "classifier": strict(self.classifier, ArtefactError),
            "scoring": self.scoring,
            "alpha": self.alpha,
            "n_search": self.n_search,
            "n_test": self.n_test,
            "random_state": self.random_state,
            "library_version": self.library_version,
            "created_at": self.created_at,
        }
        if self.files is not None:
            out["files"] = dict(self.files)
        if self.release is not None:
            out["release"] = strict(self.release, ArtefactError)
        return out

    def to_json(self) -> str:
        """The artefact as JSON text (UTF-8, strict: no NaN)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False,
                          allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: Any) -> GroupingArtefact:
        """Validate ``data`` (a decoded artefact) and build the artefact.

        Raises ``ArtefactError`` naming the problem: missing or unknown keys, wrong
        types, a grouping that is not a partition of the schema's attributes, or an
        unknown ``schema_version``.
        """
        _validate(data)
        # every field is its JSON key (containers are normalised by __post_init__)
        fields = {key: data.get(key) for key in _KEYS + _OPTIONAL_KEYS}
        return cls(**fields | {"grouping": Grouping(data["grouping"])})

    @classmethod
    def from_json(cls, text: str | bytes) -> GroupingArtefact:
        """Parse and validate artefact JSON; ``ArtefactError`` if corrupt or truncated."""
        from astrid_airflow.io import load_json

        if not isinstance(text, (str, bytes, bytearray)):
            raise ParameterError(f"Expected artefact JSON text, got {type(text).__name__}.")
        data = load_json(text, "artefact JSON", error=ArtefactError)
        return cls.from_dict(data)

    # ------------------------------------------------------------------- table check
    def check_table(self, table: Any, *, require_target: bool = True) -> SchemaCheck:
        """Check ``table`` against the recorded schema.

        Parameters
        ----------
        table : pandas.DataFrame, pyarrow.Table or pyarrow.Schema
            The table to shuffle (reference or a new batch). For a bare Arrow schema the
            class labels and categories cannot be checked.
        require_target : bool, default True
            Whether the class column must be present.

        Returns
        -------
        SchemaCheck
            Unseen class labels and categories (allowed), and whether columns were
            reordered.

        Raises
        ------
        SchemaMismatchError
            Naming every difference: missing columns, extra columns, duplicated
            columns and kind drift (e.g. an integer column arriving as strings).
        """
        names, kinds, dtypes, has_data = _table_columns(table)
        expected = list(self.columns) if require_target or self.target in names \
            else list(self.attributes)
        problems = []
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup:
            problems.append(f"duplicated column(s) {short_list(dup)}")
        missing = [c for c in expected if c not in names]
        if missing:
            problems.append(f"missing column(s) {short_list(missing)}")
        extra = [c for c in names if c not in set(self.columns)]
        if extra:
            problems.append(f"unexpected column(s) {short_list(extra)}")
        for name in expected:
            if name not in kinds:
                continue
            entry = self.column_schema(name)
            if not compatible_kind(entry["kind"], kinds[name]):
                problems.append(f"column {name!r} should be {entry['kind']} "
                                f"({entry['dtype']}) but is {kinds[name]} ({dtypes[name]})")
        if problems:
            shown = problems[:10] + ([f"… and {len(problems) - 10} more"]
                                     if len(problems) > 10 else [])
            raise SchemaMismatchError("The table does not match the artefact's schema: " +
                                      "; ".join(shown) + ".")
        unseen_classes: list = []
        unseen_categories: dict = {}
        if has_data:
            if self.target in names:
                known = set(self.classes)
                unseen_classes = [v for v in unique_values(table, self.target)
                                  if v not in known]
            for entry in self.schema:
                if "categories" in entry and entry["name"] in names \
                        and entry["name"] != self.target:
                    known = set(entry["categories"])
                    vals = [v for v in unique_values(table, entry["name"])
                            if v not in known]
                    if vals:
                        unseen_categories[entry["name"]] = vals
        present = [c for c in names if c in set(expected)]
        return SchemaCheck(unseen_classes=unseen_classes,
                           unseen_categories=unseen_categories,
                           reordered=present != [c for c in expected if c in names])


# ---------------------------------------------------------------------------- validation

def _utc_iso(value: str | _dt.datetime | None) -> str:
    if value is None:
        value = _dt.datetime.now(_dt.UTC)
    if isinstance(value, str):
        value = _parse_time(value, "created_at", ParameterError)
    if not isinstance(value, _dt.datetime):
        raise ParameterError(f"Invalid created_at: {value!r}. Must be a datetime or "
                             "an ISO-8601 string.")
    if value.tzinfo is None:
        raise ParameterError(f"Invalid created_at: {value.isoformat()!r} has no time zone; "
                             "pass an aware (UTC) datetime.")
    text = value.astimezone(_dt.UTC).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def _parse_time(text: str, what: str, error: type[Exception]) -> _dt.datetime:
    try:
        value = _dt.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise error(f"Invalid {what}: {text!r} is not an ISO-8601 time.") from None
    if value.tzinfo is None:
        raise error(f"Invalid {what}: {text!r} has no time zone (expected UTC).")
    return value


def _parse_grouping(value: Any, what: str) -> Grouping:
    try:
        if isinstance(value, Grouping):
            return value
        if isinstance(value, str):
            return Grouping.parse(value)
        if isinstance(value, list) and all(
                isinstance(g, list) and all(isinstance(c, str) for c in g) for g in value):
            return Grouping(value)
    except GroupingError as exc:
        raise ArtefactError(f"Invalid {what}: {exc}") from None
    raise ArtefactError(f"Invalid {what}: expected a list of lists of column names, "
                        f"got {value!r}.")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_errors(d: Mapping) -> list[str]:
    """Type problems of the scalar fields (every one, not just the first)."""
    checks = {
        "target": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        "scoring": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        "alpha": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                  and 0 < v < 1, "a number in (0, 1)"),
        "n_search": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
        "n_test": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
        "random_state": (lambda v: v is None or (_is_int(v) and v >= 0),
                         "null or an integer >= 0"),
        "library_version": (lambda v: isinstance(v, str) and v != "", "a non-empty string"),
        "created_at": (lambda v: isinstance(v, str), "an ISO-8601 UTC time string"),
        "classifier": (lambda v: isinstance(v, (str, dict)) and v != "",
                       "a preset name or a settings object"),
        "result": (lambda v: isinstance(v, dict), "an object (AstridResult.to_dict())"),
        "classes": (lambda v: isinstance(v, (list, tuple)) and len(v) >= 1,
                    "a non-empty list of labels"),
        "schema": (lambda v: isinstance(v, (list, tuple)) and len(v) >= 2,
                   "a list of at least two column entries"),
        "fingerprint": (lambda v: isinstance(v, dict), "an object {rows, sha256}"),
    }
    return [f"{key} must be {what}, got {d[key]!r}"[:200]
            for key, (ok, what) in checks.items() if not ok(d[key])]


def _validate(d: Any) -> None:
    """Raise ``ArtefactError`` naming every problem of a decoded artefact."""
    if not isinstance(d, Mapping):
        raise ArtefactError(f"Corrupt artefact: expected a JSON object, got "
                            f"{type(d).__name__}.")
    version = d.get("schema_version")
    if version is None:
        raise ArtefactError("Corrupt artefact: no schema_version field.")
    if not _is_int(version):
        raise ArtefactError(f"Corrupt artefact: schema_version must be an integer, "
                            f"got {version!r}.")
    if version > SCHEMA_VERSION:
        raise ArtefactError(
            f"Artefact schema_version {version} is newer than this library supports "
            f"({SCHEMA_VERSION}); it was written by astrid-airflow "
            f"{d.get('library_version', '?')}. Upgrade astrid-airflow to read it.")
    if version != SCHEMA_VERSION:
        raise ArtefactError(f"Unknown artefact schema_version {version}; "
                            f"supported: {SCHEMA_VERSION}.")
    message = findings("Invalid artefact", {
        "missing key(s)": [k for k in _KEYS if k not in d],
        "unknown key(s)": sorted(str(k) for k in d if k not in _KEYS + _OPTIONAL_KEYS)})
    if message:
        raise ArtefactError(message)
    problems = _type_errors(d)
    if problems:
        raise ArtefactError("Invalid artefact: " + "; ".join(problems) + ".")
    _parse_time(d["created_at"], "artefact created_at", ArtefactError)
    fp = d["fingerprint"]
    if set(fp) != {"rows", "sha256"} or not _is_int(fp.get("rows")) or fp["rows"] < 0 \
            or not isinstance(fp.get("sha256"), str) or not _SHA256.match(fp["sha256"]):
        raise ArtefactError(f"Invalid artefact fingerprint {fp!r}: expected "
                            "{'rows': int >= 0, 'sha256': 64 lowercase hex digits}.")
    files = d.get("files")
    if files is not None and (not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _SHA256.match(v)
            for k, v in files.items())):
        raise ArtefactError(f"Invalid artefact files {str(files)[:200]}: expected "
                            "{file name: 64 lowercase hex digits}.")
    names = _validate_schema(d["schema"])
    _validate_release(d.get("release"), names, d.get("target"), d.get("grouping"))
    for i, c in enumerate(d["classes"]):
        if c is None or not isinstance(c, (str, int, float, bool)):
            raise ArtefactError(f"Invalid artefact: class label #{i} is {c!r}; "
                                "labels must be strings or numbers.")
    if len(set(d["classes"])) != len(d["classes"]):
        raise ArtefactError(f"Invalid artefact: duplicated class labels in {d['classes']!r}.")
    target = d["target"]
    if target not in names:
        raise ArtefactError(f"Invalid artefact: target {target!r} is not in the schema "
                            f"(columns {names}).")
    grouping = _parse_grouping(d["grouping"], "artefact grouping")
    try:
        grouping.check_partition_of([c for c in names if c != target])
    except GroupingError as exc:
        raise ArtefactError(f"Invalid artefact: {exc}") from None
    if target in grouping.columns:  # pragma: no cover - caught by check_partition_of
        raise ArtefactError("Invalid artefact: the target is in a group.")
    stored = d["result"].get("grouping")
    if stored is not None and _parse_grouping(stored, "result grouping") != grouping:
        raise ArtefactError(f"Invalid artefact: the result's grouping {stored!r} differs "
                            f"from the artefact's {grouping}.")


def _validate_schema(schema: Sequence) -> list[str]:
    names: list[str] = []
    for i, e in enumerate(schema):
        if not isinstance(e, Mapping) or not isinstance(e.get("name"), str) \
                or not isinstance(e.get("dtype"), str) or e.get("kind") not in (*_KINDS,
                                                                              "empty"):
            raise ArtefactError(f"Invalid artefact schema entry #{i}: {e!r}; expected "
                                "{name: str, dtype: str, kind: one of " + f"{_KINDS}" + "}.")
        allowed = {"name", "dtype", "kind", "categories", "ordered"}
        if set(e) - allowed:
            raise ArtefactError(f"Invalid artefact schema entry {e['name']!r}: unknown "
                                f"key(s) {sorted(set(e) - allowed)}.")
        if ("categories" in e) != ("ordered" in e) or (
                "categories" in e and (not isinstance(e["categories"], list)
                                       or not isinstance(e["ordered"], bool))):
            raise ArtefactError(f"Invalid artefact schema entry {e['name']!r}: categorical "
                                "columns need a 'categories' list and an 'ordered' flag.")
        names.append(e["name"])
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ArtefactError(f"Invalid artefact schema: duplicated column(s) {dup}.")
    return names


def _validate_release(release: Any, names: Sequence[str], target: Any, grouping: Any) -> None:
    """The optional ``release`` key: an object whose ``recipe`` is a valid recipe for
    this schema and grouping (``ArtefactError`` naming the problem)."""
    if release is None:
        return
    from astrid_airflow._errors import RecipeError

    from ._remedies import ReleaseRecipe

    if not isinstance(release, Mapping):
        raise ArtefactError(f"Invalid artefact release: expected an object, got "
                            f"{type(release).__name__}.")
    if release.get("status") not in ("chosen", "refused", "given"):
        raise ArtefactError(f"Invalid artefact release status {release.get('status')!r}; "
                            "expected 'chosen', 'refused' or 'given'.")
    if release.get("recipe") is None:
        if release["status"] != "refused":
            raise ArtefactError("Invalid artefact release: a chosen release needs a recipe.")
        return
    try:
        recipe = ReleaseRecipe.from_dict(release["recipe"])
        if recipe.target not in (None, target):
            raise RecipeError(f"its class column {recipe.target!r} is not the artefact's "
                              f"{target!r}")
        attrs = [n for n in names if n != target]
        try:
            parsed = _parse_grouping(grouping, "artefact grouping")
        except ArtefactError:
            parsed = None
        recipe.check_columns(attrs, parsed)
    except RecipeError as exc:
        raise ArtefactError(f"Invalid artefact release recipe: {exc}") from None
