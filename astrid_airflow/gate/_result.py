"""What one gate run decided: :class:`GateResult`, its :class:`ExpectationOutcome` per
expectation, and where the run's validation JSON and Data Docs page are written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from astrid_airflow._errors import ParameterError

from ._policy import GatePolicy
from ._suite import join_path
from ._weaker import weaker_record


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation of one run: what was measured against what was allowed."""

    name: str
    category: str
    success: bool
    observed_value: Any
    threshold: Any
    details: dict = field(default_factory=dict)

    __hash__ = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "category": self.category, "success": self.success,
                "observed_value": self.observed_value, "threshold": self.threshold,
                "details": self.details}


@dataclass(frozen=True)
class GateResult:
    """Outcome of :func:`validate_surrogate`.

    Attributes
    ----------
    success : bool
        True when every expectation passed.
    expectations : tuple of ExpectationOutcome
        In suite order: privacy, utility, integrity.
    policy : GatePolicy
        The thresholds that were applied (stored policy plus run-time overrides).
    random_state : int
        Seed of the utility check's split and fits (drawn and recorded if not given).
    utility_source : str
        ``"computed"`` (``surrogate_utility`` ran) or ``"precomputed"`` (``metrics``).
    artefact : dict
        Target, grouping, fingerprint and location of the artefact.
    validation_json, data_docs : str or None
        Where the validation result JSON and the Data Docs HTML were written.
    suite : dict
        The stored suite the policy came from: ``source`` (``"stored"``, ``"written"``
        on first use, ``"built"`` without a store), ``path``, ``sha256`` of its bytes,
        ``binding`` (``"recorded"`` digest in the artefact, or ``"default"``),
        ``stored_policy`` and the run's ``overrides``. :attr:`thresholds` holds the
        thresholds the checks applied.
    surrogate_sha256 : str or None
        SHA-256 of the surrogate file's bytes that were judged (the same before and
        after the run); None for a DataFrame or a database table.
    allow_weaker_policy : bool or None
        Whether the caller passed the explicit flag for a policy weaker than the default
        (``--allow-weaker-policy``; None: a library call, which does not check).
        ``to_dict()`` also records ``weaker_than_default`` (each loosened privacy
        threshold with its default) and ``policy_note`` ("weaker than the default
        policy: ...", or None): see :mod:`._weaker`.
    """

    success: bool
    expectations: tuple
    policy: GatePolicy
    random_state: int
    utility_source: str
    artefact: dict
    validation_json: str | None = None
    data_docs: str | None = None
    suite: dict = field(default_factory=dict)
    surrogate_sha256: str | None = None
    allow_weaker_policy: bool | None = None

    __hash__ = None

    @property
    def weaker_than_default(self) -> dict[str, dict[str, Any]]:
        """The privacy thresholds this run's policy loosens, with the defaults
        (``{}`` for a policy at least as strict as the default; docs/gate.md)."""
        from ._weaker import weaker_fields

        return weaker_fields(self.policy)

    @property
    def thresholds(self) -> dict[str, Any]:
        """The threshold each policy parameter had in this run, as the checks applied it."""
        from ._registry import EXPECTATIONS

        out = {EXPECTATIONS[e.name][2]: e.threshold for e in self.expectations
               if e.name in EXPECTATIONS and EXPECTATIONS[e.name][2] is not None}
        for e in self.expectations:  # the integer parameter of the per-group checks
            if e.name in EXPECTATIONS and EXPECTATIONS[e.name][1] == "astrid.group_disclosure" \
                    and isinstance(e.details, Mapping) and "k" in e.details:
                out["disclosure_k"] = e.details["k"]
            if e.name in EXPECTATIONS and EXPECTATIONS[e.name][1] == "astrid.attack_risks" \
                    and isinstance(e.details, Mapping) and "attack_n" in e.details:
                out["attack_n"] = e.details["attack_n"]  # the attack checks' count
        return out

    @property
    def failed(self) -> list[str]:
        """Names of the expectations that failed."""
        return [e.name for e in self.expectations if not e.success]

    def category_success(self, category: str) -> bool:
        """Whether every expectation of ``category`` (privacy/utility/integrity) passed."""
        found = [e.success for e in self.expectations if e.category == category]
        if not found:
            raise ParameterError(f"Unknown category {category!r}.")
        return all(found)

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "expectations": [e.to_dict() for e in self.expectations],
            "failed": self.failed,
            "policy": self.policy.to_dict(),
            "random_state": self.random_state,
            "utility_source": self.utility_source,
            "artefact": self.artefact,
            "validation_json": self.validation_json,
            "data_docs": self.data_docs,
            "thresholds": self.thresholds,
            "suite": self.suite,
            "surrogate_sha256": self.surrogate_sha256,
            **weaker_record(self.policy, self.allow_weaker_policy),
        }


def result_paths(surrogate: str | os.PathLike | None, out_dir: str | os.PathLike | None
                 ) -> tuple[str, str] | None:
    """``(validation JSON, Data Docs HTML)`` paths for a surrogate, or None.

    Beside the surrogate by default (``out.parquet`` -> ``out.validation.json`` and
    ``out.validation.html``); in ``out_dir`` if given. A DataFrame surrogate without
    ``out_dir`` writes nothing.
    """
    if surrogate is None or isinstance(surrogate, pd.DataFrame):
        if out_dir is None:
            return None
        stem, directory = "surrogate", os.fspath(out_dir)
    else:
        text = os.fspath(surrogate)
        name = text.rstrip("/").rsplit("/", 1)[-1]
        stem = Path(name).stem if Path(name).suffix else name
        directory = os.fspath(out_dir) if out_dir is not None else (
            text.rstrip("/").rsplit("/", 1)[0] if "://" in text
            else os.path.dirname(os.path.abspath(text)))
    return (join_path(directory, f"{stem}.validation.json"),
            join_path(directory, f"{stem}.validation.html"))
