"""Typed errors of the library.

Every error a user can cause derives from :class:`AstridError` (a ``ValueError``),
so the CLI can print one line and exit 2, and the operators can turn it into a
non-retryable Airflow failure.
"""

from __future__ import annotations

__all__ = [
    "AstridError",
    "DataError",
    "GroupingError",
    "ParameterError",
    "ArtefactError",
    "SchemaMismatchError",
    "StoreError",
    "GateError",
    "RecipeError",
]


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
