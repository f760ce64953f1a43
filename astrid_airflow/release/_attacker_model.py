"""The attacker model: what an attacker may know about a person, and what must not be
learned.

A privacy officer declares each column's role, as in ARX (identifying,
quasi-identifying, sensitive, insensitive), sdcMicro (key and sensitive variables) and
anonymeter (``aux_cols`` and ``secret``):

* ``identifiers`` are never published: they are dropped;
* ``quasi_identifiers`` are what an attacker may know: per-group k-anonymity and class
  diversity hold on the quasi-identifier projection of every published group tuple;
* ``sensitive`` columns must not be learned: every published quasi-identifier
  projection shows at least ``l`` of their distinct values (the class is always
  sensitive, and is diverse by the class rule);
* every other column is insensitive, published as GoldenEye shuffles of its values.

With no declaration (``quasi_identifiers`` None) every column that is not declared an
identifier or sensitive is a quasi-identifier: the model of every release before roles
existed, under which a release is the same bytes for a seed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from astrid_airflow._errors import ParameterError

#: The roles, in the order the command line, the policy JSON and the outputs name them.
ROLES = ("identifiers", "quasi_identifiers", "sensitive")
#: Distinct values of a declared sensitive column every published projection shows.
SENSITIVE_DIVERSITY = 2
#: A column not declared known singles people out when at least this share of the rows
#: is unique on it alone, or on it together with the quasi-identifiers.
SINGLING_OUT_SHARE = 0.5


def parse_columns(text: str | Sequence[str] | None, role: str) -> tuple[str, ...] | None:
    """A role's columns from a comma-separated string or a list; None stays None."""
    if text is None:
        return None
    if isinstance(text, str):
        items = [c.strip() for c in text.split(",")]
        if any(not c for c in items):
            raise ParameterError(f"Invalid {role}: {text!r}. Give column names separated "
                                 "by commas, with no empty name.")
    elif isinstance(text, Iterable) and not isinstance(text, (bytes, Mapping)):
        items = list(text)
    else:
        raise ParameterError(f"Invalid {role}: {text!r}. Must be a list of column names.")
    if any(not isinstance(c, str) or not c for c in items):
        raise ParameterError(f"Invalid {role}: {items!r}. Column names must be non-empty "
                             "strings.")
    twice = sorted({c for c in items if items.count(c) > 1})
    if twice:
        raise ParameterError(f"Invalid {role}: {twice} named twice.")
    return tuple(items)


