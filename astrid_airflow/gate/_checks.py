"""What the gate's checks compute and judge, without Great Expectations.

The GX classes that run the checks are in :mod:`astrid_airflow.gate.expectations` and
:mod:`astrid_airflow.gate.metrics`, listed by :mod:`._registry`, whose ``EXPECTATIONS``
(also readable from here) names every check (GX type -> category, metric, policy field)
in suite order; GX is imported lazily by :mod:`._kit`: nothing here imports it.

Checks that compare the surrogate with the original table need the original. A GX
batch is one table, so the original is *bound* for the duration of one validation run
(:func:`bind_reference`) and named by an opaque handle that the expectations receive as
the ``reference`` kwarg (a ``$PARAMETER`` in the stored suite). The privacy and utility
measures themselves live in :mod:`astrid_airflow.release` and
:mod:`astrid_airflow.privacy`, the integrity ones below; the judges turn a measure and a
threshold into a verdict with its details.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from astrid_airflow.io import native

EPS = 1e-9  # floating-point slack of the "at most" comparisons
MAX_DETAILS = 20  # differences listed in a result; the count is always complete


# ------------------------------------------------------------------ bound references

@dataclass
class _Reference:
    original: pd.DataFrame
    target: str
    utility: Callable[[], Mapping[str, Any]]
    attacks: Callable[[list, int], Mapping[str, Any] | None] | None = None
    progress: Any = None  # the gate's StageProgress: each metric computed is a step
    attacker_model: Any = None  # the roles the per-group checks count under
    copies: Any = None  # the original's rows repeating an earlier one (one person)
    synthesised: Any = None  # columns -> whether that group publishes no real value
    real: Any = None  # the batch's real values (before the recipe): the DCR test's
    seed: int = 0  # the gate's random_state (the DCR test's halves)
    _utility_value: Mapping[str, Any] | None = field(default=None, repr=False)
    _attack_values: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attack_value(self, grouping: list, n_attacks: int) -> Mapping[str, Any] | None:
        """The shadow attacks, computed once per run for the three attack checks."""
        key = (json.dumps(grouping), int(n_attacks))
        with self._lock:
            if key not in self._attack_values:
                self._attack_values[key] = None if self.attacks is None else \
                    self.attacks(grouping, int(n_attacks))
            return self._attack_values[key]

    def step(self, metric: str) -> Any:
        """The gate's step computing ``metric`` (a GX metric name), counted when done."""
        if self.progress is None:
            return contextlib.nullcontext()
        return self.progress.step(f"check {metric.removeprefix('astrid.')}", part=metric)

    def utility_value(self) -> Mapping[str, Any]:
        with self._lock:  # computed once per run, however many expectations ask
            if self._utility_value is None:
                self._utility_value = dict(self.utility())
            return self._utility_value


_REFERENCES: dict[str, _Reference] = {}
_REFERENCES_LOCK = threading.Lock()


@contextlib.contextmanager
def bind_reference(original: pd.DataFrame, *, target: str,
                   utility: Callable[[], Mapping[str, Any]],
                   attacks: Callable[[list, int], Mapping[str, Any] | None] | None = None,
                   progress: Any = None, attacker_model: Any = None,
                   copies: Any = None, synthesised: Any = None, real: Any = None,
                   seed: int = 0) -> Iterator[str]:
    """Make ``original`` available to the gate's metrics; yield its handle.

    Parameters
    ----------
    original : DataFrame
        The table the surrogate was made from.
    target : str
        The class column.
    utility : callable
        Returns ``{"accuracy_original", "accuracy_surrogate", ...}``; called at most once,
        when the utility expectation is evaluated.
    attacks : callable, optional
        ``attacks(grouping, n_attacks)`` returns the attack-based risks of a shadow
        release (``_risk.shadow_attacks``) or None; called once per grouping and count.
    progress : StageProgress, optional
        The gate's progress: every metric computed is counted as one of its steps.
    attacker_model : AttackerModel, optional
        The per-group checks count the quasi-identifier projections of this model (None:
        every column a quasi-identifier).
    copies : DataFrame, optional
        The rows of the source that repeat an earlier row exactly, in the release's
        domain before local suppression: the per-group checks count people, so each is
        taken off its (tuple, class) class's count.
    synthesised : callable, optional
        ``synthesised(columns)``: whether a group's values are all drawn from the
        recipe's model (``ReleaseRecipe.is_synthesised``); such a group publishes no
        real tuple, so the per-group and one-column checks leave it out.
    real : DataFrame, optional
        The batch before the recipe: what the synthesised groups' tuples are compared
        with (distance to the closest record), halved by ``seed``.

    Yields
    ------
    str
        The handle to pass as the ``reference`` suite parameter. It is forgotten when
        the ``with`` block ends, so a stale handle fails loudly instead of validating
        against the wrong table.
    """
    handle = f"original-{uuid.uuid4().hex[:12]}"
    with _REFERENCES_LOCK:
        _REFERENCES[handle] = _Reference(original=original, target=target, utility=utility,
                                         attacks=attacks, progress=progress,
                                         attacker_model=attacker_model, copies=copies,
                                         synthesised=synthesised, real=real,
                                         seed=seed)
    try:
        yield handle
    finally:
        with _REFERENCES_LOCK:
            _REFERENCES.pop(handle, None)


