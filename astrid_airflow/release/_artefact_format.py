"""Schema version 1 of the artefact JSON: its keys, the strict validation of a decoded
artefact (types, fingerprint, files, table schema entries and the optional ``release``
dict) and the parsing of its grouping and times.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

from astrid_airflow._errors import ArtefactError, GroupingError, ParameterError, findings
from astrid_airflow.engine import Grouping

SCHEMA_VERSION = 1

# The settings of the run: fields an artefact copies from its result as they are.
SETTINGS = ("classifier", "scoring", "alpha", "n_search", "n_test", "random_state")
# The JSON keys of schema version 1, in the order they are written.
KEYS = ("schema_version", "grouping", "target", "classes", "schema", "fingerprint",
        "result", *SETTINGS, "library_version", "created_at")
# Optional keys (written after the others, only when set): ``files`` maps each file the
# store saved with the version (e.g. the gate's suite.json) to its SHA-256, so a file
# edited, replaced or deleted afterwards is detected (see ``_gate``).
OPTIONAL_KEYS = ("files", "release")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_KINDS = ("integer", "float", "boolean", "string", "datetime", "timedelta", "other")


# ---------------------------------------------------------------------------- validation

def utc_iso(value: str | _dt.datetime | None) -> str:
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


def parse_grouping(value: Any, what: str) -> Grouping:
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


def validate(d: Any) -> None:
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
        "missing key(s)": [k for k in KEYS if k not in d],
        "unknown key(s)": sorted(str(k) for k in d if k not in KEYS + OPTIONAL_KEYS)})
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
    grouping = parse_grouping(d["grouping"], "artefact grouping")
    try:
        grouping.check_partition_of([c for c in names if c != target])
    except GroupingError as exc:
        raise ArtefactError(f"Invalid artefact: {exc}") from None
    if target in grouping.columns:  # pragma: no cover - caught by check_partition_of
        raise ArtefactError("Invalid artefact: the target is in a group.")
    stored = d["result"].get("grouping")
    if stored is not None and parse_grouping(stored, "result grouping") != grouping:
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

    from ._recipe import ReleaseRecipe

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
            parsed = parse_grouping(grouping, "artefact grouping")
        except ArtefactError:
            parsed = None
        recipe.check_columns(attrs, parsed)
    except RecipeError as exc:
        raise ArtefactError(f"Invalid artefact release recipe: {exc}") from None
