"""Privacy risk of a release: per-group disclosure, cross-group linkage and attacks.

:func:`measure_risk` combines the per-group measures of :mod:`._disclosure` (computed on
the release as published) with the attacks of Giomi et al. (PETS 2023, see
:mod:`._attacks`). The attacks need control rows that did not go into the release. With
``control`` given they attack the release itself. Without (the gate and the DAGs, where
the release is the whole batch) they attack *shadow releases*: GoldenEye surrogates,
with the same grouping, of a random half of the batch (stratified by class), the other
half being the control, ``SHADOW_RELEASES`` of them with their own halves, each attack's
outcome pooled over them. The shadow measures what the method does to a batch like this
one, not the particular file; the per-group measures and the cross-group linkage, which
need no control, are always computed on the file.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow._errors import DataError, ParameterError
from astrid_airflow._validation import check_attack_count, check_positive_int, fresh_seed
from astrid_airflow.engine import Grouping, run_threaded

from ._attack_tables import AttackTables
from ._attacks import CONFIDENCE, AttackRisk, residual_risk
from ._disclosure_measure import thread_count
from ._disclosure_results import GroupDisclosure, PairLinkage
from ._inference import inference_attack
from ._linkability import linkability_attack, linkability_split
from ._singling_out import singling_out_attack

#: Rows of each side of a shadow release; a larger batch is sampled down to twice this.
SHADOW_MAX_ROWS = 20_000
#: Shadow releases every attack is repeated on (without control rows). One half of a
#: table of a few hundred rows gives an attack's risk a standard error of about 0.15 when
#: the class is easy to guess; ten releases bring the interval's half-width near 0.1.
SHADOW_RELEASES = 10


def _worst(risks: Sequence[AttackRisk]) -> AttackRisk:
    # The gate compares the upper bound, so the worst is the highest upper bound.
    return max(risks, key=lambda r: (r.ci[1], r.risk))


@dataclass(frozen=True)
class RiskReport:
    """Privacy risk of a release (see :func:`measure_risk`).

    Attributes
    ----------
    groups : tuple of GroupDisclosure
        Per-group disclosure of the release, one per group of the grouping
        (:func:`~astrid_airflow.group_disclosure`).
    pairs : tuple of PairLinkage
        Cross-group linkage, one per pair of groups
        (:func:`~astrid_airflow.cross_group_linkage`).
    singling_out : tuple of AttackRisk
        Univariate and multivariate predicates.
    linkability : tuple of AttackRisk
        The split that cuts the largest group, and a random split.
    inference : tuple of AttackRisk
        The class from the other columns, every member of a multi-column group from its
        group-mates, the class from the attribute with the most distinct values.
    control : {"given", "shadow"}
        Whether the attacks used the control rows given or a shadow release.
    random_state : int
        Root seed of every random choice (replays the report).
    n_attacks : int
        Attacks asked for per measure.
    shadow : dict or None
        Rows of the shadow release and of its control, and rows sampled from the batch.
    """

    groups: tuple[GroupDisclosure, ...]
    pairs: tuple[PairLinkage, ...]
    singling_out: tuple[AttackRisk, ...]
    linkability: tuple[AttackRisk, ...]
    inference: tuple[AttackRisk, ...]
    control: str
    random_state: int
    n_attacks: int
    shadow: dict | None = None

    def attack_risks(self) -> list[AttackRisk]:
        """Every attack outcome, singling-out first."""
        return [*self.singling_out, *self.linkability, *self.inference]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with the keys ``groups``, ``pairs``, ``singling_out``,
        ``linkability`` (each the worst variant plus ``variants``), ``inference`` (a
        list, one per secret), ``control``, ``random_state``, ``n_attacks``."""
        def attack(risks: Sequence[AttackRisk]) -> dict[str, Any]:
            return {**_worst(risks).to_dict(), "variants": [r.to_dict() for r in risks]}

        out = {"groups": [g.to_dict() for g in self.groups],
               "pairs": [p.to_dict() for p in self.pairs],
               "singling_out": attack(self.singling_out),
               "linkability": attack(self.linkability),
               "inference": [r.to_dict() for r in self.inference],
               "control": self.control, "random_state": self.random_state,
               "n_attacks": self.n_attacks}
        if self.shadow is not None:
            out["shadow"] = dict(self.shadow)
        return out


