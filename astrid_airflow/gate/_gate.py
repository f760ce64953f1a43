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
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import AstridError, DataError, GateError, ParameterError, StoreError
from astrid_airflow._validation import (
    fresh_seed,
)
from astrid_airflow.engine import stage_progress
from astrid_airflow.io import plain as _plain
from astrid_airflow.release import release_attacker_model, repeated_rows

from ._policy import REFERENCE_PARAMETER, UTILITY_MAX_ROWS, GatePolicy
from ._result import ExpectationOutcome, GateResult, result_paths
from ._stage_cost import plan_gate
from ._suite import (
    SUITE_FILE,
    build_suite,
    join_path,
    read_suite,
    save_suite,
    suite_bytes,
    verify_suite,
)
from ._weaker import check_stored_policy, check_weaker_policy


def _utility_splits(policy: GatePolicy, rows: int) -> int:
    """The splits of the gate's utility check on a table of ``rows`` rows (each trains
    on at most ``UTILITY_MAX_ROWS``): what it runs and what its estimate sizes."""
    return policy.utility_repeats_for(min(rows, UTILITY_MAX_ROWS))


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
        The table the surrogate was made from; it must match the artefact's schema.
    surrogate : DataFrame or path
        The table to release; its differences from the original are gate failures.
    artefact : GroupingArtefact, or a reference for ``load_artefact``
        A stored artefact's suite is read from (or, once, written to) ``suite.json``.
    policy : GatePolicy or dict, optional
        A ``GatePolicy`` replaces the stored thresholds, a dict overrides some of them.
    out_dir : path, optional
        Where the validation JSON and HTML go; default beside the surrogate file.
    classifier, random_state : optional
        The utility check's classifier (overrides policy and artefact) and seed.
    metrics : mapping, optional
        Precomputed ``accuracy_original`` / ``accuracy_surrogate`` used instead of refitting.
    verbose : bool, default False
        Let Great Expectations log at DEBUG.
    remedies : bool, default True
        Judge the remedied release: the original is put in the release's domain (the
        attacker knows the recipe) before every check; False judges a raw release.
    fs : fsspec.AbstractFileSystem, optional
        The filesystem for URLs of its protocol (Airflow's ``ObjectStoragePath.fs``).
    allow_weaker_policy : bool, optional
        False refuses a ``policy`` looser than the default, True accepts it, None does not
        check; the result names every loosened threshold either way.

    Returns
    -------
    GateResult

    Raises
    ------
    GateError
        The gate could not be evaluated (a metric raised, a wrong suite, a file changed).
    DataError, SchemaMismatchError, ArtefactError, ParameterError
        Bad input, including a surrogate file carrying more than its columns.

    Utility is :func:`~astrid_airflow.surrogate_utility` on held-out real rows (see
    docs/gate.md).
    """
    if fs is not None:  # every store URL of fs's protocol opens with it (see ._fs)
        # every other argument is forwarded as given (locals() holds only them here),
        # so a new parameter cannot be dropped on remote stores
        arguments = {name: value for name, value in locals().items() if name != "fs"}
        from astrid_airflow.io import using

        with using(fs):
            return validate_surrogate(**arguments)
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
    effective = _effective_policy(policy, stored, classifier)
    check_stored_policy(stored, effective, allow_weaker_policy)
    seed = _check_seed(random_state)
    paths = result_paths(surrogate, out_dir)
    if paths:  # the result files never replace an input (the artefact file included)
        from astrid_airflow.io import refuse_overwriting_inputs

        refuse_overwriting_inputs(list(paths), [original, surrogate,
                                                getattr(location, "path", None)])
    # The suite that runs is always rebuilt here: its thresholds are $PARAMETERs filled
    # from ``effective`` alone, so the policy is the one place they come from.
    suite = build_suite(artefact, effective)
    model = release_attacker_model(artefact, effective.attacker_model)
    suite_info["overrides"] = {k: v for k, v in effective.to_dict().items()
                               if stored.to_dict().get(k) != v}
    with stage_progress("validate") as tracker:  # estimate and heartbeat
        with tracker.step("reading the tables"):
            original_df, surrogate_df, repeated = _read_inputs(original, surrogate,
                                                               artefact)
        plan_gate(tracker, suite, original_df.shape, computed_utility=metrics is None,
                  writes=bool(paths),
                  utility_splits=_utility_splits(effective, len(original_df)))
        given = _given_metrics(metrics)  # bad figures refused before any work
        with tracker.step("the release's domain (recipe, local suppression)"):
            judged_original, surrogate_df, recipe, copies = _release_domain(
                original_df, surrogate_df, surrogate, artefact, remedies, repeated)
        # the utility scores the batch with the recipe it was judged with (its rungs)
        utility, source = (given, "precomputed") if given is not None else (
            _computed_utility(original_df, artefact, effective, seed, remedies,
                              None if recipe is None else recipe[0]), "computed")
        _keep_default_suite(artefact, location, suite_info)  # every input checked by now

        gx_result = _run_suite(suite, judged_original, surrogate_df, artefact.target,
                               effective, utility, verbose=verbose, copies=copies,
                               attacks=_attack_function(
                                   judged_original, artefact.target, seed, model,
                                   _synthesised_real(original_df, recipe)),
                               progress=tracker,
                               attacker_model=model, synthesised=None if recipe is None
                               else recipe[0].is_synthesised, real=original_df, seed=seed)
        outcomes = _outcomes(gx_result)
        result = GateResult(
            success=all(o.success for o in outcomes), expectations=tuple(outcomes),
            policy=effective, random_state=seed, utility_source=source,
            artefact=_artefact_summary(artefact, location, recipe, model),
            validation_json=paths[0] if paths else None,
            data_docs=paths[1] if paths else None, suite=suite_info,
            surrogate_sha256=digest, allow_weaker_policy=allow_weaker_policy)
        _decide(result, gx_result, surrogate, digest, paths, tracker,
                sources=_source_rows(original_df, artefact) if paths else None)
    return result


def _source_rows(original_df: pd.DataFrame, artefact: Any) -> bytes:
    """The fingerprints of the rows judged, for publish's check of what this release
    discloses next to earlier ones (:mod:`astrid_airflow.release._history`)."""
    from astrid_airflow.io import signing_key_or_new
    from astrid_airflow.release import source_fingerprints

    return source_fingerprints(original_df, artefact.columns, artefact.target,
                               signing_key_or_new()).to_bytes()


def _decide(result: GateResult, gx_result: Any, surrogate: Any, digest: str | None,
            paths: tuple[str, str] | None, tracker: Any, sources: bytes | None) -> None:
    """Refuse a file that changed while it was judged, else write the results."""
    if digest is not None and _file_digest(surrogate) != digest:
        raise GateError(f"{os.fspath(surrogate)!r} changed while the gate judged it; "
                        "nothing was decided.")
    if paths:
        with tracker.step("writing the results and Data Docs"):
            _write_outputs(result, gx_result, paths, sources)


def _effective_policy(policy: Any, stored: GatePolicy, classifier: Any) -> GatePolicy:
    """The policy a run applies: a ``GatePolicy`` as given, else the stored policy with
    the dict's overrides; the classifier argument over either."""
    if isinstance(policy, GatePolicy):
        effective = policy
    elif policy is None or isinstance(policy, Mapping):
        effective = stored.with_overrides(**dict(policy or {}))
    else:
        raise ParameterError(f"Invalid policy: {policy!r}. Must be a GatePolicy, a dict "
                             "of thresholds or None.")
    if classifier is not None:
        effective = effective.with_overrides(classifier=classifier)
    return effective


def _read_inputs(original: Any, surrogate: Any, artefact: Any
                 ) -> tuple[pd.DataFrame, pd.DataFrame, Any]:
    """Both tables read; neither empty, the original of the artefact's schema; third,
    the original's rows that repeat an earlier one (declared identifiers included, so
    a row id tells identical records apart)."""
    from astrid_airflow.io import read_table

    raw = read_table(original)
    repeated = repeated_rows(raw)  # copies of a row: one person
    original_df, _ = artefact.without_identifiers(raw)
    surrogate_df = read_table(surrogate)
    for what, frame in (("original", original_df), ("surrogate", surrogate_df)):
        if len(frame) == 0:  # no row to measure: bad input, not a failed expectation
            raise DataError(f"The {what} table is empty (0 rows): nothing to validate.")
    artefact.check_table(original_df)
    artefact.refuse_unseen_classes(original_df)  # the release's domain: its classes
    return original_df, surrogate_df, repeated


def _release_domain(original_df: pd.DataFrame, surrogate_df: pd.DataFrame, surrogate: Any,
                    artefact: Any, remedies: bool, repeated: Any = None
                    ) -> tuple[pd.DataFrame, pd.DataFrame, Any, Any]:
    """The release's domain: what a GoldenEye shuffle of the remedied batch must keep,
    and what an attacker who knows the published recipe compares against. Returns the
    remedied original, the surrogate read as its types, ``(recipe applied, rung per
    group)`` (None for the raw release), and the original's ``repeated`` rows before
    local suppression (None if there are none)."""
    from astrid_airflow.io import csv_floats_like, suppressed_like
    from astrid_airflow.release import release_domain_parts, release_recipe

    recipe = release_recipe(artefact, remedies)
    # with fallbacks, each group's rung on this batch: the shuffle's
    judged_original, found, before = release_domain_parts(
        original_df, recipe, artefact.target, artefact.grouping, repeated=repeated)
    # the repeated rows' tuples before suppression: they are taken off the surrogate's
    # counts whether or not the staged file suppressed them
    copies = before.iloc[np.flatnonzero(repeated)] if repeated is not None and \
        repeated.any() else None
    surrogate_df = suppressed_like(csv_floats_like(surrogate_df, surrogate, judged_original),
                                   judged_original)  # a suppressed column has no type
    return judged_original, surrogate_df, None if found is None else \
        (recipe.mixed(found.recipe_rungs, artefact.grouping.groups), found.recipe_rungs), \
        copies


def _synthesised_real(original_df: pd.DataFrame, recipe: Any) -> pd.DataFrame | None:
    """The batch's own values of the columns the recipe applied synthesises (None:
    none, or the raw release)."""
    drawn = sorted(recipe[0].synthesised_columns) if recipe is not None else []
    return original_df[drawn].reset_index(drop=True) if drawn else None


def _artefact_summary(artefact: Any, location: Any, recipe: Any, model: Any
                      ) -> dict[str, Any]:
    """What the result records of the artefact judged against (and the attacker
    ``model`` the per-group checks counted under)."""
    from astrid_airflow.release import artefact_sha256

    return {"target": artefact.target, "grouping": artefact.grouping.to_list(),
            "attacker_model": model.to_dict(), "attacker_model_line": model.describe(),
            "fingerprint": dict(artefact.fingerprint),
            "location": getattr(location, "path", None),
            "sha256": artefact_sha256(artefact),  # what a sealed receipt binds
            # what the batch was judged with: per group, the artefact's recipe rung (0:
            # the chosen recipe, i: its i-th coarser fallback), mixed into one recipe
            "remedies": None if recipe is None else recipe[0].to_dict(),
            "recipe_rungs": None if recipe is None else recipe[1]}


def _file_digest(source: Any) -> str | None:
    """SHA-256 of a surrogate file's bytes (None for a DataFrame or a database table)."""
    from astrid_airflow.io import is_sql_url

    if isinstance(source, pd.DataFrame) or is_sql_url(os.fspath(source)):
        return None
    from astrid_airflow.io import file_sha256

    try:
        return file_sha256(os.fspath(source))
    except FileNotFoundError:
        raise DataError(f"Unreadable file {os.fspath(source)!r}: no such file.") from None


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
    path = join_path(location.directory, SUITE_FILE)
    recorded = (getattr(artefact, "files", None) or {}).get(SUITE_FILE)
    source = "stored"
    try:
        suite, raw, shown = read_suite(path)
    except StoreError:
        if recorded:
            raise GateError(f"The gate suite saved with {location.path} is missing: no "
                            f"{path} (artefact.json records sha256 {recorded[:12]}…)."
                            ) from None
        # The default suite is kept with the version (so reviewers see the rules), but
        # only once every input has been checked: :func:`_keep_default_suite`, called by
        # ``validate_surrogate`` just before the suite runs. Bad input writes nothing.
        suite, shown, source = build_suite(artefact), path, "written"
        raw = suite_bytes(suite)
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
            suite, raw, shown = read_suite(suite_info["path"])
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


def _given_metrics(metrics: Mapping[str, Any] | None):
    """The precomputed figures' function (None: the gate computes them), checked."""
    if metrics is None:
        return None
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
    return lambda: {**given, "source": "precomputed"}


def _computed_utility(original: pd.DataFrame, artefact: Any, policy: GatePolicy, seed: int,
                      remedies: bool = True, recipe: Any = None):
    """The gate's utility figures, computed when the suite asks (``recipe``: the one the
    batch was judged with, its groups' rungs mixed; None: the artefact's)."""

    def compute() -> dict[str, Any]:
        from astrid_airflow.release import surrogate_utility

        note = None
        if len(original) > UTILITY_MAX_ROWS:  # fitting cost grows faster than linearly
            note = (f"the classifiers trained on stratified samples of the {len(original)} "
                    f"rows' training part as a {UTILITY_MAX_ROWS}-row table's split would "
                    "be; the recipe, local suppression and shuffle on all of it (their "
                    "counts are the batch's)")
        # the whole batch: suppression at k on a sample's counts is not the release's
        u = surrogate_utility(original, artefact, classifier=policy.classifier,
                              random_state=seed, max_fit_rows=UTILITY_MAX_ROWS,
                              n_repeats=_utility_splits(policy, len(original)),
                              remedies=remedies, recipe=recipe)
        out = {**u.to_dict(), "source": "computed"}
        if note:
            out["note"] = note
        return out

    return compute


def gate_utility(original: pd.DataFrame, artefact: Any, policy: GatePolicy,
                 random_state: int) -> dict[str, Any]:
    """The figures the gate's accuracy check judges, computed as
    :func:`validate_surrogate` computes them with that ``random_state`` (for
    benchmarks of the check over seeds; judge them with ``judge_utility``)."""
    return _computed_utility(original, artefact, policy, _check_seed(random_state))()


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and math.isfinite(float(value))


def _attack_function(original: pd.DataFrame, target: str, seed: int, model: Any = None,
                     real: pd.DataFrame | None = None):
    """The attack-based risks of a shadow release of ``original`` under the attacker
    ``model`` (computed when a check asks, once per grouping and attack count), or None
    when they cannot be measured. ``real``: the people's own values of the synthesised
    columns, which the attacks target (the shadow publishes ``original``'s draws)."""
    def compute(grouping: list, n_attacks: int) -> dict[str, Any] | None:
        from astrid_airflow.privacy import shadow_attacks

        try:
            return shadow_attacks(original, target=target, grouping=grouping,
                                  n_attacks=n_attacks, random_state=seed,
                                  attacker_model=model, real=real)
        except AstridError:  # e.g. the original lacks a column: an integrity failure
            return None

    return compute


def _run_suite(suite: Mapping[str, Any], original: pd.DataFrame, surrogate: pd.DataFrame,
               target: str, policy: GatePolicy, utility, *, verbose: bool,
               attacks=None, progress: Any = None, attacker_model: Any = None,
               copies: Any = None, synthesised: Any = None, real: Any = None,
               seed: int = 0) -> Any:
    from ._checks import bind_reference

    with contextlib.nullcontext() if progress is None else \
            progress.step("setting up Great Expectations"):
        definition = _gx_definition(suite, verbose)
    with bind_reference(original, target=target, utility=utility, attacks=attacks,
                        progress=progress, attacker_model=attacker_model,
                        copies=copies, synthesised=synthesised, real=real,
                        seed=seed) as handle:
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


def _gx_definition(suite: Mapping[str, Any], verbose: bool) -> Any:
    """An ephemeral GX context with the gate's suite, validating a pandas batch."""
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
    return context.validation_definitions.add(
        gx.ValidationDefinition(name="astrid_gate", data=batch, suite=gx_suite))


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




def _write_outputs(result: GateResult, gx_result: Any, paths: tuple[str, str],
                   sources: bytes | None = None) -> None:
    """Write the source fingerprints, the Data Docs page and the result JSON, each
    atomically (JSON last)."""
    from astrid_airflow.io import atomic_write_bytes, atomic_write_text
    from astrid_airflow.release import SOURCE_ROWS_SUFFIX

    from ._datadocs import render_validation_html

    payload = {"gate": result.to_dict(), "great_expectations": gx_result.to_json_dict()}
    try:
        text = json.dumps(_plain(payload), indent=2, default=str, allow_nan=False) + "\n"
        html = render_validation_html(gx_result, gate=result.to_dict())
    except (TypeError, ValueError) as exc:
        raise GateError(f"The gate's result cannot be serialised: {exc}") from None
    try:
        if sources is not None:
            atomic_write_bytes(paths[0].removesuffix(".validation.json")
                               + SOURCE_ROWS_SUFFIX, sources, overwrite=True)
        atomic_write_text(paths[1], html, overwrite=True)
        atomic_write_text(paths[0], text, overwrite=True)
    except OSError as exc:
        raise DataError(f"Cannot write the gate's results: {exc}") from None