def bound_reference(handle: object) -> _Reference:
    with _REFERENCES_LOCK:
        ref = _REFERENCES.get(handle) if isinstance(handle, str) else None
    if ref is None:
        raise LookupError(f"No original table is bound to reference {handle!r}; run the "
                          "suite through astrid_airflow.validate_surrogate.")
    return ref


# ------------------------------------------------------------------- integrity metrics

def schema_differences(original: pd.DataFrame, surrogate: pd.DataFrame) -> list[str]:
    """Differences in column names, order and kinds (``integer``, ``float``, ``string``...).

    Kinds rather than exact dtypes are compared (as the artefact's schema check does):
    ``str`` and ``object`` strings, or a nominal column read as ``category`` from
    Parquet and as ``str`` from CSV, are the same data.
    """
    from astrid_airflow.release import column_kind

    out = []
    a, b = [str(c) for c in original.columns], [str(c) for c in surrogate.columns]
    missing = [c for c in a if c not in b]
    extra = [c for c in b if c not in a]
    if missing:
        out.append(f"missing column(s) {missing}")
    if extra:
        out.append(f"unexpected column(s) {extra}")
    if not missing and not extra and a != b:
        out.append(f"columns in another order: {b} instead of {a}")
    for c in a:
        if c in b:
            ka, kb = column_kind(original[c]), column_kind(surrogate[c])
            if ka != kb:
                out.append(f"column {c!r} is {kb} ({surrogate[c].dtype}) instead of "
                           f"{ka} ({original[c].dtype})")
    return out


def class_changes(original: pd.DataFrame, surrogate: pd.DataFrame, target: str) -> int:
    """Number of class labels the surrogate does not share with the original, as multisets.

    ``max(n_original, n_surrogate)`` minus the labels matched one to one
    (``sum_c min(count_original(c), count_surrogate(c))``): a relabelled row counts once,
    a row present in only one table once, and a missing class column changes every row.

    Notes
    -----
    A release publishes its rows in a random order (docs/privacy.md), so labels are not
    compared row for row: position is no evidence of integrity. What a row-for-row
    comparison would catch is caught on multisets: a relabelling changes this count
    unless it swaps labels between rows, which moves those rows' group tuples to another
    class and so fails
    :func:`multiset_differences`; added or dropped columns fail
    :func:`schema_differences`.
    """
    n = max(len(original), len(surrogate))
    if target not in surrogate.columns or target not in original.columns:
        return n
    from astrid_airflow.release import row_hashes

    # Hashes of the labels: a categorical and its plain values, or 1 and 1.0, agree.
    a, b = row_hashes(original, [target]), row_hashes(surrogate, [target])
    labels, inverse = np.unique(np.concatenate([a, b]), return_inverse=True)
    ca = np.bincount(inverse[:a.size], minlength=labels.size)
    cb = np.bincount(inverse[a.size:], minlength=labels.size)
    return n - int(np.minimum(ca, cb).sum())


