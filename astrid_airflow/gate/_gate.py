"""The release gate: a Great Expectations suite built from an artefact plus a policy.

Nothing is published unless the surrogate passes the gate. The suite (the checks of
:mod:`._checks`, run by the GX classes of :mod:`.expectations`, with the thresholds
as GX ``$PARAMETER`` suite parameters) is
stored as ``suite.json`` beside the artefact version, so every run applies the same
rules and reviewers can read them. The stored suite is bound to its version by a digest
(``artefact.json`` records its SHA-256; :func:`verify_suite`), and only its *policy* is
used: the suite that runs is rebuilt from the artefact, so the thresholds of one run come
from one place, that policy overridden by whatever the caller passes.
:func:`validate_surrogate` runs it on a surrogate, writes the validation result JSON
and an offline-readable Data Docs page beside the surrogate, and returns a
:class:`GateResult`. ``docs/gate.md`` describes every expectation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import AstridError, DataError, GateError, ParameterError, StoreError
from astrid_airflow._validation import (
    check_attack_count,
    check_positive_int,
    dataclass_from_dict,
    fresh_seed,
)
from astrid_airflow.io import load_json
from astrid_airflow.io import plain as _plain
from astrid_airflow.release import MAX_SUPPRESSED_SHARE

from ._weaker import check_weaker_policy, weaker_record

SUITE_FILE = "suite.json"
SUITE_NAME = "astrid_gate"
SUITE_FORMAT = 1
#: Suite parameter naming the bound original table (see ``_checks.bind_reference``).
REFERENCE_PARAMETER = "astrid_reference"
#: Larger originals use a stratified subsample of this many rows for the utility check.
UTILITY_MAX_ROWS = 20_000
UTILITY_MAX_REPEATS = 20  # splits of a small table's utility check (GatePolicy.utility_test_rows)
_THRESHOLDS = ("max_intact", "max_largest_group_unique_share", "max_accuracy_drop",
               "max_share_below_k", "max_class_disclosure_share", "max_linkage_excess",
               "max_singling_out_risk", "max_linkability_risk", "max_inference_risk",
               "max_class_from_one_column_risk", "max_suppressed_share")
_COUNTS = ("disclosure_k", "attack_n")  # integer suite parameters


# ----------------------------------------------------------------------------- policy

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
        unique in the table (linkage risk the intact-row figure misses). It used to
        default to 1.0, which could never fail; it is now the same budget as
        ``max_share_below_k`` (it is the k = 2, largest-group, class-blind case of it).
    max_accuracy_drop : float, default 0.02
        Largest allowed ``accuracy_original - accuracy_surrogate`` on the same held-out
        original rows.
    classifier : str or dict, optional
        Classifier of the utility check (a preset such as ``"svm"`` or settings);
        default: the classifier the artefact was learned with.
    utility_repeats : int, default 1
        The fewest independent splits (and surrogates) the utility check averages over.
    utility_test_rows : int, default 2000
        Held-out rows the utility check scores in all: a small table gets as many
        splits as it takes to reach them (at most ``UTILITY_MAX_REPEATS``), see
        :meth:`utility_repeats_for`. One split of a table of 700 rows scores 175 rows,
        an accuracy difference with a standard error of about 0.03 — more than the
        0.02 tolerance, so one split would pass or fail a release at random.
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
        five rows and raw continuous columns (close to 1). The 0.2 is
        issue 17's target for anonymeter's class-from-one-column inference.

    Notes
    -----
    The privacy defaults are what a privacy officer can sign for a table published as
    is (docs/privacy.md): k = 5 with a 5 % budget is the usual k-anonymity rule with a
    suppression limit (Hundepool et al., *Statistical Disclosure Control*, 2012), the
    same 5 % bounds class disclosure, and the linkage tolerance (0.03, or 6 sd) let
    none of ~140 000 simulated genuine pair shuffles of seven UCI tables fail, while a
    release with one column shuffled and the rest aligned exceeds its expectation by
    0.7-1.0 (docs/privacy.md). A raw GoldenEye
    surrogate of a table with continuous columns fails the per-group checks (every
    exact value is its own equivalence class); :meth:`raw_release_demo` is the explicit
    policy for demonstrating such releases.

    The attack thresholds bound the *upper* 95 % bound, so a noisy estimate fails safe.
    They were set on shadow releases of vehicle, diabetes, credit-a and the synthetic
    table with 500 attacks (docs/privacy.md): releases with values coarsened to five
    levels reach at most 0.06 (singling-out), 0.02 (linkability) and 0.29 (inference:
    the interval of a relative risk widens as ``1 / (1 - r_control)`` when the secret is
    predictable from the population), while raw releases reach 0.67-1.0, 0.36-0.42 with
    vehicle's 15-column group, and 0.73-1.0.
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
    utility_repeats: int = 1
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

    def __post_init__(self) -> None:
        for name in _THRESHOLDS:
            object.__setattr__(self, name, _check_threshold(getattr(self, name), name))
        for name in ("utility_repeats", "utility_test_rows", *_COUNTS):
            object.__setattr__(self, name, check_positive_int(_integral(getattr(self, name)),
                                                              name))
        # k = 1 makes every class "at least k": it switched the k-anonymity check off
        check_positive_int(self.disclosure_k, "disclosure_k", minimum=2)
        check_attack_count(self.attack_n, "attack_n")
        c = self.classifier
        if c is not None and not (isinstance(c, str) and c) and not isinstance(c, dict):
            raise ParameterError(f"Invalid classifier: {c!r}. Must be a preset name, a "
                                 "settings dict or None (the artefact's classifier).")

    __hash__ = None  # may hold a dict

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict of every field."""
        return asdict(self)

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
        (12, 1)
        """
        n_test = max(1, math.ceil(test_size * int(n_rows)))
        needed = min(UTILITY_MAX_REPEATS, math.ceil(self.utility_test_rows / n_test))
        return max(self.utility_repeats, needed)

    def parameters(self) -> dict[str, float | int]:
        """The suite parameters (``$PARAMETER`` values) of the thresholds."""
        return {name: getattr(self, name) for name in (*_THRESHOLDS, *_COUNTS)}

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
        linkage through a large group**; coarsen the values first (issue 17).
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


# ------------------------------------------------------------------------------ suite

def suite_expectations(artefact: Any) -> list[dict[str, Any]]:
    """The gate's expectation specs for ``artefact``, in suite (and report) order.

    This is the one list every suite is built from. To add a check: give it a module in
    ``expectations/`` (its class declares category, metric and policy parameter, which
    ``_registry.EXPECTATIONS`` collects), list the module in ``_registry``, and give
    its kwargs in :func:`_kwargs_of` below; a new threshold is also a
    :class:`GatePolicy` field listed in ``_THRESHOLDS`` (``_COUNTS`` for an integer one
    such as ``disclosure_k``).
    Thresholds are always ``{"$PARAMETER": name}``: their values come from the policy
    when the suite runs, never from the suite itself.
    """
    from ._registry import EXPECTATIONS

    kwargs = _kwargs_of(artefact)
    unknown = [name for name in EXPECTATIONS if name not in kwargs]
    if unknown:  # a check registered without its kwargs: a programming error
        raise GateError(f"No suite kwargs for expectation(s) {unknown}.")
    out = []
    for name, (category, metric, parameter) in EXPECTATIONS.items():
        kw = dict(kwargs[name])
        if parameter is not None:
            kw["threshold"] = {"$PARAMETER": parameter}
        out.append({"type": name, "kwargs": kw,
                    "meta": {"category": category, "metric": metric,
                             "parameter": parameter}})
    return out


def _kwargs_of(artefact: Any) -> dict[str, dict[str, Any]]:
    """kwargs (besides the threshold) of each expectation, by GX type name."""
    grouping = artefact.grouping.to_list()
    ref = {"$PARAMETER": REFERENCE_PARAMETER}
    return {
        "expect_surrogate_intact_row_proportion_to_be_at_most": {"reference": ref},
        "expect_surrogate_largest_group_unique_share_to_be_at_most": {"grouping": grouping},
        "expect_surrogate_group_share_below_k_to_be_at_most":
            {"reference": ref, "grouping": grouping, "k": {"$PARAMETER": "disclosure_k"}},
        "expect_surrogate_group_class_disclosure_share_to_be_at_most":
            {"reference": ref, "grouping": grouping, "k": {"$PARAMETER": "disclosure_k"}},
        "expect_surrogate_cross_group_linkage_to_be_at_most_expected":
            {"reference": ref, "grouping": grouping},
        **{name: {"reference": ref, "grouping": grouping, "n": {"$PARAMETER": "attack_n"}}
           for name in ("expect_surrogate_singling_out_risk_to_be_at_most",
                        "expect_surrogate_linkability_risk_to_be_at_most",
                        "expect_surrogate_inference_risk_to_be_at_most")},
        "expect_surrogate_class_from_one_column_risk_to_be_at_most":
            {"reference": ref, "grouping": grouping},
        "expect_surrogate_accuracy_drop_to_be_at_most": {"reference": ref},
        "expect_surrogate_schema_to_match_original": {"reference": ref},
        "expect_surrogate_row_count_to_match_original": {"reference": ref},
        "expect_surrogate_class_column_to_be_unchanged": {"reference": ref},
        "expect_surrogate_column_values_to_match_original_per_class": {"reference": ref},
        "expect_surrogate_groups_to_match_original_per_class":
            {"reference": ref, "groups": grouping},
    }


def build_suite(artefact: Any, policy: GatePolicy | None = None) -> dict[str, Any]:
    """The gate's expectation suite for ``artefact``, as GX suite JSON.

    Thresholds are ``{"$PARAMETER": name}`` references filled from the policy when the
    suite runs; the policy itself is stored in ``meta["astrid"]["policy"]``. The
    artefact's grouping and class column are fixed in the suite. Building it does not
    import GX; :func:`validate_surrogate` loads it into GX (which checks it).

    Parameters
    ----------
    artefact : GroupingArtefact
    policy : GatePolicy, optional
        Default thresholds (``GatePolicy()`` if omitted).

    Returns
    -------
    dict
        ``{"name", "expectations", "meta", "notes"}``; each expectation has ``type``,
        ``kwargs`` and ``meta`` (its category and policy parameter), from
        :func:`suite_expectations`.
    """
    policy = _check_policy(policy)
    return {
        "name": SUITE_NAME,
        "expectations": suite_expectations(artefact),
        "meta": {"astrid": {
            "suite_format": SUITE_FORMAT,
            "policy": policy.to_dict(),
            "artefact": _artefact_binding(artefact),
        }},
        "notes": "astrid-airflow release gate: privacy, utility and integrity of a "
                 "GoldenEye surrogate against its original (docs/gate.md).",
    }


def _artefact_binding(artefact: Any) -> dict[str, Any]:
    return {"target": artefact.target, "grouping": artefact.grouping.to_list(),
            "fingerprint": dict(artefact.fingerprint), "created_at": artefact.created_at}


def _suite_bytes(suite: Mapping[str, Any]) -> bytes:
    return (json.dumps(suite, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def suite_digest(suite: Mapping[str, Any]) -> str:
    """SHA-256 of the bytes a suite is stored as (what ``artefact.files`` records)."""
    return hashlib.sha256(_suite_bytes(suite)).hexdigest()


def gate_extra_files(artefact: Any, policy: GatePolicy | None = None) -> dict[str, bytes]:
    """``{"suite.json": bytes}`` for ``ArtefactStore.save(..., extra_files=...)``.

    The store records the file's SHA-256 in the saved ``artefact.json``, which binds the
    suite (and its policy) to that version: see :func:`verify_suite`.
    """
    return {SUITE_FILE: _suite_bytes(build_suite(artefact, policy))}


def save_suite(location: Any, suite: Mapping[str, Any]) -> str:
    """Add ``suite.json`` to an artefact's version directory, atomically, once.

    ``location`` is the :class:`~astrid_airflow.release._store.ArtefactLocation` of a loaded
    artefact. An existing suite is never replaced (versions are immutable): a
    ``StoreError`` says so. A version saved without a suite records no digest for one,
    so the only suite it accepts is the default one (:func:`verify_suite`).
    """
    data = _suite_bytes(suite)
    if getattr(location, "root", None) is not None:
        from astrid_airflow.release import ArtefactStore

        return ArtefactStore(location.root).add_file(location.name, location.version,
                                                     SUITE_FILE, data)
    from astrid_airflow.io import atomic_write_bytes

    return atomic_write_bytes(_join(location.directory, SUITE_FILE), data)


def _read_suite(path: str | os.PathLike) -> tuple[dict[str, Any], bytes, str]:
    """``(suite, raw bytes, shown path)`` of a ``suite.json`` (file or its directory)."""
    from astrid_airflow.io import MAX_JSON_BYTES, check_regular_file, url_to_fs

    text = os.fspath(path)
    try:
        fs, inner = url_to_fs(text)
        if fs.isdir(inner):
            text, inner = _join(text, SUITE_FILE), _join(inner, SUITE_FILE)
        check_regular_file(text, "Invalid gate suite")  # a FIFO would block for ever
        with fs.open(inner, "rb") as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)  # load_json refuses a larger one
    except FileNotFoundError:
        raise StoreError(f"No gate suite at {text!r}.") from None
    except OSError as exc:  # permission, symlink loop, I/O error: never "no suite yet"
        raise GateError(f"Cannot read the gate suite {text!r}: "
                        f"{exc.strerror or exc}.") from None
    data = load_json(raw, f"gate suite {text!r}", error=GateError)
    _check_suite(data, text)
    return data, raw, text


def load_suite(path: str | os.PathLike) -> dict[str, Any]:
    """Read a ``suite.json`` (file, or version directory holding one) and check its form.

    Whether it belongs to an artefact version is :func:`verify_suite`'s question.
    """
    return _read_suite(path)[0]


def _check_suite(data: Any, shown: str) -> None:
    astrid = data.get("meta", {}).get("astrid") if isinstance(data, Mapping) else None
    if not isinstance(astrid, Mapping) or not isinstance(data.get("expectations"), list):
        raise GateError(f"{shown} is not an astrid gate suite (no meta.astrid or "
                        "expectations).")
    if astrid.get("suite_format") != SUITE_FORMAT:
        raise GateError(f"{shown}: unknown suite_format {astrid.get('suite_format')!r}; "
                        f"supported: {SUITE_FORMAT}.")
    try:
        GatePolicy.from_dict(astrid.get("policy", {}))
    except ParameterError as exc:
        raise GateError(f"{shown}: {exc}") from None


def verify_suite(suite: Mapping[str, Any], raw: bytes, artefact: Any, *,
                 shown: str = SUITE_FILE) -> GatePolicy:
    """Check that a stored suite is the one of ``artefact``'s version; return its policy.

    The suite is bound to its artefact version by a digest: ``artefact.files`` records
    the SHA-256 of the ``suite.json`` saved with the version, and a version saved
    without one (older versions; artefacts outside a store) accepts only the default
    suite the gate writes itself. ``raw`` (the file's bytes) must hash to that digest,
    and the suite must describe this artefact. Any edit (a threshold written into an
    expectation, an expectation added or removed, another table's fingerprint, a
    weakened policy) is a ``GateError`` naming what differs.
    """
    recorded = (getattr(artefact, "files", None) or {}).get(SUITE_FILE)
    policy = GatePolicy.from_dict(suite["meta"]["astrid"]["policy"])
    default = build_suite(artefact)
    expected = recorded or suite_digest(default)
    if hashlib.sha256(raw).hexdigest() == expected:
        binding = suite["meta"]["astrid"].get("artefact")
        found = _differences(binding, _artefact_binding(artefact), "artefact")
        if found:  # saved with the version, but built for another artefact
            raise GateError(f"{shown} was built for another artefact: {_listed(found)}.")
        return policy
    # Name what differs: the structure against a rebuild with the file's own policy,
    # then (nothing else differing) the policy against the recorded or default one.
    found = _differences(dict(suite), build_suite(artefact, policy), "suite")
    if not recorded:
        found += _differences(policy.to_dict(), GatePolicy().to_dict(), "policy")
    if not found:  # same structure: the policy (or only the layout) was edited
        changed = {k: v for k, v in policy.to_dict().items()
                   if GatePolicy().to_dict()[k] != v}
        found = [f"its policy or layout is not what was saved with the version (sha256 "
                 f"{hashlib.sha256(raw).hexdigest()[:12]}…, recorded {expected[:12]}…); "
                 f"the file's policy sets {_short(changed) if changed else 'the defaults'}"]
    why = ("differs from the suite saved with the artefact version" if recorded else
           "is not the default suite (this artefact version records no suite digest)")
    hint = "" if recorded else (" Remove it to have the gate write the default suite "
                                "again, or save a new version with its suite.")
    raise GateError(f"{shown} {why}: {_listed(found)}.{hint}")


def _differences(found: Any, expected: Any, where: str) -> list[str]:
    """Paths at which two JSON values differ, described for a person."""
    if isinstance(found, Mapping) and isinstance(expected, Mapping):
        out = []
        for key in expected:
            if key not in found:
                out.append(f"{where}.{key} is missing")
        for key in found:
            if key not in expected:
                out.append(f"{where}.{key} is not expected (value {_short(found[key])})")
        for key in expected:
            if key in found:
                out += _differences(found[key], expected[key], f"{where}.{key}")
        return out
    if where == "suite.expectations" and isinstance(found, list) \
            and isinstance(expected, list):
        return _expectation_differences(found, expected)
    if found != expected or type(found) is not type(expected):
        return [f"{where} is {_short(found)}, expected {_short(expected)}"]
    return []


def _expectation_differences(found: list, expected: list) -> list[str]:
    types = [e.get("type") if isinstance(e, Mapping) else None for e in found]
    want = [e["type"] for e in expected]
    out = [f"expectation {t} is missing" for t in want if t not in types]
    out += [f"expectation {_short(t)} is not part of the gate" for t in types
            if t not in want]
    out += [f"expectation {t} appears {types.count(t)} times" for t in want
            if types.count(t) > 1]
    if out:
        return out
    if types != want:
        return [f"expectations are in another order: {types}"]
    for f, e in zip(found, expected):
        out += _differences(f, e, e["type"])
    return out


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _listed(found: list[str], shown: int = 3) -> str:
    more = f" (and {len(found) - shown} more)" if len(found) > shown else ""
    return "; ".join(found[:shown]) + more


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name if "://" in base else os.path.join(base, name)


def _check_policy(policy: object) -> GatePolicy:
    if policy is None:
        return GatePolicy()
    if isinstance(policy, GatePolicy):
        return policy
    if isinstance(policy, Mapping):
        return GatePolicy.from_dict(policy)
    raise ParameterError(f"Invalid policy: {policy!r}. Must be a GatePolicy, a dict of "
                         "thresholds or None.")


# ----------------------------------------------------------------------------- result

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
    return (_join(directory, f"{stem}.validation.json"),
            _join(directory, f"{stem}.validation.html"))


# ------------------------------------------------------------------------- validation

def validate_surrogate(
    original: pd.DataFrame | str | os.PathLike,
    surrogate: pd.DataFrame | str | os.PathLike,
    artefact: Any,
    *,
    policy: GatePolicy | Mapping[str, Any] | None = None,
    out_dir: str | os.PathLike | None = None,
    classifier: str | dict | None = None,
    random_state: int | None = None,
    metrics: Mapping[str, Any] | None = None,
    verbose: bool = False,
    remedies: bool = True,
    fs: Any = None,
    allow_weaker_policy: bool | None = None,
) -> GateResult:
    """Run the release gate on ``surrogate`` against ``original``.

    Parameters
    ----------
    original : DataFrame or path
        The table the surrogate was made from (reference table or a new batch). It must
        match the artefact's schema (``SchemaMismatchError`` otherwise: bad input, not a
        failed gate).
    surrogate : DataFrame or path
        The table to release. Its differences from the original are gate failures.
    artefact : GroupingArtefact, or a reference for ``load_artefact``
        (``artefact.json`` path, version directory, ``ROOT/NAME[@VERSION]``). With a
        stored artefact the suite is read from ``suite.json`` beside it (and written
        there, once, if missing, after every input was checked: bad input writes
        nothing).
    policy : GatePolicy or dict, optional
        A ``GatePolicy`` replaces the stored thresholds; a dict overrides some of them
        (e.g. ``{"max_intact": 0.005}``). Default: the policy stored with the suite.
    out_dir : path, optional
        Where to write ``<stem>.validation.json`` and ``<stem>.validation.html``;
        default beside the surrogate file (a DataFrame surrogate writes nothing).
    classifier : str or dict, optional
        Classifier of the utility check; overrides the policy's and the artefact's.
    random_state : int, optional
        Seed of the utility check; drawn (and recorded in the result) if omitted.
    metrics : mapping, optional
        Precomputed ``accuracy_original`` and ``accuracy_surrogate`` (e.g. the JSON of
        ``astrid shuffle --json``); they are then used instead of refitting. Privacy
        and integrity are always measured on the tables given.
    verbose : bool, default False
        Let Great Expectations log at DEBUG (it is kept at WARNING otherwise).
    remedies : bool, default True
        The surrogate is the artefact's *remedied* release (its recipe, issue 17): the
        original is put into the release's domain with the published recipe before
        every privacy and integrity check (the attacker is assumed to know the recipe,
        so the shadow release's targets and control rows are remedied too), and the
        utility check scores the remedied release on held-out real rows. ``False``
        judges a raw release (``--no-remedies``).
    fs : fsspec.AbstractFileSystem, optional
        An authenticated filesystem (Airflow's ``ObjectStoragePath.fs``) for the URLs of
        its protocol: the artefact reference, its suite and ``out_dir``. Default:
        fsspec's own credential chain.
    allow_weaker_policy : bool, optional
        False refuses (``ParameterError``) a ``policy`` that loosens any privacy
        threshold of the default policy; True accepts it; either is recorded in the
        result. None (the default, a library call) does not check; the result still
        names every loosened threshold (``policy_note``). Only the ``policy`` given is
        checked: a weaker stored policy was accepted when it was saved.

    Returns
    -------
    GateResult

    Raises
    ------
    GateError
        The gate could not be evaluated (a metric raised; a suite that is corrupt or not
        the one saved with the artefact version; a file that changed while judged).
    DataError
        Also: a surrogate file carrying more than the artefact's columns (index columns,
        metadata, unreferenced bytes...; see :mod:`._file_shape`).
    DataError, SchemaMismatchError, ArtefactError, ParameterError
        Bad input.

    Notes
    -----
    Utility is measured with :func:`~astrid_airflow.surrogate_utility`: the original is
    split into a training and a held-out part, a surrogate of the *training part* is
    made with the artefact's grouping, and classifiers trained on the training part and
    on its surrogate are scored on the same held-out real rows. The held-out rows never
    contribute to a scored surrogate, so rows left intact by the shuffle cannot leak
    into the score. The released file itself is tied to that grouping by the
    integrity expectation on group multisets.
    """
    if fs is not None:  # every store URL of fs's protocol opens with it (see ._fs)
        # every other argument is forwarded as given (locals() holds only them here):
        # naming them one by one once dropped ``remedies`` on remote stores (issue 30)
        arguments = {name: value for name, value in locals().items() if name != "fs"}
        from astrid_airflow.io import using

        with using(fs):
            return validate_surrogate(**arguments)
    from astrid_airflow.io import csv_floats_like, read_table, suppressed_like

    from ._file_shape import check_publishable

    artefact, location = _resolve_artefact(artefact)
    if isinstance(policy, Mapping):  # reject bad overrides before touching the store
        GatePolicy().with_overrides(**dict(policy))
    if isinstance(policy, (GatePolicy, Mapping)):
        check_weaker_policy(policy, allow_weaker_policy)
    # The gate judges what will be published: a file (or database table) carrying more
    # than the artefact's columns is refused before anything is read or written
    # (``_file_shape``); the digest is of the bytes then judged.
    check_publishable(surrogate, artefact)
    digest = _file_digest(surrogate)
    stored, suite_info = _stored_policy(artefact, location)
    if isinstance(policy, GatePolicy):
        effective = policy
    elif policy is None or isinstance(policy, Mapping):
        effective = stored.with_overrides(**dict(policy or {}))
    else:
        raise ParameterError(f"Invalid policy: {policy!r}. Must be a GatePolicy, a dict "
                             "of thresholds or None.")
    if classifier is not None:
        effective = effective.with_overrides(classifier=classifier)
    seed = _check_seed(random_state)
    paths = result_paths(surrogate, out_dir)
    if paths:  # the result files never replace an input (the artefact file included)
        from astrid_airflow.io import refuse_overwriting_inputs

        refuse_overwriting_inputs(list(paths), [original, surrogate,
                                                getattr(location, "path", None)])
    # The suite that runs is always rebuilt here: its thresholds are $PARAMETERs filled
    # from ``effective`` alone, so the policy is the one place they come from.
    suite = build_suite(artefact, effective)
    suite_info["overrides"] = {k: v for k, v in effective.to_dict().items()
                               if stored.to_dict().get(k) != v}

    original_df = read_table(original)
    surrogate_df = read_table(surrogate)
    for what, frame in (("original", original_df), ("surrogate", surrogate_df)):
        if len(frame) == 0:  # no row to measure: bad input, not a failed expectation
            raise DataError(f"The {what} table is empty (0 rows): nothing to validate.")
    artefact.check_table(original_df)
    utility, source = _utility_function(original_df, artefact, effective, seed, metrics,
                                        remedies)
    from astrid_airflow.release import release_recipe, remedied

    recipe = release_recipe(artefact, remedies)
    # The release's domain: what a GoldenEye shuffle of the remedied batch must keep,
    # and what an attacker who knows the published recipe compares against.
    judged_original = remedied(original_df, recipe, artefact.target, artefact.grouping)
    surrogate_df = suppressed_like(csv_floats_like(surrogate_df, surrogate, judged_original),
                                   judged_original)  # a suppressed column has no type
    _keep_default_suite(artefact, location, suite_info)  # every input is checked by now

    gx_result = _run_suite(suite, judged_original, surrogate_df, artefact.target, effective,
                           utility, verbose=verbose,
                           attacks=_attack_function(judged_original, artefact.target,
                                                    seed))
    outcomes = _outcomes(gx_result)
    from astrid_airflow.release import artefact_sha256

    summary = {"target": artefact.target, "grouping": artefact.grouping.to_list(),
               "fingerprint": dict(artefact.fingerprint),
               "location": getattr(location, "path", None),
               "sha256": artefact_sha256(artefact),  # what a sealed receipt binds
               "remedies": None if recipe is None else recipe.to_dict()}
    result = GateResult(
        success=all(o.success for o in outcomes), expectations=tuple(outcomes),
        policy=effective, random_state=seed, utility_source=source, artefact=summary,
        validation_json=paths[0] if paths else None, data_docs=paths[1] if paths else None,
        suite=suite_info, surrogate_sha256=digest, allow_weaker_policy=allow_weaker_policy)
    if digest is not None and _file_digest(surrogate) != digest:
        raise GateError(f"{os.fspath(surrogate)!r} changed while the gate judged it; "
                        "nothing was decided.")
    if paths:
        _write_outputs(result, gx_result, paths)
    return result


def _file_digest(source: Any) -> str | None:
    """SHA-256 of a surrogate file's bytes (None for a DataFrame or a database table)."""
    from astrid_airflow.io import is_sql_url

    if isinstance(source, pd.DataFrame) or is_sql_url(os.fspath(source)):
        return None
    import fsspec

    h = hashlib.sha256()
    try:
        with fsspec.open(os.fspath(source), "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        raise DataError(f"Unreadable file {os.fspath(source)!r}: no such file.") from None
    return h.hexdigest()


def _resolve_artefact(artefact: Any) -> tuple[Any, Any]:
    from astrid_airflow.release import GroupingArtefact

    if isinstance(artefact, GroupingArtefact):
        return artefact, None
    if isinstance(artefact, (str, os.PathLike)):
        from astrid_airflow.release import load_artefact

        loaded = load_artefact(artefact)
        return loaded.artefact, loaded.location
    raise ParameterError(f"Invalid artefact: {artefact!r}. Must be a GroupingArtefact or a "
                         "reference (artefact.json path, version directory, "
                         "ROOT/NAME[@VERSION]).")


def _stored_policy(artefact: Any, location: Any) -> tuple[GatePolicy, dict[str, Any]]:
    """The policy of a stored artefact's verified suite (written once if missing).

    Returns the policy and what the result records about the suite: where it came from,
    the SHA-256 of its bytes and what it is bound by (``"recorded"``: the digest in
    ``artefact.files``; ``"default"``: no digest recorded, so only the default suite).
    """
    if location is None:
        return GatePolicy(), {"source": "built", "path": None, "sha256": None,
                              "binding": None, "stored_policy": GatePolicy().to_dict()}
    if getattr(location, "root", None) is not None:  # never read a suite through a link
        from astrid_airflow.release import ArtefactStore

        ArtefactStore(location.root).refuse_links(location.name, location.version,
                                                  SUITE_FILE)
    path = _join(location.directory, SUITE_FILE)
    recorded = (getattr(artefact, "files", None) or {}).get(SUITE_FILE)
    source = "stored"
    try:
        suite, raw, shown = _read_suite(path)
    except StoreError:
        if recorded:
            raise GateError(f"The gate suite saved with {location.path} is missing: no "
                            f"{path} (artefact.json records sha256 {recorded[:12]}…)."
                            ) from None
        # The default suite is kept with the version (so reviewers see the rules), but
        # only once every input has been checked: :func:`_keep_default_suite`, called by
        # ``validate_surrogate`` just before the suite runs. Bad input writes nothing.
        suite, shown, source = build_suite(artefact), path, "written"
        raw = _suite_bytes(suite)
    policy = verify_suite(suite, raw, artefact, shown=shown)
    return policy, {"source": source, "path": path,
                    "sha256": hashlib.sha256(raw).hexdigest(),
                    "binding": "recorded" if recorded else "default",
                    "stored_policy": policy.to_dict()}


def _keep_default_suite(artefact: Any, location: Any, suite_info: dict[str, Any]) -> None:
    """Save the default suite beside a version that has none (``source == "written"``).

    Called after the gate's inputs were all checked, so a refused call leaves the store
    as it was. A concurrent gate may have saved one first, or the store may be
    read-only: then the stored one, if there, is verified and recorded instead.
    """
    if suite_info.get("source") != "written":
        return
    try:
        save_suite(location, build_suite(artefact))
    except StoreError:
        with contextlib.suppress(StoreError):
            suite, raw, shown = _read_suite(suite_info["path"])
            verify_suite(suite, raw, artefact, shown=shown)
            suite_info.update(source="stored", sha256=hashlib.sha256(raw).hexdigest())


def _check_seed(random_state: object) -> int:
    if random_state is None:
        # Drawn here and recorded in the result, so a gate decision can be replayed.
        return fresh_seed()
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral) \
            or random_state < 0:
        raise ParameterError(f"Invalid random_state: {random_state!r}. Must be None or a "
                             "non-negative int (it is recorded in the gate's result).")
    return int(random_state)


def _utility_function(original: pd.DataFrame, artefact: Any, policy: GatePolicy, seed: int,
                      metrics: Mapping[str, Any] | None, remedies: bool = True):
    if metrics is not None:
        if not isinstance(metrics, Mapping):
            raise ParameterError(f"Invalid metrics: expected a mapping, got "
                                 f"{type(metrics).__name__}.")
        missing = [k for k in ("accuracy_original", "accuracy_surrogate")
                   if not _is_number(metrics.get(k))]
        if missing:
            raise ParameterError(f"Invalid metrics: {missing} missing or not numbers; "
                                 "pass the JSON of `astrid shuffle --json`.")
        given = {k: float(metrics[k]) for k in ("accuracy_original", "accuracy_surrogate")}
        se = metrics.get("accuracy_difference_se", metrics.get("difference_se"))
        if _is_number(se):  # the noise allowance of the figures (shuffle's JSON has it)
            given["difference_se"] = float(se)
        return (lambda: {**given, "source": "precomputed"}), "precomputed"

    def compute() -> dict[str, Any]:
        from astrid_airflow.engine import pandas_class_codes
        from astrid_airflow.release import stratified_subsample, surrogate_utility

        root_seed = np.random.SeedSequence(seed)
        table, note = original, None
        if len(original) > UTILITY_MAX_ROWS:  # fitting cost grows faster than linearly
            codes = pandas_class_codes(original[artefact.target], artefact.target)
            rows = stratified_subsample(codes, UTILITY_MAX_ROWS, root_seed.spawn(1)[0])
            table = original.iloc[rows].reset_index(drop=True)
            note = (f"utility computed on a stratified random subsample of {len(rows)} of "
                    f"{len(original)} rows")
        u = surrogate_utility(table, artefact, classifier=policy.classifier,
                              random_state=seed,
                              n_repeats=policy.utility_repeats_for(len(table)),
                              remedies=remedies)
        out = {**u.to_dict(), "source": "computed"}
        if note:
            out["note"] = note
        return out

    return compute, "computed"


def gate_utility(original: pd.DataFrame, artefact: Any, policy: GatePolicy,
                 random_state: int) -> dict[str, Any]:
    """The figures the gate's accuracy check judges, computed as
    :func:`validate_surrogate` computes them with that ``random_state`` (for
    benchmarks of the check over seeds; judge them with ``judge_utility``)."""
    return _utility_function(original, artefact, policy, _check_seed(random_state),
                             None)[0]()


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and math.isfinite(float(value))


def _attack_function(original: pd.DataFrame, target: str, seed: int):
    """The attack-based risks of a shadow release of ``original`` (computed when a check
    asks, once per grouping and attack count), or None when they cannot be measured."""
    def compute(grouping: list, n_attacks: int) -> dict[str, Any] | None:
        from astrid_airflow.privacy import shadow_attacks

        try:
            return shadow_attacks(original, target=target, grouping=grouping,
                                  n_attacks=n_attacks, random_state=seed)
        except AstridError:  # e.g. the original lacks a column: an integrity failure
            return None

    return compute


def _run_suite(suite: Mapping[str, Any], original: pd.DataFrame, surrogate: pd.DataFrame,
               target: str, policy: GatePolicy, utility, *, verbose: bool,
               attacks=None) -> Any:
    from ._checks import bind_reference
    from ._kit import quiet_gx_logging
    from ._registry import register_expectations

    register_expectations(verbose=verbose)
    quiet_gx_logging(verbose=verbose)
    gx = __import__("great_expectations")
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (context.data_sources.add_pandas(name="astrid")
             .add_dataframe_asset(name="surrogate")
             .add_batch_definition_whole_dataframe(name="whole"))
    try:
        gx_suite = gx.ExpectationSuite(
            name=suite["name"], expectations=[dict(e) for e in suite["expectations"]],
            meta=dict(suite.get("meta", {})), notes=suite.get("notes"))
    except Exception as exc:  # GX raises many types for a bad suite
        raise GateError(f"The gate suite cannot be loaded: {exc}") from None
    gx_suite = context.suites.add(gx_suite)
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="astrid_gate", data=batch, suite=gx_suite))
    with bind_reference(original, target=target, utility=utility,
                        attacks=attacks) as handle:
        result = definition.run(
            batch_parameters={"dataframe": surrogate},
            expectation_parameters={**policy.parameters(), REFERENCE_PARAMETER: handle},
            result_format="COMPLETE")
    errors = [(r.expectation_config.type, r.exception_info.get("exception_message"))
              for r in result.results
              if (r.exception_info or {}).get("raised_exception")]
    if errors:
        name, message = errors[0]
        raise GateError(f"The gate could not evaluate {name}: {message}")
    return result


