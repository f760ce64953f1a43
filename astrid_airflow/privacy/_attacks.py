"""Attack-based privacy risks of a released table (Giomi et al., PETS 2023).

The three attacks of Giomi, Boenisch, Wehmeyer and Tasnádi, "A Unified Framework for
Quantifying Privacy Risk in Synthetic Data", PoPETs 2023(2) — the method behind the
``anonymeter`` package — implemented here on encoded numpy arrays (no code taken from
it). Each attack is run twice with the same procedure: on *training* targets, rows of the
table the release was made from, and on *control* targets, rows of the same population
that did not go into the release. With success rates ``r_train`` and ``r_control``
(Wilson score estimates at 95 %), the risk is

    risk = (r_train - r_control) / (1 - r_control),

the share of the attacker's success that the release taught about *these* rows rather
than about the population (which is utility, not leakage). The interval is the Wilson
error of both rates propagated to the ratio, and risk and interval are clipped to [0, 1],
as in the paper's reference implementation.

Attacks (all vectorised; nearest neighbours searched in chunks of targets):

* singling-out — predicates built from the release that match exactly one released row;
  success when a predicate matches exactly one target-table row. Univariate predicates:
  a value occurring once in a column, ``<=`` the minimum, ``>=`` the maximum, ``isna``
  of a column with one missing value. Multivariate: a random released row and
  ``n_cols`` random columns; a numeric column gives ``>= v`` above the column median
  and ``<= v`` otherwise, other columns ``== v``.
* linkability — the attacker holds two disjoint column sets of the same people; for each
  target the nearest released row on each set; success when both are the same row.
* inference — the attacker knows some columns and guesses a secret column from the
  nearest released row; a numeric guess counts when ``|guess - secret| <= tolerance *
  |guess|`` (tolerance 0.05), other secrets must match exactly.

Distance: Gower-like, as in the paper — per column ``|a - b| / range`` for numeric
columns (range over every table involved) and ``0``/``1`` for categories; a missing
value is at distance 1 from anything (anonymeter gives 1 for two missing values too).
Ties between released rows are broken at random, for each query and each search, so a
tie never links two halves by the coincidence of a shared row order.

This module owns what the attacks share: their outcome (:class:`AttackRisk`), the
residual risk and its interval (:func:`residual_risk`, :func:`result`). The tables and
the neighbour search are in ``_attack_tables``; each attack has its own module
(``_singling_out``, ``_linkability``, ``_inference``, ``_class_from_column``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

#: Confidence level of every interval (the paper's 95 %).
CONFIDENCE = 0.95


@dataclass(frozen=True)
class AttackRisk:
    """Outcome of one attack, on training targets against control targets.

    Attributes
    ----------
    attack : {"singling_out", "linkability", "inference"}
    risk : float
        ``(r_train - r_control) / (1 - r_control)`` of the Wilson success rates, in [0, 1].
    ci : (float, float)
        95 % interval of ``risk`` (Wilson errors propagated, clipped to [0, 1]).
    n_attacks : int
        Attacks made on each side: targets sampled, or singling-out predicates asked
        for (predicates that could not be built count as failed attacks).
    secret : str, optional
        The column guessed (inference).
    variant : str, optional
        ``"univariate"``/``"multivariate"`` (singling-out), ``"cut_largest_group"``/
        ``"random_split"`` (linkability), ``"class"``/``"group_member"``/
        ``"class_from_one_column"`` (inference).
    aux_columns : tuple
        Columns the attacker knows (inference) or its two column sets (linkability).
    n_success, n_control_success, n_baseline_success : int
        Successful attacks on training targets, on control targets, and of a random
        guess (a random released row; for information).
    note : str
        What was sampled or adjusted, when anything was.
    shadow_releases, risk_sd : int and float, optional
        Pooled over that many shadow releases (counts summed; the interval also covers
        the releases' spread, ``risk_sd`` being the standard deviation of their risks);
        ``None`` for an attack on one release.
    """

    attack: str
    risk: float
    ci: tuple[float, float]
    n_attacks: int
    secret: str | None = None
    variant: str | None = None
    aux_columns: tuple = ()
    n_success: int = 0
    n_control_success: int = 0
    n_baseline_success: int = 0
    note: str = ""
    #: Shadow releases the attack was pooled over, and the spread of their risks.
    shadow_releases: int | None = None
    risk_sd: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: ``risk``, ``ci`` as ``[low, high]``, ``n_attacks``, ..."""
        out: dict[str, Any] = {"attack": self.attack, "risk": self.risk,
                               "ci": [self.ci[0], self.ci[1]], "n_attacks": self.n_attacks}
        if self.secret is not None:
            out["secret"] = self.secret
        if self.variant is not None:
            out["variant"] = self.variant
        if self.aux_columns:
            out["aux_columns"] = [list(a) if isinstance(a, tuple) else a
                                  for a in self.aux_columns]
        out.update(n_success=self.n_success, n_control_success=self.n_control_success,
                   n_baseline_success=self.n_baseline_success)
        if self.note:
            out["note"] = self.note
        if self.shadow_releases is not None:
            out.update(shadow_releases=self.shadow_releases, risk_sd=self.risk_sd)
        return out


# ------------------------------------------------------------------------ statistics

def _wilson(n_total: int, n_success: float) -> tuple[float, float]:
    """Wilson score centre and half-width at :data:`CONFIDENCE` (Wilson 1927)."""
    z = NormalDist().inv_cdf(0.5 * (1.0 + CONFIDENCE))
    z2 = z * z
    denom = n_total + z2
    rate = (n_success + 0.5 * z2) / denom
    var = n_success * (n_total - n_success) / n_total
    return rate, (z / denom) * math.sqrt(max(var, 0.0) + 0.25 * z2)


def residual_risk(n_attacks: int, n_success: float, n_control_success: float
                  ) -> tuple[float, tuple[float, float]]:
    """Risk and 95 % interval from success counts (Giomi et al., Sec. 4 and App. A).

    ``risk = (r_t - r_c) / (1 - r_c)`` with ``r_t``, ``r_c`` the Wilson centres of the
    training and control success rates; the half-width propagates both Wilson errors
    (first-order); point and bounds are clipped to [0, 1]. With no attack at all the
    risk is 0 with interval (0, 0): nothing could be attempted.

    >>> residual_risk(200, 200, 0)[0] > 0.98
    True
    """
    if n_attacks == 0:
        return 0.0, (0.0, 0.0)
    r_t, e_t = _wilson(n_attacks, n_success)
    r_c, e_c = _wilson(n_attacks, n_control_success)
    # Wilson centres are < 1 for finite n, so the ratio is always defined.
    value = (r_t - r_c) / (1.0 - r_c)
    err = math.hypot(e_t / (1.0 - r_c), e_c * (r_t - 1.0) / (1.0 - r_c) ** 2)

    def clip(x: float) -> float:
        return min(max(x, 0.0), 1.0)

    return clip(value), (clip(value - err), clip(value + err))


def result(attack: str, n: int, ok_t: int, ok_c: int, ok_b: int, **kw: Any) -> AttackRisk:
    risk, ci = residual_risk(n, ok_t, ok_c)
    if n and ok_c == n:
        # Nothing is left to learn beyond the population: the interval is uninformative.
        kw["note"] = "; ".join(x for x in (kw.get("note", ""), "the attack succeeded on "
                               "every control target: the residual risk cannot be "
                               "measured") if x)
    return AttackRisk(attack=attack, risk=risk, ci=ci, n_attacks=n, n_success=int(ok_t),
                      n_control_success=int(ok_c), n_baseline_success=int(ok_b), **kw)
