"""``AdaptiveConfig``: the settings of ASTRID's adaptive mode, validated once.

Adaptive mode (``astrid(..., adaptive=True)``) races the candidates of the search and
computes sequential Monte Carlo p-values (``_racing.py``, ``_sequential.py``;
docs/engine.md, "Adaptive mode"). The ``adaptive_*`` keywords of
:func:`~astrid_airflow.astrid` still work and are mapped into this object
(:meth:`AdaptiveConfig.from_keywords`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import (
    check_fraction,
    check_nonnegative,
    check_positive_int,
    dataclass_from_dict,
)

#: The ``astrid()`` keywords of the settings, by field name (a contract: CLI flags
#: ``--adaptive-risk`` ... and ``astrid(adaptive_risk=...)`` keep working).
ADAPTIVE_KEYWORDS = {
    "risk": "adaptive_risk",
    "delta": "adaptive_delta",
    "delta_sd": "adaptive_delta_sd",
    "batch": "adaptive_batch",
    "race_risk": "adaptive_race_risk",
    "race_batch": "adaptive_race_batch",
    "verify": "adaptive_verify",
}


@dataclass(frozen=True)
class AdaptiveConfig:
    """Settings of adaptive mode (frozen; validated on construction).

    Parameters
    ----------
    risk : float, default 0.01
        Bound on the probability that a sequential p-value decides differently from
        the exact test with the same number of permutations, in (0, 1).
    delta : float, default 0.01
        Indifference zone of the races: candidates whose mean score is within
        ``delta`` of the leader's are treated as ties, in [0, 1).
    delta_sd : float or None, default 1.0
        With a number, the zone is ``min(delta, delta_sd * s)``, ``s`` the Monte Carlo
        sd of a candidate's mean; None: ``delta`` alone.
    batch : int, default 10
        Permutations per sequential step.
    race_risk : float, default 0.2
        Error budget of one race (dropping a candidate that was best), in (0, 1).
    race_batch : int, default 5
        Rounds per racing step.
    verify : bool, default False
        Also run the exact computation and report where they differ (extra fits,
        reported apart from ``n_fits``).

    Examples
    --------
    >>> AdaptiveConfig(risk=0.05).batch
    10
    >>> import numpy as np
    >>> AdaptiveConfig(risk=np.float32(0.01)).risk == float(np.float32(0.01))
    True
    """

    risk: float = 0.01
    delta: float = 0.01
    delta_sd: float | None = 1.0
    batch: int = 10
    race_risk: float = 0.2
    race_batch: int = 5
    verify: bool = False

    def __post_init__(self) -> None:
        k = ADAPTIVE_KEYWORDS  # messages name the public keyword/flag
        set_ = object.__setattr__
        set_(self, "risk", check_fraction(self.risk, k["risk"]))
        set_(self, "race_risk", check_fraction(self.race_risk, k["race_risk"]))
        set_(self, "delta", check_fraction(self.delta, k["delta"], zero=True))
        if self.delta_sd is not None:
            try:
                set_(self, "delta_sd", check_nonnegative(self.delta_sd, k["delta_sd"]))
            except ParameterError:
                raise ParameterError(f"Invalid {k['delta_sd']}: {self.delta_sd!r}. Must be "
                                     "a finite number >= 0, or None.") from None
        set_(self, "batch", check_positive_int(self.batch, k["batch"]))
        set_(self, "race_batch", check_positive_int(self.race_batch, k["race_batch"]))
        set_(self, "verify", bool(self.verify))

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict of every field."""
        return asdict(self)

    @classmethod
    def from_keywords(cls, base: AdaptiveConfig | None = None, /,
                      **keywords: Any) -> AdaptiveConfig:
        """``base`` (default settings if None) with ``adaptive_*`` keywords applied.

        Unknown keywords raise ``TypeError`` as an unknown argument of ``astrid()``
        would.
        """
        by_keyword = {v: f for f, v in ADAPTIVE_KEYWORDS.items()}
        unknown = sorted(k for k in keywords if k not in by_keyword)
        if unknown:
            raise TypeError(f"astrid() got unexpected keyword argument(s) {unknown}")
        changes = {by_keyword[k]: v for k, v in keywords.items()}
        return replace(base or cls(), **changes) if changes else (base or cls())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AdaptiveConfig:
        """Build from :meth:`to_dict` output; unknown keys are an error."""
        return dataclass_from_dict(cls, data, "adaptive settings")
