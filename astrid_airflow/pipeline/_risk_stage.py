"""The risk of a published surrogate, as an attacker who knows its recipe measures it.

``astrid risk`` is an adapter over :func:`measure_release_risk`: the tables are read and
checked here, the attacker's knowledge (the batch's rows) and the control rows are put
into the release's domain with the artefact's recipe, and the surrogate is read as that
domain's types (suppressed cells make an integer column float), as the gate reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RiskRequest:
    """One risk measurement.

    Attributes
    ----------
    original, surrogate : str or path-like
        The batch and its published surrogate (CSV, Parquet, ARFF; path or URL).
    artefact : str
        ``STORE/NAME@VERSION``, or an artefact file.
    control : str or path-like, optional
        Rows of the same population that did not go into the surrogate; None attacks a
        shadow release of half the batch.
    n_attacks : int
        Attacks per measure and side.
    random_state : int or None
        Seed of the attacks (drawn and reported when None).
    remedies : bool
        False: the surrogate is a raw release (no recipe applied to the batch).
    """

    original: Any
    surrogate: Any
    artefact: str
    control: Any = None
    n_attacks: int = 200
    random_state: int | None = None
    remedies: bool = True
    attacker_model: Any = None  # None: the one the artefact's release was chosen under


def measure_release_risk(request: RiskRequest) -> dict[str, Any]:
    """The :class:`~astrid_airflow.RiskReport` of ``request.surrogate`` as a dict, with
    the recipe applied (``remedies``) and the control rows' overlap with the batch.

    Raises ``DataError``/``SchemaMismatchError`` (bad or mismatched tables) and
    ``ParameterError`` (bad counts or seed) before any attack runs.
    """
    from astrid_airflow._validation import check_attack_count
    from astrid_airflow.io import csv_floats_like, read_table, suppressed_like
    from astrid_airflow.privacy import check_control, measure_risk
    from astrid_airflow.release import (
        load_artefact,
        release_attacker_model,
        release_recipe,
        remedied,
    )

    check_attack_count(request.n_attacks, "n_attacks")  # before any table is read
    artefact = load_artefact(request.artefact).artefact
    original, surrogate, control = _read_checked(request, artefact, read_table)
    columns, target = list(artefact.columns), artefact.target
    # control rows that are batch rows understate every risk: refused (on the rows as
    # given, before the recipe coarsens them; docs/privacy.md)
    overlap = None if control is None else check_control(original, control, columns)
    recipe = release_recipe(artefact, request.remedies)
    original = remedied(original[columns], recipe, target, artefact.grouping)
    if control is not None:
        control = remedied(control[columns], recipe, target, artefact.grouping)
    surrogate = suppressed_like(csv_floats_like(surrogate, request.surrogate, original),
                                original)
    report = measure_risk(
        original[columns], surrogate[columns], target=target, grouping=artefact.grouping,
        control=None if control is None else control[columns],
        n_attacks=request.n_attacks, random_state=request.random_state,
        attacker_model=release_attacker_model(artefact, request.attacker_model))
    return {**report.to_dict(), "remedies": None if recipe is None else recipe.to_dict(),
            "control_overlap": overlap}


def _read_checked(request: RiskRequest, artefact: Any, read_table: Any) -> tuple:
    """The three tables read: the batch and control of the artefact's schema, the
    surrogate with the artefact's columns, its rows and class counts the batch's."""
    from astrid_airflow._errors import AstridError, DataError

    original, _ = artefact.without_identifiers(read_table(request.original))
    surrogate = read_table(request.surrogate)
    control = artefact.without_identifiers(read_table(request.control))[0] \
        if request.control else None
    for what, table in (("original", original), ("control", control)):
        if table is not None:
            try:
                artefact.check_table(table)
            except AstridError as exc:
                raise type(exc)(f"--{what}: {exc}") from None
    columns, target = list(artefact.columns), artefact.target
    missing = [c for c in columns if c not in surrogate.columns]
    extra = [c for c in surrogate.columns if c not in columns]
    if missing or extra:
        raise DataError("--surrogate: " + "; ".join(
            [f"missing column(s) {missing}"] * bool(missing) +
            [f"unexpected column(s) {extra}"] * bool(extra)) + " of the artefact.")
    if len(surrogate) != len(original):
        raise DataError(f"--surrogate has {len(surrogate)} rows but --original has "
                        f"{len(original)}: it is not a surrogate of that table.")
    counts = (original[target].astype(str).value_counts().sort_index(),
              surrogate[target].astype(str).value_counts().sort_index())
    if not counts[0].equals(counts[1]):
        raise DataError(f"--surrogate's class counts differ from --original's: it is not "
                        f"a GoldenEye surrogate of that table (class {target!r}).")
    return original, surrogate, control
