"""The gate's Great Expectations suite: built from an artefact plus a policy, stored as
``suite.json`` beside the artefact version and bound to it by a digest.

:func:`build_suite` makes the suite (thresholds as ``$PARAMETER`` suite parameters),
:func:`save_suite` and :func:`load_suite` keep it, :func:`verify_suite` checks that a
stored suite is the one saved with its version (only its policy is used: the suite
that runs is always rebuilt).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

from astrid_airflow._errors import GateError, ParameterError, StoreError
from astrid_airflow.io import load_json

from ._policy import (
    REFERENCE_PARAMETER,
    SUITE_FILE,
    SUITE_FORMAT,
    SUITE_NAME,
    GatePolicy,
    check_policy,
)


def suite_expectations(artefact: Any, model: Any = None) -> list[dict[str, Any]]:
    """The gate's expectation specs for ``artefact``, in suite (and report) order.

    This is the one list every suite is built from. To add a check: give it a module in
    ``expectations/`` (its class declares category, metric and policy parameter, which
    ``_registry.EXPECTATIONS`` collects), list the module in ``_registry``, and give
    its kwargs in :func:`_kwargs_of` below; a new threshold is also a
    :class:`GatePolicy` field listed in ``THRESHOLD_FIELDS`` (``COUNT_FIELDS`` for an integer one
    such as ``disclosure_k``).
    Thresholds are always ``{"$PARAMETER": name}``: their values come from the policy
    when the suite runs, never from the suite itself.
    """
    from ._registry import EXPECTATIONS

    kwargs = _kwargs_of(artefact, model)
    unknown = [name for name in EXPECTATIONS if name not in kwargs]
    if unknown:  # a check registered without its kwargs: a programming error
        raise GateError(f"No suite kwargs for expectation(s) {unknown}.")
    out = []
    for name, (category, metric, parameter) in EXPECTATIONS.items():
        if kwargs[name] is None:  # a check this artefact's release has no use for
            continue
        kw = dict(kwargs[name])
        if parameter is not None:
            kw["threshold"] = {"$PARAMETER": parameter}
        out.append({"type": name, "kwargs": kw,
                    "meta": {"category": category, "metric": metric,
                             "parameter": parameter}})
    return out


def _kwargs_of(artefact: Any, model: Any = None) -> dict[str, dict[str, Any]]:
    """kwargs (besides the threshold) of each expectation, by GX type name. Under a
    declared attacker ``model`` the checks of what an attacker's knowledge links
    (unique tuples, cross-group linkage, the class from one column) get the grouping's
    quasi-identifier projections."""
    grouping = artefact.grouping.to_list()
    known = grouping if model is None else model.key_groups(grouping)
    ref = {"$PARAMETER": REFERENCE_PARAMETER}
    # under a declared model only the rows that disclose someone count as intact (an
    # undeclared suite stays the same bytes)
    intact = {"reference": ref} if model is None or not model.declared else \
        {"reference": ref, "k": {"$PARAMETER": "disclosure_k"}}
    # a recipe that synthesises groups: the check leaves out what the gate's reference
    # says is synthesised (a suite without such a step stays the same bytes)
    recipe = getattr(artefact, "recipe", None)
    largest = {"grouping": known, "reference": ref} if recipe is not None and \
        recipe.synthesised_columns else {"grouping": known}
    return {
        "expect_surrogate_intact_row_proportion_to_be_at_most": intact,
        "expect_surrogate_largest_group_unique_share_to_be_at_most": largest,
        "expect_surrogate_group_share_below_k_to_be_at_most":
            {"reference": ref, "grouping": grouping, "k": {"$PARAMETER": "disclosure_k"}},
        "expect_surrogate_group_class_disclosure_share_to_be_at_most":
            {"reference": ref, "grouping": grouping, "k": {"$PARAMETER": "disclosure_k"}},
        "expect_surrogate_cross_group_linkage_to_be_at_most_expected":
            {"reference": ref, "grouping": known},
        **{name: {"reference": ref, "grouping": grouping, "n": {"$PARAMETER": "attack_n"}}
           for name in ("expect_surrogate_singling_out_risk_to_be_at_most",
                        "expect_surrogate_linkability_risk_to_be_at_most",
                        "expect_surrogate_inference_risk_to_be_at_most")},
        "expect_surrogate_class_from_one_column_risk_to_be_at_most":
            {"reference": ref, "grouping": known},
        # only where the recipe synthesises (the other suites stay the same bytes)
        "expect_surrogate_synthetic_tuples_to_be_no_closer_than_real":
            {"reference": ref, "grouping": grouping} if "reference" in largest else None,
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
    from astrid_airflow.release import release_attacker_model

    policy = check_policy(policy)
    model = release_attacker_model(artefact, policy.attacker_model)
    return {
        "name": SUITE_NAME,
        "expectations": suite_expectations(artefact, model),
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


def suite_bytes(suite: Mapping[str, Any]) -> bytes:
    return (json.dumps(suite, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def suite_digest(suite: Mapping[str, Any]) -> str:
    """SHA-256 of the bytes a suite is stored as (what ``artefact.files`` records)."""
    return hashlib.sha256(suite_bytes(suite)).hexdigest()


def gate_extra_files(artefact: Any, policy: GatePolicy | None = None) -> dict[str, bytes]:
    """``{"suite.json": bytes}`` for ``ArtefactStore.save(..., extra_files=...)``.

    The store records the file's SHA-256 in the saved ``artefact.json``, which binds the
    suite (and its policy) to that version: see :func:`verify_suite`.
    """
    return {SUITE_FILE: suite_bytes(build_suite(artefact, policy))}


def save_suite(location: Any, suite: Mapping[str, Any]) -> str:
    """Add ``suite.json`` to an artefact's version directory, atomically, once.

    ``location`` is the :class:`~astrid_airflow.release._store.ArtefactLocation` of a loaded
    artefact. An existing suite is never replaced (versions are immutable): a
    ``StoreError`` says so. A version saved without a suite records no digest for one,
    so the only suite it accepts is the default one (:func:`verify_suite`).
    """
    data = suite_bytes(suite)
    if getattr(location, "root", None) is not None:
        from astrid_airflow.release import ArtefactStore

        return ArtefactStore(location.root).add_file(location.name, location.version,
                                                     SUITE_FILE, data)
    from astrid_airflow.io import atomic_write_bytes

    return atomic_write_bytes(join_path(location.directory, SUITE_FILE), data)


def read_suite(path: str | os.PathLike) -> tuple[dict[str, Any], bytes, str]:
    """``(suite, raw bytes, shown path)`` of a ``suite.json`` (file or its directory)."""
    from astrid_airflow.io import MAX_JSON_BYTES, check_regular_file, url_to_fs

    text = os.fspath(path)
    try:
        fs, inner = url_to_fs(text)
        if fs.isdir(inner):
            text, inner = join_path(text, SUITE_FILE), join_path(inner, SUITE_FILE)
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
    return read_suite(path)[0]


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


def join_path(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name if "://" in base else os.path.join(base, name)