@dataclass(frozen=True)
class AttackerModel:
    """The roles of a table's columns (validated; see the module docstring).

    Examples
    --------
    >>> m = AttackerModel(identifiers=("id",), quasi_identifiers=("age", "sex"),
    ...                   sensitive=("creatinine",))
    >>> m.key_columns(["age", "creatinine", "marker"]), m.declared
    (['age'], True)
    >>> AttackerModel().key_columns(["age", "marker"])
    ['age', 'marker']
    >>> AttackerModel.from_dict(m.to_dict()) == m
    True
    """

    identifiers: tuple[str, ...] = ()
    quasi_identifiers: tuple[str, ...] | None = None
    sensitive: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for role in ROLES:
            value = parse_columns(getattr(self, role), role)
            object.__setattr__(self, role, () if value is None and role != "quasi_identifiers"
                               else value)
        seen: dict[str, str] = {}
        for role in ROLES:
            for column in getattr(self, role) or ():
                if column in seen:
                    raise ParameterError(f"Invalid attacker model: column {column!r} is "
                                         f"declared both in {seen[column]} and in {role}.")
                seen[column] = role

    @property
    def declared(self) -> bool:
        """Whether any role was declared (else: every column a quasi-identifier)."""
        return bool(self.identifiers or self.sensitive or self.quasi_identifiers is not None)

    def check_table(self, columns: Sequence[str], target: str) -> AttackerModel:
        """This model, checked against a table's ``columns`` and class ``target``."""
        columns = [str(c) for c in columns]
        for role in ROLES:
            unknown = sorted(set(getattr(self, role) or ()) - set(columns))
            if unknown:
                raise ParameterError(f"Invalid {role}: unknown column(s) {unknown}; the "
                                     f"table has {columns}.")
        for role in ("identifiers", "quasi_identifiers"):
            if target in (getattr(self, role) or ()):
                raise ParameterError(f"Invalid {role}: {target!r} is the class, which is "
                                     "always sensitive.")
        attributes = [c for c in columns if c != target]
        if attributes and not set(attributes) - set(self.identifiers):
            raise ParameterError("Invalid identifiers: every attribute is declared an "
                                 "identifier, so nothing would be published.")
        return self

    def is_key(self, column: str) -> bool:
        """Whether the attacker may know ``column`` (a quasi-identifier)."""
        if self.quasi_identifiers is None:
            return column not in self.identifiers and column not in self.sensitive
        return column in self.quasi_identifiers

    def key_columns(self, group: Iterable[str]) -> list[str]:
        """The quasi-identifiers among ``group``'s columns, in its order."""
        return [c for c in group if self.is_key(c)]

    def key_groups(self, groups: Iterable[Iterable[str]]) -> list[list[str]]:
        """Each group's quasi-identifier projection, the empty ones left out: the
        grouping an attacker's knowledge meets."""
        return [key for key in (self.key_columns(g) for g in groups) if key]

    def sensitive_columns(self, group: Iterable[str]) -> list[str]:
        """The declared sensitive columns among ``group``'s, in its order."""
        return [c for c in group if c in self.sensitive]

    def role_of(self, column: str, target: str | None = None) -> str:
        """``identifier``, ``quasi-identifier``, ``sensitive`` or ``insensitive``."""
        if column == target or column in self.sensitive:
            return "sensitive"
        if column in self.identifiers:
            return "identifier"
        return "quasi-identifier" if self.is_key(column) else "insensitive"

    def describe(self) -> str:
        """One line for outputs and reports: which model the guarantees hold under."""
        if not self.declared:
            return ("attacker model: none declared, so every column is a quasi-identifier "
                    "(the attacker may know all of them)")
        qi = ("every other column" if self.quasi_identifiers is None
              else ", ".join(self.quasi_identifiers) or "none")
        return (f"attacker model: identifiers {', '.join(self.identifiers) or 'none'} "
                f"(dropped); quasi-identifiers {qi}; sensitive "
                f"{', '.join(self.sensitive) or 'the class only'}")

    def to_dict(self) -> dict[str, Any]:
        return {"identifiers": list(self.identifiers),
                "quasi_identifiers": None if self.quasi_identifiers is None
                else list(self.quasi_identifiers),
                "sensitive": list(self.sensitive)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> AttackerModel:
        """A model from :meth:`to_dict` output (None: none declared); unknown keys are an
        error."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ParameterError(f"Invalid attacker model: {data!r}. Must be a mapping of "
                                 f"{list(ROLES)}.")
        unknown = sorted(set(data) - set(ROLES))
        if unknown:
            raise ParameterError(f"Invalid attacker model: unknown key(s) {unknown}; known: "
                                 f"{list(ROLES)}.")
        return cls(**{k: data[k] for k in ROLES if k in data})


def check_attacker_model(model: object) -> AttackerModel:
    """An attacker-model argument: None (none declared), a model or its dict."""
    if model is None:
        return AttackerModel()
    if isinstance(model, AttackerModel):
        return model
    return AttackerModel.from_dict(model)  # type: ignore[arg-type]


def release_attacker_model(artefact: Any, declared: object = None) -> AttackerModel:
    """The model a release of ``artefact`` is judged under: the one its recipe was
    fitted for (or its choice recorded), else ``declared`` (the gate's policy); both
    declared and different is bad input, since the recipe's remedies only hold under
    their own model."""
    recipe = getattr(artefact, "recipe", None)
    recorded = check_attacker_model(getattr(recipe, "attacker_model", None)
                                    or (getattr(artefact, "release", None) or {}).get(
                                        "attacker_model"))
    declared = check_attacker_model(declared)
    if recorded.declared and declared.declared and recorded != declared:
        raise ParameterError(f"The artefact's release was chosen under another attacker "
                             f"model ({recorded.describe()}) than the one declared "
                             f"({declared.describe()}); learn it again under the new one.")
    return recorded if recorded.declared else declared


def _unique_share(table: pd.DataFrame, columns: list[str]) -> float:
    if not len(table):
        return 0.0
    sizes = table.groupby(columns, dropna=False, sort=False)[columns[0]].transform("size")
    return float((sizes == 1).mean())


def singling_out_columns(table: pd.DataFrame, model: AttackerModel, target: str
                         ) -> list[dict[str, Any]]:
    """The columns a declared model leaves unknown to the attacker that single people
    out anyway: at least ``SINGLING_OUT_SHARE`` of the rows unique on the column alone,
    or on it with the quasi-identifiers when these alone are not. A careless
    declaration is then shown before anything is published, never taken as safe.
    Empty with no declaration (every column is then known, and protected as such).

    >>> t = pd.DataFrame({"age": [30, 40] * 20, "pin": range(40), "y": [0, 1] * 20})
    >>> [f["column"] for f in singling_out_columns(
    ...     t, AttackerModel(quasi_identifiers=("age",)), "y")]
    ['pin']
    """
    if not model.declared:
        return []
    known = [c for c in table.columns if c != target and model.is_key(c)]
    # the quasi-identifiers' own uniqueness is protected (k-anonymity on them): a column
    # is flagged for what it adds
    base = _unique_share(table, known) if known else 0.0
    out = []
    for c in table.columns:
        if c == target or model.is_key(c) or c in model.identifiers:
            continue
        alone = _unique_share(table, [c])
        with_known = _unique_share(table, [*known, c]) if known else alone
        if alone >= SINGLING_OUT_SHARE or (with_known >= SINGLING_OUT_SHARE
                                           and base < SINGLING_OUT_SHARE):
            out.append({"column": str(c), "role": model.role_of(c, target),
                        "unique_share": alone, "unique_share_with_known": with_known})
    return out


def drop_identifiers(table: Any, identifiers: Iterable[str]) -> tuple[Any, list[str]]:
    """``table`` (a pandas DataFrame, an Arrow table or schema) without the columns of
    ``identifiers`` it carries, and their names. A declared identifier is never
    published, so a batch that still carries one loses it before anything reads it (the
    stage that publishes says so); a table without them is returned as it is."""
    import pyarrow as pa

    if isinstance(table, pa.Schema):
        names = list(table.names)
    elif isinstance(table, pa.Table):
        names = list(table.column_names)
    else:
        names = [str(c) for c in table.columns]
    present = [c for c in identifiers if c in names]
    if not present:
        return table, []
    if isinstance(table, pa.Schema):
        return pa.schema([f for f in table if f.name not in present],
                         metadata=_metadata_without(table.metadata, present)), present
    if isinstance(table, pa.Table):
        kept = table.drop_columns(present)
        return kept.replace_schema_metadata(
            _metadata_without(kept.schema.metadata, present)), present
    return table.drop(columns=present), present


def _metadata_without(metadata: dict | None, dropped: list[str]) -> dict | None:
    """Arrow schema metadata whose column descriptions (pandas', and the SQL types of
    ``astrid.sql``) no longer describe ``dropped``: what was written for the batch would
    describe columns the surrogate does not have."""
    import json

    if not metadata:
        return metadata
    out = dict(metadata)
    for key in (b"pandas", b"astrid.sql"):
        if key not in out:
            continue
        try:
            described = json.loads(out[key])
            described["columns"] = [c for c in described["columns"]
                                    if c.get("name") not in dropped]
            out[key] = json.dumps(described).encode()
        except (ValueError, TypeError, KeyError, AttributeError):
            del out[key]  # unreadable: not carried over
    return out
