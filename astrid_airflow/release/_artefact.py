"""Grouping artefacts: a learned grouping plus everything needed to reuse and audit it.

An artefact records the grouping ASTRID chose (paper, Alg. 1) with its full per-k table,
the class column and labels, the schema of the reference table, a fingerprint of that
table, the classifier settings, alpha, R' and R, the seed, the library version and the
creation time. It is serialised as JSON (schema version 1) and validated strictly on
load; a table to be shuffled with it is checked against the recorded schema first.
The fields are documented in ``docs/artefacts.md``.
The JSON format's keys and checks live in ``_artefact_format``; the table side (column
kinds, fingerprint, schema-check findings) in ``_table_schema``.
"""

from __future__ import annotations

import datetime as _dt
import json
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from astrid_airflow._errors import ArtefactError, ParameterError, SchemaMismatchError, short_list
from astrid_airflow.engine import Grouping
from astrid_airflow.io import strict

from ._artefact_format import (
    KEYS,
    OPTIONAL_KEYS,
    SCHEMA_VERSION,
    SETTINGS,
    parse_grouping,
    utc_iso,
    validate,
)
from ._table_schema import (
    SchemaCheck,
    compatible_kind,
    fingerprint_table,
    json_scalar,
    schema_of,
    table_columns,
    unique_values,
)

# Keys a result's ``to_dict()`` must provide (docs/architecture.md).
_RESULT_KEYS = ("grouping", "k", "table", "target", *SETTINGS)


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
        The release chosen for this grouping (optional, absent in older
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
        validate(self.to_dict())

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
        from ._recipe import ReleaseRecipe

        return ReleaseRecipe.from_dict(self.release["recipe"])

    @property
    def release_refused(self) -> str | None:
        """Why no release within the policy exists (``status == "refused"``), else None."""
        if self.release and self.release.get("status") == "refused":
            return str(self.release.get("reason") or "no release passed the policy")
        return None

    @property
    def identifiers(self) -> tuple[str, ...]:
        """The columns its release's attacker model declares identifiers: dropped before
        learning, so never among :attr:`columns`, and dropped from every batch too."""
        from ._attacker_model import check_attacker_model

        release = self.release or {}  # the recipe's model, else the choice's record
        model = (release.get("recipe") or {}).get("attacker_model") \
            or release.get("attacker_model")
        return check_attacker_model(model).identifiers

    def without_identifiers(self, table: Any) -> tuple[Any, list[str]]:
        """``(table, dropped)``: a batch (DataFrame, Arrow table or schema) without the
        declared identifiers it carries (:func:`._attacker_model.drop_identifiers`)."""
        from ._attacker_model import drop_identifiers

        return drop_identifiers(table, self.identifiers)

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
        grouping = parse_grouping(d["grouping"], "result['grouping']")
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
            classes=tuple(json_scalar(c, "The class labels") for c in classes),
            schema=tuple(schema_of(reference_table)),
            fingerprint=fingerprint_table(reference_table),
            result=strict(d, ArtefactError),
            **{key: d[key] for key in SETTINGS},
            library_version=__version__,
            created_at=utc_iso(created_at),
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
        validate(data)
        # every field is its JSON key (containers are normalised by __post_init__)
        fields = {key: data.get(key) for key in KEYS + OPTIONAL_KEYS}
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
        names, kinds, dtypes, has_data = table_columns(table)
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

    def refuse_unseen_classes(self, table: Any) -> None:
        """``DataError`` naming the class values of the batch ``table`` (a DataFrame, an
        Arrow table, or a file path or URL) that the artefact never saw, with their rows.

        A release publishes only the classes it was learned on: a class no reference row
        had is no class of the release's domain, and k copies of one person's record
        under it would meet every count of k while no shuffle could separate them.
        """
        if not isinstance(table, pd.DataFrame) and not hasattr(table, "column_names"):
            from astrid_airflow.io import read_arrow

            table = read_arrow(table, [self.target])  # the one reader, as the shuffle's
        # as text: a class read from ARFF or CSV as '1' is the class 1 (the shuffle
        # codes classes within the batch, whatever their type)
        known = {str(c) for c in self.classes}
        values = [v for v in unique_values(table, self.target) if str(v) not in known]
        if not values:
            return
        column = table[self.target] if isinstance(table, pd.DataFrame) else \
            table.column(self.target).to_pandas()
        rows = column.astype(str).value_counts()
        unseen = {v: int(rows.get(str(v), 0)) for v in values}
        if unseen:
            from astrid_airflow._errors import DataError

            shown = ", ".join(f"{v!r} ({n} row{'s' * (n != 1)})"
                              for v, n in sorted(unseen.items(), key=lambda x: -x[1])[:10])
            raise DataError(f"The batch has class value(s) the artefact never saw: {shown}. "
                            "A release publishes only the classes it was learned on; learn "
                            "again on a reference that has them, or drop those rows.")
