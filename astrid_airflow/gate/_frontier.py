"""The frontier of a release choice: every candidate measured, privacy against utility.

:func:`frontier_points` turns the candidates a release choice recorded
(``artefact.release["candidates"]``) into :class:`FrontierPoint` records: what each
costs in accuracy, every privacy figure measured on it, its worst privacy margin
(:func:`privacy_margin`) and whether it passed. On a refusal,
:func:`nearest_candidates` names the two or three candidates closest to passing, each
with the single policy change that would accept it when one check alone fails it
(:func:`policy_change_text` words them). The figures are judged against the policy
exactly as the choice judged them (a check fails when its figure exceeds its
threshold), so the change advised is the smallest value of that threshold that passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The privacy checks of the choice: check (as named in a candidate's ``failed``) ->
#: (its figure's key in the candidate's ``risks``, the policy's threshold). The attacks
#: are judged on the bound the gate's own draw may reach; the cross-group linkage is
#: read where a choice recorded it (the gate measures it on the published file).
PRIVACY_CHECKS: dict[str, tuple[str, str]] = {
    "share_below_k": ("share_below_k", "max_share_below_k"),
    "class_disclosure": ("class_disclosure_share", "max_class_disclosure_share"),
    "suppression": ("suppressed_share", "max_suppressed_share"),
    "largest_group_unique_share": ("largest_group_unique_share",
                                   "max_largest_group_unique_share"),
    "intact_rows": ("intact_row_proportion_after_swaps", "max_intact"),
    "class_from_one_column": ("class_from_one_column_upper",
                              "max_class_from_one_column_risk"),
    "singling_out": ("singling_out_gate_bound", "max_singling_out_risk"),
    "linkability": ("linkability_gate_bound", "max_linkability_risk"),
    "inference": ("inference_gate_bound", "max_inference_risk"),
    "linkage": ("linkage_excess", "max_linkage_excess"),
}
#: The utility check: the accuracy lost on held-out real rows against its bar.
UTILITY_CHECK = ("utility", "max_accuracy_drop")
ATTACKS = ("singling_out", "linkability", "inference")
#: How many candidates a refusal names.
NEAREST = 3


@dataclass(frozen=True)
class FrontierPoint:
    """One candidate release of a choice, as a point of its privacy-utility frontier.

    ``privacy`` holds every privacy figure measured on it (check -> figure, the keys of
    ``PRIVACY_CHECKS``); ``worst_margin`` is the smallest :func:`privacy_margin` over
    them (``worst_check`` names it; negative: that check fails), a check whose bar is 0
    counted only when it fails (met, it is met exactly: no slack to rank by).
    ``unmeasured`` lists the checks not run on it: the attacks run only on candidates
    that pass every other check, most accurate first; ``"batch_suppression"``: the
    suppression budget on new batches, drawn only while no other check refused it; and
    ``"utility"`` means its
    accuracy was scored in sample only (a candidate a privacy check refused; a release
    is scored out of sample). ``passed``: every check measured and none failed;
    ``chosen``: the release.
    """

    index: int
    label: str
    grouping: tuple[tuple[str, ...], ...]
    recipe: str
    accuracy_drop: float | None
    accuracy_drop_se: float | None
    privacy: Mapping[str, float]
    worst_margin: float | None
    worst_check: str | None
    suppressed_share: float | None
    failed: tuple[str, ...]
    unmeasured: tuple[str, ...]
    passed: bool
    chosen: bool

    __hash__ = None  # holds a dict

    def to_dict(self) -> dict[str, Any]:
        """JSON-native dict (the ``frontier`` entries of ``astrid learn --json``)."""
        return {"index": self.index, "label": self.label,
                "grouping": [list(g) for g in self.grouping], "recipe": self.recipe,
                "accuracy_drop": self.accuracy_drop,
                "accuracy_drop_se": self.accuracy_drop_se, "privacy": dict(self.privacy),
                "worst_margin": self.worst_margin, "worst_check": self.worst_check,
                "suppressed_share": self.suppressed_share, "failed": list(self.failed),
                "unmeasured": list(self.unmeasured), "passed": self.passed,
                "chosen": self.chosen}


def privacy_margin(figure: float, threshold: float) -> float:
    """How far a privacy figure is inside its threshold: ``threshold - figure``.

    Every figure of the choice is a share of rows or a probability in [0, 1], against a
    threshold on the same scale, so the plain difference is one unit for all checks (a
    ratio to the threshold is undefined for the zero bars of the k-anonymity checks).
    Positive: the check passes with that much to spare; negative: it fails by that much.

    >>> privacy_margin(0.03, 0.05), privacy_margin(0.2, 0.1)
    (0.02, -0.1)
    """
    return round(float(threshold) - float(figure), 12)


def _threshold(policy: Any, field: str) -> float | None:
    value = policy.get(field) if isinstance(policy, Mapping) else getattr(policy, field, None)
    return None if value is None else float(value)


def check_figure(candidate: Mapping[str, Any], check: str) -> float | None:
    """The figure a check judges on a recorded candidate (None: not measured). The
    suppression budget is judged on the reference and on batches like it (the larger);
    the utility check on the accuracy lost."""
    if check == UTILITY_CHECK[0]:
        drop = candidate.get("accuracy_drop")
        return None if drop is None else float(drop)
    r = candidate.get("risks") or {}
    key = PRIVACY_CHECKS[check][0]
    if check == "suppression":
        found = [r[k] for k in (key, "batch_suppressed_share") if r.get(k) is not None]
        return max(map(float, found)) if found else None
    if check == "intact_rows" and r.get(key) is None:
        key = "expected_intact_row_proportion"
    if check in ATTACKS and r.get(key) is None:
        key = f"{check}_upper"
    return None if r.get(key) is None else float(r[key])


def _recipe_summary(c: Mapping[str, Any]) -> str:
    """The candidate's recipe in a line: its method and each remedied group."""
    method = str(c.get("method") or "bins")
    if c.get("max_bins") is not None:
        method += f", at most {c['max_bins']} bins"
    steps = [f"{{{', '.join(map(str, g.get('columns', [])))}}}: {g.get('remedy')}"
             for g in c.get("remedies") or [] if g.get("remedy") not in (None, "unchanged")]
    return f"{method}: " + ("; ".join(steps) if steps else "no group remedied")


