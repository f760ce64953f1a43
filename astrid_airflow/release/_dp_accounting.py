"""The (ε, δ) budget of the synthesised factors: Gaussian mechanisms under zero-
concentrated differential privacy (zCDP; Bun and Steinke, "Concentrated Differential
Privacy: Simplifications, Extensions, and Lower Bounds", TCC 2016).

A Gaussian mechanism of L2 sensitivity Δ and noise σ is ρ-zCDP with ρ = Δ² / (2σ²);
ρ adds up under composition; ρ-zCDP implies (ρ + 2√(ρ ln(1/δ)), δ)-DP for every δ > 0
(their Prop. 1.3). The budget is converted once, ε and δ to a total ρ, split evenly
across the synthesised groups and, within a group, across its measurements. Neighbouring
tables differ by one row added or removed (unbounded DP): one row moves each count it
falls in by one.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from astrid_airflow._errors import RecipeError


def _real(x: object) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def check_budget(epsilon: object, delta: object, n_rows: int) -> tuple[float, float]:
    """``(ε, δ)`` as floats, or one ``RecipeError`` per bad setting: ε must be > 0 and
    δ in (0, 1/n) (a δ of 1/n or more allows publishing one row in the clear)."""
    if not _real(epsilon) or epsilon <= 0:
        raise RecipeError(f"Invalid epsilon: {epsilon!r}. The privacy budget must be a "
                          "number > 0.")
    if not _real(delta) or delta <= 0:
        raise RecipeError(f"Invalid delta: {delta!r}. Must be a number > 0.")
    if n_rows < 1 or delta >= 1.0 / n_rows:
        raise RecipeError(f"Invalid delta: {delta!r}. Must be below 1/n = "
                          f"{1.0 / max(n_rows, 1):.3g} for the reference's {n_rows} rows "
                          "(a larger delta allows one row to be published in the clear).")
    return float(epsilon), float(delta)


def rho_of(epsilon: float, delta: float) -> float:
    """The largest ρ whose ρ-zCDP implies (ε, δ)-DP: the root of
    ε = ρ + 2√(ρ ln(1/δ)), (√(ε + L) − √L)² with L = ln(1/δ)."""
    lg = math.log(1.0 / delta)
    return (math.sqrt(epsilon + lg) - math.sqrt(lg)) ** 2


def epsilon_of(rho: float, delta: float) -> float:
    """The ε of (ε, δ)-DP that ρ-zCDP implies."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """The noise σ that makes a Gaussian mechanism of L2 ``sensitivity`` ρ-zCDP."""
    return sensitivity / math.sqrt(2.0 * rho)


@dataclass(frozen=True)
class Budget:
    """A total (ε, δ) budget split evenly over ``n_groups`` synthesised groups."""

    epsilon: float
    delta: float
    n_groups: int

    @property
    def rho(self) -> float:
        return rho_of(self.epsilon, self.delta)

    @property
    def rho_per_group(self) -> float:
        return self.rho / self.n_groups

    def accounting(self) -> dict:
        """What the artefact records of the split (JSON)."""
        return {"epsilon": self.epsilon, "delta": self.delta, "definition": "zCDP",
                "neighbours": "one row added or removed",
                "rho": self.rho, "groups": self.n_groups,
                "rho_per_group": self.rho_per_group, "composition": "sum of rho",
                "conversion": "epsilon = rho + 2 sqrt(rho ln(1/delta))"}
