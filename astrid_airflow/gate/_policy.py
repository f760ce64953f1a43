"""The gate's policy: every threshold of the release gate in one frozen object.

:class:`GatePolicy` holds the privacy, utility and integrity thresholds (the suite's
``$PARAMETER`` values) and the attack and utility settings; ``docs/gate.md`` gives
each field's meaning and default.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from astrid_airflow._errors import ParameterError
from astrid_airflow._validation import (
    check_attack_count,
    check_positive_int,
    dataclass_from_dict,
)
from astrid_airflow.io import load_json
from astrid_airflow.release import MAX_SUPPRESSED_SHARE, ROLES, AttackerModel

SUITE_FILE = "suite.json"
SUITE_NAME = "astrid_gate"
SUITE_FORMAT = 1
#: Suite parameter naming the bound original table (see ``_checks.bind_reference``).
REFERENCE_PARAMETER = "astrid_reference"
#: Larger originals use a stratified subsample of this many rows for the utility check.
UTILITY_MAX_ROWS = 20_000
UTILITY_MAX_REPEATS = 20  # splits of a small table's utility check (GatePolicy.utility_test_rows)
THRESHOLD_FIELDS = ("max_intact", "max_largest_group_unique_share", "max_accuracy_drop",
               "max_share_below_k", "max_class_disclosure_share", "max_linkage_excess",
               "max_singling_out_risk", "max_linkability_risk", "max_inference_risk",
               "max_class_from_one_column_risk", "max_suppressed_share")
COUNT_FIELDS = ("disclosure_k", "attack_n")  # integer suite parameters
#: Bounds of the policy's counts: each split of the utility check refits the
#: classifier, so repeats beyond these only cost time (the standard error is recorded).
MAX_UTILITY_REPEATS = 100
MAX_UTILITY_TEST_ROWS = 1_000_000
MAX_DISCLOSURE_K = 1_000




@dataclass(frozen=True)
class GatePolicy:
    """Thresholds of the gate.

    Parameters
    ----------
    max_intact : float, default 0.01
        Largest allowed intact-row proportion (the paper's P_anon): the share of the
        original's unique rows that appear unchanged in the surrogate.
    max_largest_group_unique_share : float, default 0.05
        Largest allowed share of rows whose values on the largest group's columns are
        unique in the table (linkage risk the intact-row figure misses); the same
        budget as the suppression's (it is the k = 2, largest-group, class-blind case
        of the per-group check).
    max_accuracy_drop : float, default 0.02
        Largest allowed ``accuracy_original - accuracy_surrogate`` on the same held-out
        original rows.
    classifier : str or dict, optional
        Classifier of the utility check (a preset such as ``"svm"`` or settings);
        default: the classifier the artefact was learned with.
    utility_repeats : int, default 3
        The fewest independent splits (and surrogates) the utility check averages over:
        the standard error needs the spread between splits, which one split's per-row
        figure misses when the classifier's own fit varies (docs/gate.md).
    utility_test_rows : int, default 2000
        Held-out rows the utility check scores in all: a small table gets as many
        splits as it takes to reach them (at most ``UTILITY_MAX_REPEATS``), see
        :meth:`utility_repeats_for`; one split of a small table would pass or fail a
        release at random (docs/gate.md).
    disclosure_k : int, default 5
        The k of the per-group k-anonymity check: a (group values, class) combination
        shared by fewer than k rows singles those rows out.
    max_share_below_k : float, default 0.0
        Largest allowed share of rows, in *any* group (singletons included), whose
        *published* group values (not missing in every column of the group) and class
        are shared by fewer than ``disclosure_k`` rows. 0: local suppression
        (``release/_suppression.py``) publishes such rows' group values as missing, so
        a release of the pipeline has none.
    max_class_disclosure_share : float, default 0.0
        Largest allowed share of rows, in any group, whose published group values occur
        in one class only (anyone knowing them learns the class: distinct l-diversity,
        l = 2). 0, as above.
    max_suppressed_share : float, default 0.05
        The suppression budget: the largest share of a batch's rows, per group, whose
        group values a release may publish as missing. ``astrid shuffle`` refuses a
        batch that needs more; the per-group checks show the share beside their count.
    max_linkage_excess : float, default 0.03
        For every pair of groups, how far the share of rows still linked as in the
        original may exceed its expectation under independent within-class shuffles
        (the tolerance is this or 6 standard deviations, whichever is larger).
    attack_n : int, default 500
        Attacks per attack and side of the attack-based checks (fewer when the shadow
        release is smaller), run on a shadow release of the original (a GoldenEye
        surrogate of a random half, the other half as control; Giomi et al. 2023).
    max_singling_out_risk : float, default 0.2
        Largest allowed upper 95 % bound of the singling-out risk (univariate and
        multivariate predicates).
    max_linkability_risk : float, default 0.1
        Largest allowed upper 95 % bound of the linkability risk (the attacker's column
        sets cut the largest group, or split at random).
    max_inference_risk : float, default 0.5
        Largest allowed upper 95 % bound of the inference risk of every secret (the
        class from the attributes or from one column, each member of a multi-column
        group from its group-mates).
    max_class_from_one_column_risk : float, default 0.2
        Largest allowed upper 95 % bound of the risk of inferring the class from any
        single column, measured exactly on the release (every row attacked in the
        release and left out of it, the expected success over tied rows:
        :func:`~astrid_airflow.privacy.class_from_column_risks`). It is ``1 / m`` for
        a value shared by ``m`` rows of mixed classes (0 for one class only, which the
        class-disclosure check bounds), so 0.2 fails values shared by fewer than about
        five rows and raw continuous columns (close to 1); 0.2 is the target set for
        anonymeter's class-from-one-column inference (docs/privacy.md).

    Notes
    -----
    The privacy defaults are what a privacy officer can sign for a table published as
    is: k = 5 with a 5 % suppression budget is the usual k-anonymity rule (Hundepool et
    al., *Statistical Disclosure Control*, 2012), and the linkage tolerance and attack
    thresholds were set so that genuine shuffles and coarsened releases pass while raw
    ones fail (the figures: docs/privacy.md). The attack thresholds bound the *upper*
    95 % bound, so a noisy estimate fails safe. A raw GoldenEye surrogate of a table
    with continuous columns fails the per-group checks; :meth:`raw_release_demo` is the
    explicit policy for demonstrating such releases.

    Examples
    --------
    >>> p = GatePolicy(max_intact=0.005)
    >>> GatePolicy.from_dict(p.to_dict()) == p
    True
    >>> p.with_overrides(max_accuracy_drop=0.05).max_accuracy_drop
    0.05
    """

    max_intact: float = 0.01
    max_largest_group_unique_share: float = 0.05
    max_accuracy_drop: float = 0.02
    classifier: str | dict | None = None
    utility_repeats: int = 3
    utility_test_rows: int = 2000
    disclosure_k: int = 5
    max_share_below_k: float = 0.0
    max_class_disclosure_share: float = 0.0
    max_linkage_excess: float = 0.03
    attack_n: int = 500
    max_singling_out_risk: float = 0.2
    max_linkability_risk: float = 0.1
    max_inference_risk: float = 0.5
    max_class_from_one_column_risk: float = 0.2
    max_suppressed_share: float = MAX_SUPPRESSED_SHARE
    identifiers: tuple = ()
    quasi_identifiers: tuple | None = None
    sensitive: tuple = ()

    def __post_init__(self) -> None:
        model = AttackerModel(identifiers=self.identifiers,
                              quasi_identifiers=self.quasi_identifiers,
                              sensitive=self.sensitive)  # validated, lists as tuples
        for role in ROLES:
            object.__setattr__(self, role, getattr(model, role))
        for name in THRESHOLD_FIELDS:
            object.__setattr__(self, name, _check_threshold(getattr(self, name), name))
        for name in ("utility_repeats", "utility_test_rows", *COUNT_FIELDS):
            object.__setattr__(self, name, check_positive_int(_integral(getattr(self, name)),
                                                              name))
        for name, most in (("utility_repeats", MAX_UTILITY_REPEATS),
                           ("utility_test_rows", MAX_UTILITY_TEST_ROWS),
                           ("disclosure_k", MAX_DISCLOSURE_K)):
            if getattr(self, name) > most:  # a count that would run until killed
                raise ParameterError(f"Invalid {name}: {getattr(self, name)}. At most "
                                     f"{most:,}.")
        # k = 1 makes every class "at least k": it switched the k-anonymity check off
        check_positive_int(self.disclosure_k, "disclosure_k", minimum=2)
        check_attack_count(self.attack_n, "attack_n")
        c = self.classifier
        if c is not None and not (isinstance(c, str) and c) and not isinstance(c, dict):
            raise ParameterError(f"Invalid classifier: {c!r}. Must be a preset name, a "
                                 "settings dict or None (the artefact's classifier).")

    __hash__ = None  # may hold a dict

    @property
    def attacker_model(self) -> AttackerModel:
        """The roles of the columns (none declared: every column a quasi-identifier)."""
        return AttackerModel(identifiers=self.identifiers,
                             quasi_identifiers=self.quasi_identifiers,
                             sensitive=self.sensitive)

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict of every field; the attacker model's roles only when one is
        declared, so an undeclared policy is the same bytes as before roles existed."""
        out = asdict(self)
        for role in ROLES:
            out.pop(role)
        if self.attacker_model.declared:
            out.update(self.attacker_model.to_dict())
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GatePolicy:
        """Build a policy from :meth:`to_dict` output; unknown keys are an error."""
        return dataclass_from_dict(cls, data, "gate policy")

    @classmethod
    def from_json(cls, text: str) -> GatePolicy:
        return cls.from_dict(load_json(text, "gate policy JSON", error=ParameterError))

    def with_overrides(self, **overrides: Any) -> GatePolicy:
        """A copy with the given fields replaced (``None`` values are ignored)."""
        given = {k: v for k, v in overrides.items() if v is not None}
        known = {f.name for f in fields(self)}
        unknown = sorted(k for k in given if k not in known)
        if unknown:
            raise ParameterError(f"Unknown gate threshold(s) {unknown}; known: "
                                 f"{sorted(known)}.")
        return replace(self, **given)

    def utility_repeats_for(self, n_rows: int, test_size: float = 0.25) -> int:
        """Splits the utility check of an ``n_rows`` table averages over.

        Enough that the held-out rows scored add up to ``utility_test_rows``, at least
        ``utility_repeats`` and at most ``UTILITY_MAX_REPEATS`` (the release choice and
        the gate use the same count, so what the choice picks is what the gate judges).

        Examples
        --------
        >>> p = GatePolicy()
        >>> p.utility_repeats_for(690), p.utility_repeats_for(20_000)
        (12, 3)
        """
        n_test = max(1, math.ceil(test_size * int(n_rows)))
        needed = min(UTILITY_MAX_REPEATS, math.ceil(self.utility_test_rows / n_test))
        return max(self.utility_repeats, needed)

    def parameters(self) -> dict[str, float | int]:
        """The suite parameters (``$PARAMETER`` values) of the thresholds."""
        return {name: getattr(self, name) for name in (*THRESHOLD_FIELDS, *COUNT_FIELDS)}

    @classmethod
    def raw_release_demo(cls, **overrides: Any) -> GatePolicy:
        """The policy for demonstrating *raw* GoldenEye releases: per-group checks off.

        A GoldenEye surrogate publishes every value unchanged next to its class, so a
        table with continuous columns fails the default per-group checks (every exact
        value is its own equivalence class and discloses its class). This policy sets
        ``max_share_below_k``, ``max_class_disclosure_share`` and
        ``max_largest_group_unique_share`` and the attack checks'
        ``max_singling_out_risk``, ``max_linkability_risk``, ``max_inference_risk`` and
        ``max_class_from_one_column_risk``
        to 1.0 (report only) and keeps every other check, the intact-row proportion and
        the cross-group linkage included (a real shuffle passes those). **A release
        passed with it is NOT protected against singling out, class disclosure or
        linkage through a large group**; coarsen the values first.
        ``overrides`` replace further fields.

        Examples
        --------
        >>> GatePolicy.raw_release_demo().max_class_disclosure_share
        1.0
        """
        from ._presets import raw_release_demo_policy

        return cls(**raw_release_demo_policy(**overrides))


def _integral(value: object) -> object:
    """5.0 -> 5 (templated Airflow params and JSON arrive as floats); else unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _check_threshold(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)) or not 0.0 <= float(value) <= 1.0:
        raise ParameterError(f"Invalid {name}: {value!r}. Must be a number in [0, 1].")
    return float(value)


def check_policy(policy: object) -> GatePolicy:
    """A policy argument as a ``GatePolicy``: None is the default policy, a dict its
    fields; anything else is bad input (``ParameterError``)."""
    if policy is None:
        return GatePolicy()
    if isinstance(policy, GatePolicy):
        return policy
    if isinstance(policy, Mapping):
        return GatePolicy.from_dict(policy)
    raise ParameterError(f"Invalid policy: {policy!r}. Must be a GatePolicy, a dict of "
                         "thresholds or None.")