def frontier_point(c: Mapping[str, Any], index: int, policy: Any, chosen: bool
                   ) -> FrontierPoint:
    """One recorded candidate of a choice, judged against ``policy`` (its thresholds by
    name: a :class:`GatePolicy` or the release record's ``policy`` dict)."""
    privacy: dict[str, float] = {}
    margins: dict[str, float] = {}
    for check, (_, field) in PRIVACY_CHECKS.items():
        figure = check_figure(c, check)
        if figure is None:
            continue
        privacy[check] = figure
        threshold = _threshold(policy, field)
        # a zero bar met (the k-anonymity checks on published tuples, 0 by
        # construction) has no slack to compare: it enters the worst margin only failing
        if threshold is not None and (threshold > 0 or figure > 0):
            margins[check] = privacy_margin(figure, threshold)
    worst = min(margins, key=lambda k: (margins[k], k)) if margins else None
    attacked = all(f"{a}_upper" in (c.get("risks") or {}) for a in ATTACKS)
    failed = tuple(c.get("failed") or ())
    # a candidate a privacy check refused was scored in sample: its out-of-sample
    # accuracy (what a release is judged on) is still to measure
    in_sample = c.get("utility_scored") == "in sample" and "utility" not in failed
    r = c.get("risks") or {}
    # the suppression budget on new batches: not drawn on a candidate another check
    # refused first (a choice before that rule drew them on every candidate)
    batches = () if "batch_suppressed_share" in r else ("batch_suppression",)
    unmeasured = (() if attacked else ATTACKS) + batches + \
        (("utility",) if in_sample else ())
    drop, se = c.get("accuracy_drop"), c.get("accuracy_drop_se")
    return FrontierPoint(
        index=index, label=str(c.get("label")),
        grouping=tuple(tuple(map(str, g)) for g in c.get("grouping") or ()),
        recipe=_recipe_summary(c), accuracy_drop=None if drop is None else float(drop),
        accuracy_drop_se=None if se is None else float(se), privacy=privacy,
        worst_margin=None if worst is None else margins[worst], worst_check=worst,
        suppressed_share=None if r.get("suppressed_share") is None
        else float(r["suppressed_share"]),
        failed=failed, unmeasured=unmeasured, passed=not failed and not unmeasured,
        chosen=chosen)