def multiset_differences(original: pd.DataFrame, surrogate: pd.DataFrame, target: str,
                         groups: Sequence[Sequence[str]] | None = None) -> list[dict]:
    """(class, columns) pairs whose multiset of values differs from the original's.

    For every class label and every group of columns (every column on its own when
    ``groups`` is None), the multiset of the group's value tuples over the rows of that
    class must be identical in both tables. A GoldenEye shuffle with a grouping
    guarantees this for every group of that grouping (and for every column), so any
    difference is a bug, tampering, or a surrogate made with another grouping. Values
    are compared through the 64-bit row hashes of :func:`._hashing.row_hashes` (equal
    values hash equally across containers; a false match has probability ~2^-64).

    Returns
    -------
    list of dict
        ``{"class", "columns", "rows_original", "rows_surrogate", "differing_values"}``
        per differing pair; ``differing_values`` counts tuples in one table but not the
        other (with multiplicity). Empty when the tables agree.
    """
    if target not in original.columns or target not in surrogate.columns:
        return [{"class": None, "columns": [target], "rows_original": len(original),
                 "rows_surrogate": len(surrogate), "differing_values": None}]
    from astrid_airflow.release import row_hashes

    if groups is None:
        groups = [[c] for c in original.columns if c != target]
    # Classes are matched by the hash of their label, so 1 and 1.0 or a categorical and
    # its string values are the same class in both tables.
    la, lb = row_hashes(original, [target]), row_hashes(surrogate, [target])
    uniques, inverse = np.unique(np.concatenate([la, lb]), return_inverse=True)
    ca, cb = inverse[:len(original)], inverse[len(original):]
    seen, first = np.unique(la, return_index=True)
    label_of = dict(zip(seen.tolist(), original[target].iloc[first].tolist()))
    out = []
    for cols in groups:
        cols = [str(c) for c in cols]
        if any(c not in surrogate.columns or c not in original.columns for c in cols):
            out.append({"class": None, "columns": cols, "rows_original": len(original),
                        "rows_surrogate": len(surrogate), "differing_values": None})
            continue
        ha, hb = row_hashes(original, cols), row_hashes(surrogate, cols)
        for k in range(len(uniques)):
            va, vb = np.sort(ha[ca == k]), np.sort(hb[cb == k])
            if same_multiset(va, vb):
                continue
            label = label_of.get(int(uniques[k]), "(only in the surrogate)")
            out.append({"class": _scalar(label), "columns": cols,
                        "rows_original": int(va.size), "rows_surrogate": int(vb.size),
                        "differing_values": _sorted_difference(va, vb)})
    return out


