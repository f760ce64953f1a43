"""Typed errors of the library.

Every error a user can cause derives from :class:`AstridError` (a ``ValueError``),
so the CLI can print one line and exit 2, and the operators can turn it into a
non-retryable Airflow failure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


class AstridError(ValueError):
    """Base class of every error caused by input the user can fix."""


class DataError(AstridError):
    """The table is unusable: missing target, unreadable file, too few rows..."""


class ParameterError(AstridError):
    """A parameter is out of range or of the wrong type."""


class GroupingError(AstridError):
    """A grouping is not a partition of the table's attributes."""


class ArtefactError(AstridError):
    """An artefact is corrupt, truncated or of an unknown schema version."""


class SchemaMismatchError(ArtefactError):
    """A table does not match the schema recorded in an artefact."""


class StoreError(AstridError):
    """The artefact store cannot be read or written as asked."""


class GateError(AstridError):
    """The quality gate cannot be evaluated (not: a gate that failed)."""


class RecipeError(ParameterError):
    """A release recipe is malformed or does not fit the table it is applied to."""


class SuppressionBudgetError(RecipeError):
    """A batch needs more local suppression than the policy's ``max_suppressed_share``:
    the shuffle refuses it and publishes nothing."""


class IntactBudgetError(RecipeError):
    """A batch keeps more intact rows than the policy's ``max_intact`` after the
    shuffle's within-class swaps: the shuffle refuses it and publishes nothing."""


class ReleaseError(AstridError):
    """A release is refused: failed or stale gate receipt, or an archive it would change."""


class BudgetError(AstridError):
    """A run's estimated time exceeds its budget (``max_seconds``); nothing was run."""


# ------------------------------------------------------------------ message helpers

#: Longest message the CLI prints (a readable line; the rest is counted, not shown).
MAX_MESSAGE_CHARS = 1000


def short_list(values: object, limit: int = 10) -> str:
    """``repr`` of a list of values for a message, the tail counted instead of shown.

    Every message that lists values (labels, columns, categories) uses this, so a float
    target with 1,000 distinct values still gives one readable line.

    >>> short_list(list(range(12)), limit=3)
    '[0, 1, 2] … and 9 more'
    """
    items = list(values)  # type: ignore[call-overload]
    if len(items) <= limit:
        return repr(items)
    return f"{items[:limit]!r} … and {len(items) - limit} more"


def findings(lead: str, found: Mapping[str, object]) -> str | None:
    """``"<lead>: <label> <values>; ...."`` naming every non-empty finding, else None.

    For checks that report every difference at once (missing and unknown keys or
    columns) instead of stopping at the first.

    >>> findings("Invalid artefact", {"missing key(s)": ["alpha"], "unknown key(s)": []})
    "Invalid artefact: missing key(s) ['alpha']."
    """
    parts = [f"{label} {values}" for label, values in found.items() if values]
    return f"{lead}: " + "; ".join(parts) + "." if parts else None


def one_line(text: object, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` on one line (line breaks folded) of at most about ``limit`` characters."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit].rstrip()} … ({len(flat) - limit} more characters)"


def os_error_message(exc: OSError) -> str:
    """One line for an ``OSError`` (disk full, symlink loop, permission...)."""
    what = exc.strerror or type(exc).__name__
    names = [repr(os.fspath(f)) for f in (exc.filename, exc.filename2) if f is not None]
    detail = str(exc) if not exc.strerror else ""
    return one_line(" ".join([what + (":" if names or detail else ""), *names, detail]).strip())