def _outcomes(gx_result: Any) -> list[ExpectationOutcome]:
    from ._registry import EXPECTATIONS

    out = []
    for r in gx_result.results:
        name = r.expectation_config.type
        category = EXPECTATIONS.get(name, ("other",))[0]
        res = dict(r.result or {})
        details = dict(res.get("details") or {})
        threshold = details.pop("threshold", None)
        out.append(ExpectationOutcome(name=name, category=category, success=bool(r.success),
                                      observed_value=res.get("observed_value"),
                                      threshold=threshold, details=_plain(details)))
    order = list(EXPECTATIONS)
    out.sort(key=lambda o: order.index(o.name) if o.name in order else len(order))
    return out




def _write_outputs(result: GateResult, gx_result: Any, paths: tuple[str, str]) -> None:
    """Write the result JSON and the Data Docs page, each atomically (JSON last)."""
    from astrid_airflow.io import atomic_write_text

    from ._datadocs import render_validation_html

    payload = {"gate": result.to_dict(), "great_expectations": gx_result.to_json_dict()}
    try:
        text = json.dumps(_plain(payload), indent=2, default=str, allow_nan=False) + "\n"
        html = render_validation_html(gx_result, gate=result.to_dict())
    except (TypeError, ValueError) as exc:
        raise GateError(f"The gate's result cannot be serialised: {exc}") from None
    try:
        atomic_write_text(paths[1], html, overwrite=True)
        atomic_write_text(paths[0], text, overwrite=True)
    except OSError as exc:
        raise DataError(f"Cannot write the gate's results: {exc}") from None