def same_multiset(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays of row hashes (:func:`._hashing.row_hashes`) hold one multiset.

    The one per-class multiset check: the gate's integrity expectation and the release
    report's per-class comparison both use it.
    """
    return a.shape == b.shape and np.array_equal(np.sort(a), np.sort(b))


def _sorted_difference(a: np.ndarray, b: np.ndarray) -> int:
    """Size of the symmetric multiset difference of two sorted arrays."""
    values = np.union1d(a, b)
    ca = np.searchsorted(a, values, side="right") - np.searchsorted(a, values, side="left")
    cb = np.searchsorted(b, values, side="right") - np.searchsorted(b, values, side="left")
    return int(np.abs(ca - cb).sum())


def _scalar(value: Any) -> Any:
    value = native(value)
    if isinstance(value, float) and value != value:
        return None
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


#: One-sided 99 % normal quantile: the accuracy check refuses a drop only when it is
#: above the threshold by more than this many standard errors, so a release whose true
#: drop is at the threshold is refused by chance at most 1 % of the time.
UTILITY_Z = 2.326


def utility_observation(u: Mapping[str, Any]) -> tuple[float, dict]:
    acc_o, acc_s = float(u["accuracy_original"]), float(u["accuracy_surrogate"])
    details = {k: _scalar(v) if not isinstance(v, (list, dict)) else v for k, v in u.items()}
    return acc_o - acc_s, details


def judge_utility(u: Mapping[str, Any], threshold: float) -> tuple[bool, float, dict]:
    """The accuracy drop against ``threshold`` plus its noise allowance.

    A utility estimate on a few hundred held-out rows has a standard error near the
    usual 0.02 tolerance: judged on its point value, an honest batch release of
    diabetes was refused on 153 of 200 gate seeds (docs/gate.md). The allowance is
    ``UTILITY_Z`` standard errors of the drop
    (``difference_se``; 0 for precomputed figures without one), recorded in the details
    with the bound it gives.
    """
    drop, details = utility_observation(u)
    se = u.get("difference_se")
    se = float(se) if isinstance(se, (int, float)) and not isinstance(se, bool) \
        and math.isfinite(se) and se > 0 else 0.0
    allowed = threshold + UTILITY_Z * se
    details.update(difference_se=se, allowed_drop=allowed, z=UTILITY_Z)
    return bool(drop <= allowed + EPS), drop, details


# ------------------------------------------------------------ disclosure metrics

def _present_groups(grouping: Sequence[Sequence[str]], *tables: pd.DataFrame
                    ) -> list[list[str]]:
    """The grouping restricted to the columns every table has (a missing column is an
    integrity failure of its own; privacy is measured on what is there)."""
    groups = [[str(c) for c in g if all(str(c) in t.columns for t in tables)]
              for g in grouping]
    return [g for g in groups if g]


def real_groups(grouping: Sequence[Sequence[str]], synthesised: Any
                ) -> list[list[str]]:
    """The groups that publish real values (all, without a ``synthesised`` test)."""
    return [list(g) for g in grouping if synthesised is None or not synthesised(list(g))]


def group_disclosure_values(surrogate: pd.DataFrame, target: str,
                            grouping: Sequence[Sequence[str]], k: int,
                            attacker_model: Any = None, copies: Any = None,
                            synthesised: Any = None) -> list[dict] | None:
    """The per-group disclosure of ``surrogate``'s *published* tuples, or None when it
    cannot be measured (no class column, no rows, none of the grouping's columns).

    A row whose group values are all missing (locally suppressed) publishes nothing of
    that group: it is not counted in ``share_below_k`` / ``class_disclosure_share`` but
    in ``suppressed_rows`` / ``suppressed_share`` beside them
    (:func:`~astrid_airflow.release._suppression.published_exposure`). ``copies``: the
    original's rows that repeat an earlier one, so that the counts are of people.
    A ``synthesised`` group is not counted (``[]``: every group is synthesised)."""
    from astrid_airflow.release import published_exposure

    groups = _present_groups(grouping, surrogate)
    if target not in surrogate.columns or len(surrogate) == 0 or not groups:
        return None
    groups = real_groups(groups, synthesised)
    if not groups:
        return []
    if copies is not None and not all(c in copies.columns for g in groups for c in g):
        copies = None  # a column missing from the original: an integrity failure
    return published_exposure(surrogate, groups, target, int(k), attacker_model, copies)


def linkage_values(original: pd.DataFrame, surrogate: pd.DataFrame, target: str,
                   grouping: Sequence[Sequence[str]]) -> list[dict] | None:
    """``PairLinkage.to_dict()`` of every pair of groups, or None when it cannot be
    measured (no class column or no rows on either side)."""
    from astrid_airflow.privacy import cross_group_linkage

    groups = _present_groups(grouping, original, surrogate)
    if target not in surrogate.columns or target not in original.columns \
            or len(surrogate) == 0 or len(original) == 0 or not groups:
        return None
    return [p.to_dict() for p in cross_group_linkage(original, surrogate, target=target,
                                                     grouping=groups)]


_UNMEASURED = ("cannot be measured: the surrogate or the original lacks the class column, "
               "rows or the grouping's columns (see the integrity checks); failed to be safe")


_ALL_SYNTHESISED = ("every group's values are drawn from the recipe's class-conditional "
                    "model: no real tuple is published")


def judge_group_disclosure(groups: list[dict] | None, measure: str, threshold: float
                           ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of a per-group check: the worst group's ``measure``
    (``share_below_k`` or ``class_disclosure_share``) must be at most ``threshold``."""
    if groups is None:
        return False, None, {"note": _UNMEASURED}
    if not groups:
        return True, 0.0, {"note": _ALL_SYNTHESISED}
    worst = max(groups, key=lambda g: g[measure])  # first such in the grouping's order
    failing = [g for g in groups if g[measure] > threshold + EPS]
    details = {"group": worst["columns"], "k": worst["k"], "k_min": worst["k_min"],
               "share_below_k": worst["share_below_k"],
               "class_disclosure_share": worst["class_disclosure_share"],
               "suppressed_share": max(g.get("suppressed_share", 0.0) for g in groups),
               "failing_groups": [g["columns"] for g in failing][:MAX_DETAILS],
               "n_failing_groups": len(failing), "groups": groups}
    return not failing, float(worst[measure]), details


def judge_linkage(pairs: list[dict] | None, threshold: float
                  ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of the cross-group linkage check.

    Every pair's ``excess = linked_share - expected_linked_share`` must be at most its
    tolerance ``max(threshold, LINKAGE_Z * sd_linked_share)``; the observed value is
    the excess of the pair closest to (or furthest over) its tolerance.
    """
    from astrid_airflow.privacy import LINKAGE_Z

    if pairs is None:
        return False, None, {"note": _UNMEASURED}
    if not pairs:
        return True, 0.0, {"note": "one group: no pairs to link", "pairs": []}
    judged = [{**p, "tolerance": max(threshold, LINKAGE_Z * p["sd_linked_share"])}
              for p in pairs]
    worst = max(judged, key=lambda p: p["excess"] - p["tolerance"])
    failing = [p for p in judged if p["excess"] > p["tolerance"] + EPS]
    details = {"pair": worst["groups"], "linked_share": worst["linked_share"],
               "expected_linked_share": worst["expected_linked_share"],
               "sd_linked_share": worst["sd_linked_share"], "tolerance": worst["tolerance"],
               "z": LINKAGE_Z,
               "failing_pairs": [p["groups"] for p in failing][:MAX_DETAILS],
               "n_failing_pairs": len(failing), "pairs": judged[:200]}
    return not failing, float(worst["excess"]), details


def _attack_label(r: Mapping[str, Any]) -> str:
    if r.get("secret") is not None:
        known = r.get("aux_columns") or []
        return (f"inference of {r['secret']} from "
                + (",".join(known) if len(known) <= 3 else f"{len(known)} columns"))
    return f"{r['attack'].replace('_', '-')}, {r.get('variant')}"


def judge_attack(values: Mapping[str, Any] | None, attack: str, threshold: float
                 ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of an attack-based check (Giomi et al. 2023).

    Every variant of ``attack`` (``singling_out``, ``linkability`` or ``inference``) must
    have its upper 95 % bound at most ``threshold``; the observed value is the highest
    upper bound, and the details name the attack (and secret) it belongs to.
    """
    if values is None or not values.get(attack):
        return False, None, {"note": _UNMEASURED}
    risks = list(values[attack])
    worst = max(risks, key=lambda r: (r["ci"][1], r["risk"]))
    failing = [r for r in risks if r["ci"][1] > threshold + EPS]
    details = {"attack": _attack_label(worst), "risk": worst["risk"], "ci": worst["ci"],
               "n_attacks": worst["n_attacks"], "attack_n": values.get("n_attacks"),
               "control": values.get("control"),
               "shadow": values.get("shadow"), "random_state": values.get("random_state"),
               "failing_attacks": [_attack_label(r) for r in failing][:MAX_DETAILS],
               "n_failing_attacks": len(failing), "risks": risks[:MAX_DETAILS]}
    if worst.get("note"):
        details["note"] = worst["note"]
    return not failing, float(worst["ci"][1]), details


def class_from_column_values(surrogate: pd.DataFrame, target: str,
                             grouping: Sequence[Sequence[str]], synthesised: Any = None
                             ) -> list[dict] | None:
    """``AttackRisk.to_dict()`` of the exact class-from-one-column risk of every column
    of the grouping present in ``surrogate``, or None when it cannot be measured (no
    class column, no rows, none of the grouping's columns). A ``synthesised`` group's
    columns are left out (their values are no one's; ``[]``: every group is)."""
    from astrid_airflow.privacy import class_from_column_risks

    present = _present_groups(grouping, surrogate)
    if target not in surrogate.columns or len(surrogate) == 0 or not present:
        return None
    columns = [c for g in real_groups(present, synthesised) for c in g]
    if not columns:
        return []
    return [r.to_dict() for r in class_from_column_risks(surrogate, target=target,
                                                         columns=columns)]


def judge_class_from_column(risks: list[dict] | None, threshold: float
                            ) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of the class-from-one-column check: every column's
    upper 95 % bound at most ``threshold``; the observed value is the highest bound and
    the details name its column and every failing one."""
    if risks is None:
        return False, None, {"note": _UNMEASURED}
    if not risks:
        return True, 0.0, {"note": _ALL_SYNTHESISED}
    worst = max(risks, key=lambda r: (r["ci"][1], r["risk"]))
    failing = [r for r in risks if r["ci"][1] > threshold + EPS]
    details = {"column": worst["aux_columns"][0], "risk": worst["risk"], "ci": worst["ci"],
               "n_attacks": worst["n_attacks"],
               "failing_columns": [r["aux_columns"][0] for r in failing][:MAX_DETAILS],
               "n_failing_columns": len(failing), "risks": risks[:MAX_DETAILS]}
    return not failing, float(worst["ci"][1]), details


def judge_closeness(groups: list[dict] | None) -> tuple[bool, float | None, dict]:
    """(success, observed, details) of the synthesised groups' DCR test: the largest
    excess of the synthetic share over the real one, each within its allowance."""
    if groups is None or any(not g["measured"] for g in groups):
        return False, None, {"note": _UNMEASURED, "groups": groups}
    if not groups:
        return True, 0.0, {"note": "no group is synthesised"}
    worst = max(groups, key=lambda g: g["excess"] - g["allowed_excess"])
    failing = [g["columns"] for g in groups if g["excess"] > g["allowed_excess"] + EPS]
    return not failing, float(worst["excess"]), {
        "group": worst["columns"], "allowed_excess": worst["allowed_excess"],
        "failing_groups": failing[:MAX_DETAILS], "groups": groups[:MAX_DETAILS]}


def share_value(value: Any) -> float:
    """The share from ``largest_group_unique_share`` (a number, or a mapping with it)."""
    if isinstance(value, Mapping):
        for key in ("largest_group_unique_share", "share", "value"):
            if key in value:
                return float(value[key])
        raise TypeError(f"largest_group_unique_share returned {value!r}")
    return float(value)
