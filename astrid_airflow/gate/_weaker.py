"""Policies weaker than the default: named, refused unless asked for, and recorded.

A gate policy decides what a release may disclose. One that loosens any privacy
threshold of the default policy (a larger ``max_*`` share or risk, a smaller
``disclosure_k``) must not pass silently: the CLI commands and operators that take a
policy refuse it unless ``--allow-weaker-policy`` / ``allow_weaker_policy=True`` is
given, and the learn output, the gate's result, its Data Docs page, the receipt and
the release record say ``weaker than the default policy: ...`` with every loosened
field (docs/gate.md). Utility (``max_accuracy_drop``), the classifier and the attack
count are not privacy thresholds: a smaller ``attack_n`` widens the intervals, whose
upper bounds the checks compare, so it fails safe.

Kept apart from ``_gate`` (and free of pandas/GX) so the operators and the release
record can name a weakened policy cheaply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from astrid_airflow._errors import ParameterError

#: Privacy thresholds for which a larger value is weaker, with their defaults (the
#: ``GatePolicy`` defaults; ``tests/project/test_hardening.py`` checks they agree).
LARGER_IS_WEAKER: dict[str, float] = {
    "max_intact": 0.01,
    "max_largest_group_unique_share": 0.05,
    "max_share_below_k": 0.0,  # published rows: 0 by construction
    "max_class_disclosure_share": 0.0,
    "max_linkage_excess": 0.03,
    "max_singling_out_risk": 0.2,
    "max_linkability_risk": 0.1,
    "max_inference_risk": 0.5,
    "max_class_from_one_column_risk": 0.2,
    "max_suppressed_share": 0.05,
}
#: Privacy thresholds for which a smaller value is weaker.
SMALLER_IS_WEAKER: dict[str, int] = {"disclosure_k": 5}
#: The words every record of a weakened policy starts with.
WEAKER_PREFIX = "weaker than the default policy: "


def weaker_fields(policy: Mapping[str, Any] | Any) -> dict[str, dict[str, Any]]:
    """``{field: {"policy": value, "default": default}}`` for each privacy threshold of
    ``policy`` (a ``GatePolicy``, its dict, or a dict of some fields) looser than the
    default; fields absent from a dict, or not numbers, are not compared.

    >>> weaker_fields({"max_intact": 0.5, "disclosure_k": 5, "max_accuracy_drop": 1})
    {'max_intact': {'policy': 0.5, 'default': 0.01}}
    """
    values = policy.to_dict() if hasattr(policy, "to_dict") else dict(policy or {})
    out: dict[str, dict[str, Any]] = {}
    for name, default in {**LARGER_IS_WEAKER, **SMALLER_IS_WEAKER}.items():
        value = values.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        looser = value > default if name in LARGER_IS_WEAKER else value < default
        if looser:
            out[name] = {"policy": value, "default": default}
    return out


def weaker_note(policy: Mapping[str, Any] | Any) -> str | None:
    """``"weaker than the default policy: max_intact 0.5 (default 0.01), ..."`` or None.

    >>> weaker_note({"disclosure_k": 2})
    'weaker than the default policy: disclosure_k 2 (default 5)'
    >>> weaker_note({}) is None
    True
    """
    fields = weaker_fields(policy)
    if not fields:
        return None
    return WEAKER_PREFIX + ", ".join(f"{name} {v['policy']:g} (default {v['default']:g})"
                                     for name, v in fields.items())


def weaker_record(policy: Mapping[str, Any] | Any, allowed: bool | None) -> dict[str, Any]:
    """What a result or record keeps about a weakened policy: the loosened fields, the
    note, and whether the caller passed the explicit flag (None: not asked, a library
    call)."""
    return {"weaker_than_default": weaker_fields(policy), "policy_note": weaker_note(policy),
            "allow_weaker_policy": allowed}


def check_weaker_policy(policy: Mapping[str, Any] | Any, allowed: bool | None, *,
                        flag: str = "--allow-weaker-policy (operators: "
                                    "allow_weaker_policy=True)") -> None:
    """Raise ``ParameterError`` if ``policy`` (what the caller gave) is weaker than the
    default and ``allowed`` is False; ``None`` (a library call) does not check.

    >>> try:
    ...     check_weaker_policy({"max_intact": 1.0}, False)
    ... except ParameterError as exc:
    ...     print(str(exc)[:78])
    The gate policy is weaker than the default policy: max_intact 1 (default 0.01)
    """
    if allowed is not False:
        return
    note = weaker_note(policy)
    if note:
        raise ParameterError(f"The gate policy is {note}; pass {flag} to use it (it is "
                             "recorded with the result).")


def check_stored_policy(stored: Any, effective: Any, allowed: bool | None) -> None:
    """Raise ``ParameterError`` if the artefact's stored policy is weaker than the default,
    the policy in force still is, and ``allowed`` is False (the CLI and the operators
    without the flag): a store writer must not loosen the gate silently, signed or not."""
    note = weaker_note(stored)
    if allowed is False and note and weaker_note(effective):
        raise ParameterError(f"The artefact's stored gate policy is {note}; pass "
                             "--allow-weaker-policy (operators: allow_weaker_policy=True) "
                             "to gate under it, or give a policy that restores the default.")