def _seed(random_state: object) -> int:
    if random_state is None:
        # Drawn here and recorded in the report, so the figures can be replayed.
        return fresh_seed()
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) \
            or random_state < 0:
        raise ParameterError(f"Invalid random_state: {random_state!r}. Must be None or a "
                             "non-negative int (it is recorded in the report).")
    return int(random_state)


def _half_split(labels: pd.Series, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Positions of a random half of every class, and of the rest."""
    codes, _ = pd.factorize(labels, use_na_sentinel=False)
    first = []
    for c in np.unique(codes):
        rows = rng.permutation(np.flatnonzero(codes == c))
        # An odd class gives its extra row to either side with equal chance.
        first.append(rows[: (rows.size + int(rng.integers(0, 2))) // 2])
    chosen = np.sort(np.concatenate(first)) if first else np.empty(0, np.intp)
    rest = np.setdiff1d(np.arange(len(labels)), chosen, assume_unique=True)
    return chosen, rest


def _shadow(original: pd.DataFrame, target: str, grouping: Grouping, max_rows: int,
            seed: np.random.SeedSequence, published: pd.DataFrame | None = None
            ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, int]]:
    """A shadow release of a class-stratified half of ``original`` and the other half
    as control; the release is of ``published``'s values of those rows when given (a
    synthesised group's draws, where ``original`` holds the people's own)."""
    from astrid_airflow.release import ProtectsNothingWarning, make_surrogate

    s_sample, s_split, s_perm = seed.spawn(3)
    n_batch = len(original)
    if n_batch > 2 * max_rows:  # sample first: never copy a big batch whole
        keep = np.sort(np.random.default_rng(s_sample).choice(n_batch, 2 * max_rows,
                                                              replace=False))
        table = original.iloc[keep].reset_index(drop=True)
        shown = None if published is None else published.iloc[keep].reset_index(drop=True)
    else:
        table = original.reset_index(drop=True)
        shown = None if published is None else published.reset_index(drop=True)
    part, rest = _half_split(table[target], np.random.default_rng(s_split))
    if part.size == 0 or rest.size == 0:
        raise DataError("A shadow release needs at least two rows (one released, one "
                        "control); pass control rows or a larger table.")
    train = table.iloc[part].reset_index(drop=True)
    control = table.iloc[rest].reset_index(drop=True)
    with warnings.catch_warnings():
        # One group: the shadow is the part itself, which the attacks then measure.
        warnings.simplefilter("ignore", ProtectsNothingWarning)
        released = make_surrogate(train if shown is None else
                                  shown.iloc[part].reset_index(drop=True), grouping,
                                  target=target, random_state=s_perm)
    info = {"batch_rows": n_batch, "sampled_rows": len(table),
            "released_rows": len(train), "control_rows": len(control)}
    return train, released, control, info


def _check_tables(grouping: Grouping, target: str, **tables: pd.DataFrame | None) -> None:
    for name, table in tables.items():
        if table is None:
            continue
        if not isinstance(table, pd.DataFrame):
            raise DataError(f"The {name} table must be a pandas DataFrame, got "
                            f"{type(table).__name__}.")
        if target not in table.columns:
            raise DataError(f"Target column {target!r} is not in the {name} table.")
        cols = set(map(str, table.columns))
        if cols != set(grouping.columns) | {target}:
            extra = sorted(cols - set(grouping.columns) - {target})
            missing = sorted(set(grouping.columns) - cols)
            raise DataError(f"The {name} table does not match the grouping: "
                            f"unknown column(s) {extra}, missing column(s) {missing}.")


def _known_columns(columns: Sequence[str], target: str, model: Any) -> list[str]:
    """The attributes the attacker knows: the declared quasi-identifiers, else all."""
    declared = model is not None and model.declared
    return [str(c) for c in columns if str(c) != target and (not declared
                                                             or model.is_key(str(c)))]


def _attack_plan(attacked: pd.DataFrame, target: str, grouping: Grouping,
                 model: Any = None) -> list[tuple[str, dict[str, Any]]]:
    """What to attack: every attribute as the attacker's knowledge and the class (and
    each member of a multi-column group) as the secret; under a declared attacker
    ``model``, the quasi-identifiers as the knowledge (Giomi et al.'s ``aux_cols``) and
    the class and each declared sensitive column as the secrets."""
    attrs = [str(c) for c in attacked.columns if str(c) != target]
    declared = model is not None and model.declared
    known = _known_columns(attrs, target, model)
    plan: list[tuple[str, dict[str, Any]]] = []
    if known:
        plan = [("singling_out", {"mode": "univariate"}),
                ("singling_out", {"mode": "multivariate"})]
    if len(known) >= 2:
        plan.append(("linkability", {"how": "cut_largest_group"}))
        plan.append(("linkability", {"how": "random_split"}))
    if known:
        plan.append(("inference", {"secret": target, "aux": known, "variant": "class"}))
    if declared:
        plan += [("inference", {"secret": c, "aux": known, "variant": "sensitive"})
                 for c in attrs if c in model.sensitive and known]
    else:
        for g in grouping.groups:
            if len(g) > 1:
                for c in g:
                    plan.append(("inference", {"secret": c, "aux": [m for m in g if m != c],
                                               "variant": "group_member"}))
    if known:
        # The attribute with the most distinct released values: the likeliest to be
        # rare within a class, hence to disclose the class on its own.
        widest = max(known, key=lambda c: (attacked[c].nunique(dropna=True),
                                           -known.index(c)))
        plan.append(("inference", {"secret": target, "aux": [widest],
                                   "variant": "class_from_one_column"}))
    return plan


def _attack_round(t: AttackTables, attacked: pd.DataFrame, target: str, grouping: Grouping,
                  n_attacks: int, s_attacks: np.random.SeedSequence,
                  plan: list[tuple[str, dict[str, Any]]] | None = None, model: Any = None,
                  known_tables: AttackTables | None = None
                  ) -> tuple[list[tuple[str, AttackRisk]], list[tuple[str, dict[str, Any]]]]:
    """Every attack of the report on one released table; ``plan`` (what to attack, with
    the linkability splits drawn) is made here when not given, and returned.
    ``known_tables``: the tables of the declared quasi-identifiers alone, which the
    singling-out predicates are drawn on (else ``t``)."""
    drawn_here = plan is None
    if plan is None:
        plan = _attack_plan(attacked, target, grouping, model)
    known = _known_columns(attacked.columns, target, model)
    # One stream per attack, the same in every round; a linkability attack splits its
    # stream once into (split of the attributes, attack), spawned here and nowhere else,
    # so the round that draws the split attacks with the same stream as the others.
    streams = [s.spawn(2) if kind == "linkability" else (None, s)
               for (kind, _), s in zip(plan, s_attacks.spawn(len(plan)))]
    if drawn_here:
        key_grouping = grouping if model is None or not model.declared else \
            Grouping(model.key_groups(grouping.groups))
        for (kind, args), (s_split, _) in zip(plan, streams):
            if kind == "linkability":
                args["aux"] = linkability_split(known, key_grouping, how=args["how"],
                                                random_state=s_split)
    out: list[tuple[str, AttackRisk]] = []
    for (kind, args), (_, s) in zip(plan, streams):
        if kind == "singling_out":
            r = singling_out_attack(known_tables or t, args["mode"], n_attacks, s)
        elif kind == "linkability":
            r = linkability_attack(t, args["aux"], n_attacks, s, args["how"])
        else:
            r = inference_attack(t, args["secret"], args["aux"], n_attacks, s, args["variant"])
        out.append((kind, r))
    return out, plan


def _pooled(risks: Sequence[AttackRisk]) -> AttackRisk:
    """One attack repeated on several shadow releases, as one outcome.

    The point is the risk of the pooled success counts. Its interval is the wider of the
    pooled counts' interval and the releases' own spread (the mean of the releases'
    risks plus or minus Student's t times their standard error): the releases share
    rows, so their attacks are not independent and the pooled counts alone would
    overstate the precision.
    """
    from scipy.stats import t as student_t

    first = risks[0]
    if len(risks) == 1:
        return first
    n = sum(r.n_attacks for r in risks)
    ok_t = sum(r.n_success for r in risks)
    ok_c = sum(r.n_control_success for r in risks)
    ok_b = sum(r.n_baseline_success for r in risks)
    risk, (low, high) = residual_risk(n, ok_t, ok_c)
    each = np.array([r.risk for r in risks])
    sd = float(each.std(ddof=1))
    half = float(student_t.ppf(0.5 * (1 + CONFIDENCE), len(risks) - 1)) * sd / len(risks) ** 0.5
    ci = (max(0.0, min(low, risk - half)), min(1.0, max(high, risk + half)))
    notes = "; ".join(dict.fromkeys(r.note for r in risks if r.note))
    return dataclasses.replace(first, risk=risk, ci=ci, n_attacks=n, n_success=ok_t,
                               n_control_success=ok_c, n_baseline_success=ok_b,
                               note=notes, shadow_releases=len(risks), risk_sd=sd)


def _run_attacks(original: pd.DataFrame, released: pd.DataFrame | None,
                 control: pd.DataFrame | None, target: str, grouping: Grouping,
                 n_attacks: int, seed: int, shadow_max_rows: int,
                 shadow_releases: int = SHADOW_RELEASES, n_jobs: int | None = None,
                 model: Any = None, published: pd.DataFrame | None = None
                 ) -> tuple[dict[str, tuple[AttackRisk, ...]], str, dict | None]:
    """Every attack of the report, on ``control``, or, when it is None, on
    ``shadow_releases`` shadow releases (each attack pooled over them, :func:`_pooled`;
    the releases after the first run on ``n_jobs`` threads, the result does not depend
    on it)."""

    def one(train: pd.DataFrame, attacked: pd.DataFrame, ctl: pd.DataFrame,
            s_attacks: np.random.SeedSequence, plan: Any):
        columns = list(map(str, attacked.columns))
        t = AttackTables.encode(train, attacked[columns], ctl)
        known_tables = None
        if model is not None and model.declared:
            known = _known_columns(columns, target, model)
            known_tables = AttackTables.encode(train[known], attacked[known], ctl[known]) \
                if known else None
        return _attack_round(t, attacked, target, grouping, n_attacks, s_attacks, plan,
                             model, known_tables)

    def shadow_round(s: np.random.SeedSequence, plan: Any):
        s_shadow, s_attacks = s.spawn(2)
        train, attacked, ctl, info = _shadow(original, target, grouping, shadow_max_rows,
                                             s_shadow, published)
        return (*one(train, attacked, ctl, s_attacks, plan), info)

    if control is None:
        first, *rest = np.random.SeedSequence(seed).spawn(shadow_releases)
        found, plan, info = shadow_round(first, None)
        outcomes = [found, *[f for f, _, _ in run_threaded(lambda s: shadow_round(s, plan),
                                                           rest, thread_count(n_jobs))]]
        info = {**info, "releases": shadow_releases}
        mode = "shadow"
    else:
        _, s_attacks = np.random.SeedSequence(seed).spawn(2)
        outcomes = [one(original, released, control, s_attacks, None)[0]]
        info, mode = None, "given"
    out: dict[str, list[AttackRisk]] = {"singling_out": [], "linkability": [],
                                        "inference": []}
    for i, (kind, _) in enumerate(outcomes[0]):
        out[kind].append(_pooled([o[i][1] for o in outcomes]))
    if not out["linkability"]:
        out["linkability"].append(AttackRisk("linkability", 0.0, (0.0, 0.0), 0,
                                             note="needs at least two attribute columns"))
    for kind in ("singling_out", "inference"):
        if not out[kind]:  # a declared model with no quasi-identifier: nothing is known
            out[kind].append(AttackRisk(kind, 0.0, (0.0, 0.0), 0,
                                        note="the attacker model declares no "
                                             "quasi-identifier"))
    return {k: tuple(v) for k, v in out.items()}, mode, info


def measure_risk(original: pd.DataFrame, released: pd.DataFrame, *, target: str,
                 grouping: Grouping | Sequence[Sequence[str]] | str,
                 control: pd.DataFrame | None = None, n_attacks: int = 200,
                 k: int = 5, random_state: int | None = None,
                 shadow_max_rows: int = SHADOW_MAX_ROWS,
                 n_jobs: int | None = None, attacker_model: Any = None) -> RiskReport:
    """Measure the privacy risk of releasing ``released``, made from ``original``.

    Parameters
    ----------
    original : DataFrame
        The table the release was made from (attributes plus the class column).
    released : DataFrame
        The table published (same columns).
    target : str
        The class column.
    grouping : Grouping, list of lists or ``"a,b;c"`` text
        The artefact's grouping (a partition of the attributes).
    control : DataFrame, optional
        Rows of the same population that did not go into the release. Without it the
        attacks are run on a shadow release (a GoldenEye surrogate of a random,
        class-stratified half of ``original`` with ``grouping``; the other half is the
        control), the batch sampled down to ``2 * shadow_max_rows`` rows first.
    n_attacks : int, default 200
        Targets (or predicates) per attack and side; fewer when a table is smaller.
    k : int, default 5
        The ``k`` of the per-group ``share_below_k``.
    random_state : int, optional
        Root seed; drawn and recorded when omitted.
    shadow_max_rows : int, default 20000
    n_jobs : int, optional
        Threads for the pair linkage of a large table (default: every core); the
        report does not depend on it.
    attacker_model : AttackerModel, optional
        What the attacker knows: the attacks take its quasi-identifiers as auxiliary
        knowledge and the class and its sensitive columns as secrets (None: every
        attribute known, the class and each group's members secret).

    Returns
    -------
    RiskReport

    Notes
    -----
    Attack risks follow Giomi, Boenisch, Wehmeyer and Tasnádi, "A Unified Framework
    for Quantifying Privacy Risk in Synthetic Data", PETS 2023: ``(r_train - r_control)
    / (1 - r_control)`` of Wilson success rates, with a 95 % interval. Per-group
    disclosure and cross-group linkage are exact counts on the release.
    """
    from astrid_airflow.release import resolve_grouping

    from ._disclosure import disclosure_risk

    grouping, target, _ = resolve_grouping(grouping, target)
    n_attacks = check_attack_count(n_attacks)
    shadow_max_rows = check_positive_int(shadow_max_rows, "shadow_max_rows")
    seed = _seed(random_state)
    _check_tables(grouping, target, original=original, released=released, control=control)
    disclosure = disclosure_risk(original, released, target=target, grouping=grouping, k=k,
                                 n_jobs=n_jobs)
    out, mode, info = _run_attacks(original, released, control, target, grouping, n_attacks,
                                   seed, shadow_max_rows, n_jobs=n_jobs,
                                   model=attacker_model)
    return RiskReport(groups=disclosure.groups, pairs=disclosure.pairs,
                      singling_out=out["singling_out"], linkability=out["linkability"],
                      inference=out["inference"], control=mode, random_state=seed,
                      n_attacks=n_attacks, shadow=info)


def shadow_attacks(original: pd.DataFrame, *, target: str,
                   grouping: Grouping | Sequence[Sequence[str]] | str,
                   n_attacks: int = 200, random_state: int | None = None,
                   shadow_max_rows: int = SHADOW_MAX_ROWS,
                   attacker_model: Any = None, real: pd.DataFrame | None = None
                   ) -> dict[str, Any]:
    """The attacks of :func:`measure_risk` on a shadow release of ``original`` (JSON-ready).

    What the gate measures: the release is the whole batch, so a GoldenEye surrogate of
    a random class-stratified half (the artefact's ``grouping``) is attacked with the
    other half as control (Giomi et al. 2023; see :func:`measure_risk`, also for
    ``attacker_model``). ``real``: the people's own values of columns whose published
    values in ``original`` are not theirs (synthesised groups), row by row: the shadow
    releases ``original``'s values, and the attacks target the people's own.

    Returns
    -------
    dict
        ``{"control": "shadow", "shadow", "random_state", "n_attacks", "singling_out",
        "linkability", "inference"}``, each attack a list of ``AttackRisk.to_dict()``.
    """
    from astrid_airflow.release import resolve_grouping

    grouping, target, _ = resolve_grouping(grouping, target)
    n_attacks = check_attack_count(n_attacks)
    seed = _seed(random_state)
    _check_tables(grouping, target, original=original)
    published = None
    if real is not None:
        if len(real) != len(original):
            raise DataError("The people's own values must have one row per original row.")
        published, original = original, original.copy(deep=False)
        for c in real.columns:
            original[c] = real[c].array
    out, mode, info = _run_attacks(original, None, None, target, grouping, n_attacks, seed,
                                   check_positive_int(shadow_max_rows, "shadow_max_rows"),
                                   model=attacker_model, published=published)
    return {"control": mode, "shadow": info, "random_state": seed, "n_attacks": n_attacks,
            **{k: [r.to_dict() for r in v] for k, v in out.items()}}
