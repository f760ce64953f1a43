"""Collection plans: which attributes to collect together (ASTRID paper, Sec. 6.3).

:func:`collection_plan` reads from an artefact which attributes must be collected
together (one questionnaire or source per group of the chosen grouping) and what
collecting the groups separately and fusing them by class (:func:`fuse_parts`) costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from astrid_airflow.engine import Grouping, letters


@dataclass(frozen=True)
class CollectionPlan:
    """Which attributes to collect together, from an artefact (:func:`collection_plan`).

    Attributes
    ----------
    target : str
    classes : tuple
    groups : list of list of str
        The chosen grouping: each group is one questionnaire or source; group ``j`` is
        numbered ``j + 1``.
    together, separately : list
        Groups of two or more attributes (to collect together), and the attributes
        that are groups of their own (collectable alone).
    k, p_value, alpha
        The chosen grouping's cardinality and p-value (None for k = 1, untested).
    baseline_accuracy, accuracy, accuracy_cost
        a0 (all attributes together), acc_ave at the chosen k, and a0 - acc_ave.
    table : list of dict
        Every k of the artefact's table: ``k``, ``acc_ave``, ``accuracy_cost``, ``p``,
        ``sd``, ``letters``, ``groups``.
    scoring, classifier, n_test, order, p_og
        As recorded in the artefact.
    """

    target: str
    classes: tuple
    groups: list
    together: list
    separately: list
    k: int
    p_value: float | None
    alpha: float
    baseline_accuracy: float | None
    accuracy: float | None
    accuracy_cost: float | None
    table: list
    scoring: str
    classifier: Any
    n_test: int
    order: list
    p_og: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "classes": list(self.classes), "k": self.k,
            "groups": [{"group": j + 1, "columns": list(g)}
                       for j, g in enumerate(self.groups)],
            "together": [list(g) for g in self.together],
            "separately": list(self.separately),
            "p_value": self.p_value, "alpha": self.alpha,
            "baseline_accuracy": self.baseline_accuracy, "accuracy": self.accuracy,
            "accuracy_cost": self.accuracy_cost, "scoring": self.scoring,
            "classifier": self.classifier, "n_test": self.n_test,
            "p_og": self.p_og, "order": list(self.order),
            "table": [dict(r) for r in self.table],
        }

    def format(self) -> str:
        """The plan as text: one line per questionnaire/source, then the per-k table."""
        def num(v: float | None, fmt: str = ".3f") -> str:
            return "n/a" if v is None else format(v, fmt)

        lines = [f"Collection plan for class {self.target!r}: {self.k} questionnaire(s) "
                 "or source(s)."]
        for j, g in enumerate(self.groups):
            how = "collect together" if len(g) > 1 else "may be collected alone"
            lines.append(f"  group {j + 1}: {', '.join(g)}  ({how})")
        lines.append("Each group may come from different respondents or systems; every "
                     f"record must carry its class ({self.target!r}). Fuse them with "
                     "`astrid fuse`.")
        if self.k == 1:
            lines.append("The grouping has a single group: every attribute must be "
                         "collected together.")
        lines.append(f"p-value of this grouping: {num(self.p_value)} (alpha "
                     f"{self.alpha:g}; the highest k not rejected; R = {self.n_test})")
        lines.append(f"{self.scoring}: {num(self.baseline_accuracy)} with all attributes "
                     f"together (a0), {num(self.accuracy)} with this grouping "
                     f"(cost {num(self.accuracy_cost, '+.3f')})")
        lines.append("")
        lines.append("    k  acc_ave     cost      p   groups")
        for r in self.table:
            mark = "*" if r["k"] == self.k else " "
            lines.append(f"{mark} {r['k']:>3}  {num(r['acc_ave']):>7}  "
                         f"{num(r['accuracy_cost'], '+.3f'):>7}  {num(r['p']):>5}   "
                         f"{r['letters']}")
        if self.order:
            lines.append(f"      letters over: {' '.join(self.order)}")
        return "\n".join(lines)


def _float(v: Any) -> float | None:
    return None if v is None else float(v)


def collection_plan(artefact: Any) -> CollectionPlan:
    """Which attributes go together in one questionnaire or source, from an artefact.

    The chosen grouping's groups must be collected together (each from one
    respondent or system); different groups may be collected separately and fused by
    class with :func:`fuse_parts`. The price is the paper's table: the accuracy cost of
    grouping S_k is a0 - acc_ave(k), where a0 is the accuracy with every attribute
    collected together and acc_ave(k) the mean accuracy of classifiers trained on
    GoldenEye permutations of S_k (which is what fused data looks like); the chosen
    grouping is the highest k whose p-value is at least alpha.

    Parameters
    ----------
    artefact : GroupingArtefact
        A learned grouping with its ``result`` (``AstridResult.to_dict()``).

    Returns
    -------
    CollectionPlan
    """
    grouping: Grouping = artefact.grouping
    result = artefact.result if isinstance(artefact.result, Mapping) else {}
    rows = {int(r["k"]): r for r in result.get("table", []) if isinstance(r, Mapping)
            and "k" in r}
    a0 = result.get("baseline_accuracy")
    if a0 is None and 1 in rows:
        a0 = rows[1].get("acc_ave")
    a0 = _float(a0)
    order = list(result.get("order") or artefact.attributes)
    table = []
    for k in sorted(rows):
        r = rows[k]
        acc = _float(r.get("acc_ave"))
        g = Grouping(r["grouping"]) if r.get("grouping") else None
        table.append({
            "k": k, "acc_ave": acc,
            "accuracy_cost": None if acc is None or a0 is None else a0 - acc,
            "p": _float(r.get("p")), "sd": _float(r.get("sd")),
            "letters": r.get("letters") or (letters(g, order) if g else ""),
            "groups": g.to_list() if g else None})
    chosen = rows.get(grouping.k, {})
    acc, p_value = _float(chosen.get("acc_ave")), _float(chosen.get("p"))
    if grouping.k == 1:  # the unpermuted table: a0, and nothing to test
        acc, p_value = a0, None
    groups = grouping.to_list()
    return CollectionPlan(
        target=artefact.target, classes=tuple(artefact.classes), groups=groups,
        together=[g for g in groups if len(g) > 1],
        separately=[g[0] for g in groups if len(g) == 1] if grouping.k > 1 else [],
        k=grouping.k, p_value=p_value, alpha=float(artefact.alpha),
        baseline_accuracy=a0, accuracy=acc,
        accuracy_cost=None if acc is None or a0 is None else a0 - acc,
        table=table, scoring=artefact.scoring, classifier=artefact.classifier,
        n_test=artefact.n_test, order=order, p_og=_float(result.get("p_og")))