def frontier_points(candidates: Sequence[Mapping[str, Any]], policy: Any,
                    chosen: int | None) -> list[FrontierPoint]:
    """Every candidate a choice measured (``release["candidates"]``, in its order), as
    frontier points judged against ``policy``; ``chosen``: the release's index."""
    return [frontier_point(c, i, policy, i == chosen) for i, c in enumerate(candidates)]


def _miss(p: FrontierPoint, candidate: Mapping[str, Any], check: str, policy: Any
          ) -> dict[str, Any]:
    """A failed check of a candidate: its figure, the policy's threshold and field."""
    field = UTILITY_CHECK[1] if check == UTILITY_CHECK[0] else \
        PRIVACY_CHECKS.get(check, (None, None))[1]
    return {"check": check, "field": field,
            "threshold": None if field is None else _threshold(policy, field),
            "figure": check_figure(candidate, check) if field is not None else None}


def nearest_candidates(points: Sequence[FrontierPoint],
                       candidates: Sequence[Mapping[str, Any]], policy: Any,
                       n: int = NEAREST) -> list[dict[str, Any]]:
    """The ``n`` candidates nearest to passing (fewest failed checks, then the least
    total shortfall of their figures over the thresholds, then the least accuracy
    lost), each with its misses and, when exactly one check fails it, the single policy
    change that would accept it on the checks measured (``change``: that threshold set
    to the figure, the smallest value that passes; ``unmeasured``: the checks still to
    run then: the attacks of a candidate a cheaper check refused, its out-of-sample
    utility)."""
    out = []
    for p in points:
        if p.passed or not p.failed:
            continue
        misses = [_miss(p, candidates[p.index], f, policy) for f in p.failed]
        shortfall = sum((m["figure"] or 0.0) - (m["threshold"] or 0.0) for m in misses
                        if m["figure"] is not None and m["threshold"] is not None)
        change = None
        if len(misses) == 1 and misses[0]["figure"] is not None:
            change = {"field": misses[0]["field"], "value": misses[0]["figure"]}
        out.append(((len(misses), shortfall, p.accuracy_drop or 0.0, p.index),
                    {"index": p.index, "label": p.label, "accuracy_drop": p.accuracy_drop,
                     "misses": misses, "change": change,
                     "unmeasured": list(p.unmeasured)}))
    return [entry for _, entry in sorted(out, key=lambda e: e[0])[:n]]


def policy_change_text(change: Mapping[str, Any]) -> str:
    """``"max_accuracy_drop 0.031"``: the field and its value rounded up to three
    decimals (still at least the figure, so the advice passes as printed).

    >>> policy_change_text({"field": "max_accuracy_drop", "value": 0.0304})
    'max_accuracy_drop 0.031'
    """
    value = math.ceil(round(float(change["value"]) * 1000, 6)) / 1000
    return f"{change['field']} {min(value, 1.0):.3f}"


def nearest_text(nearest: Sequence[Mapping[str, Any]]) -> str:
    """The refusal's sentence on the nearest candidates (empty: none)."""
    if not nearest:
        return ""
    parts = []
    for e in nearest:
        if e["change"] is not None:
            then = "" if not e["unmeasured"] else \
                f" if {', '.join(e['unmeasured'])} then pass (not yet measured)"
            parts.append(f"{e['label']}: accepted with {policy_change_text(e['change'])}"
                         + then)
        else:
            misses = ", ".join(
                m["check"] if m["figure"] is None else
                f"{m['check']} {m['figure']:.3f} > {m['threshold']}" for m in e["misses"])
            parts.append(f"{e['label']}: misses {misses}")
    return "nearest candidates: " + " | ".join(parts)
