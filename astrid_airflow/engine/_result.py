"""Results of the grouping test (Problem 1) and of ASTRID (Problem 2)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from astrid_airflow.io import native

from ._grouping import Grouping, letters


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


@dataclass(frozen=True)
class GroupingTestResult:
    """Outcome of :func:`test_grouping`.

    ``p_value = (1 + #{null_accuracies >= accuracy}) / (1 + len(null_accuracies))``.
    """

    grouping: Grouping
    p_value: float
    accuracy: float
    null_accuracies: np.ndarray
    n_fits: int
    seconds: float
    scoring: str = "accuracy"
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"grouping": self.grouping.to_list(), "p_value": self.p_value,
                "accuracy": self.accuracy,
                "null_accuracies": [float(v) for v in self.null_accuracies],
                "n_fits": self.n_fits, "seconds": self.seconds, "scoring": self.scoring,
                **self.params}


@dataclass(frozen=True)
class KRow:
    """One row of the paper's table: the best grouping of cardinality ``k``.

    ``acc_*`` and ``sd`` summarise the R null scores on the p-value split (for k = 1,
    ``acc_ave`` is the baseline a0 and the rest is empty, as in the paper);
    ``acc_search`` is the mean score over R' permutations on the search split.
    """

    k: int
    grouping: Grouping
    acc_ave: float
    acc_min: float | None
    acc_max: float | None
    sd: float | None
    p: float | None
    acc_search: float | None
    letters: str
    n_permutations: int | None = None  # null fits behind acc_* and p (adaptive: fewer)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "acc_ave": _num(self.acc_ave), "acc_min": _num(self.acc_min),
                "acc_max": _num(self.acc_max), "sd": _num(self.sd), "p": _num(self.p),
                "acc_search": _num(self.acc_search), "grouping": self.grouping.to_list(),
                "letters": self.letters, "n_permutations": self.n_permutations}

    @classmethod
    def from_dict(cls, d: dict[str, Any], order: list[str]) -> KRow:
        g = Grouping(d["grouping"])
        return cls(k=int(d["k"]), grouping=g, acc_ave=d["acc_ave"], acc_min=d.get("acc_min"),
                   acc_max=d.get("acc_max"), sd=d.get("sd"), p=d.get("p"),
                   acc_search=d.get("acc_search"),
                   letters=d.get("letters") or letters(g, order),
                   n_permutations=d.get("n_permutations"))


@dataclass(frozen=True)
class AstridResult:
    """Outcome of :func:`astrid` (Alg. 1 plus the p-value model selection)."""

    grouping: Grouping
    k: int
    table: tuple[KRow, ...]
    order: tuple[str, ...]
    baseline_accuracy: float
    p_og: float | None
    n_fits: int
    seconds: float
    target: str
    classes: tuple[Any, ...]
    columns: tuple[str, ...]
    classifier: dict[str, Any]
    scoring: str
    alpha: float
    n_search: int
    n_test: int
    random_state: int | None
    split: dict[str, int]
    search_scores: dict[str, Any] = field(default_factory=dict)
    # fits exact mode (R', R) would use; adaptive mode's stopping record (None: exact)
    n_fits_exact: int | None = None
    adaptive: dict[str, Any] | None = None
    # the cost estimate made before the search, with the actual time (machine-dependent)
    estimate: dict[str, Any] | None = field(default=None, compare=False)
    # the stratified sample the search ran on (None: every row)
    sample: dict[str, Any] | None = None
    # the pair screen before the sorting (None: not screened)
    screen: dict[str, Any] | None = None
    # CPU seconds of all fits (parent and workers); not serialised, machine-dependent
    cpu_seconds: float | None = field(default=None, compare=False)

    def row(self, k: int) -> KRow:
        return self.table[k - 1]

    @property
    def learned_k(self) -> int:
        """The highest k of the table with p >= alpha (1 when none): ASTRID's choice.

        Equals ``k`` for the learner's own result; an artefact whose release the
        privacy-aware choice took from elsewhere keeps that grouping in ``grouping``.
        """
        return max((r.k for r in self.table if r.p is not None and r.p >= self.alpha),
                   default=1)

    @property
    def is_learned_choice(self) -> bool:
        """True when ``grouping`` is ASTRID's own choice (the per-k row at ``learned_k``)."""
        return self.k == self.learned_k and self.row(self.k).grouping == self.grouping

    def to_dict(self) -> dict[str, Any]:
        return {
            "grouping": self.grouping.to_list(), "k": self.k,
            "table": [r.to_dict() for r in self.table],
            "baseline_accuracy": self.baseline_accuracy, "p_og": _num(self.p_og),
            "n_fits": self.n_fits, "seconds": self.seconds, "order": list(self.order),
            "target": self.target, "classes": [native(c) for c in self.classes],
            "columns": list(self.columns), "classifier": self.classifier,
            "scoring": self.scoring, "alpha": self.alpha, "n_search": self.n_search,
            "n_test": self.n_test, "random_state": self.random_state, "split": self.split,
            "search_scores": self.search_scores,
            "n_fits_exact": self.n_fits_exact, "adaptive": self.adaptive,
            "estimate": self.estimate, "sample": self.sample, "screen": self.screen,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AstridResult:
        order = list(d["order"])
        return cls(grouping=Grouping(d["grouping"]), k=int(d["k"]),
                   table=tuple(KRow.from_dict(r, order) for r in d["table"]),
                   order=tuple(order), baseline_accuracy=float(d["baseline_accuracy"]),
                   p_og=d.get("p_og"), n_fits=int(d["n_fits"]), seconds=float(d["seconds"]),
                   target=d["target"], classes=tuple(d["classes"]),
                   columns=tuple(d["columns"]), classifier=dict(d["classifier"]),
                   scoring=d["scoring"], alpha=float(d["alpha"]), n_search=int(d["n_search"]),
                   n_test=int(d["n_test"]), random_state=d.get("random_state"),
                   split=dict(d["split"]), search_scores=dict(d.get("search_scores", {})),
                   n_fits_exact=d.get("n_fits_exact"), adaptive=d.get("adaptive"),
                   estimate=d.get("estimate"), sample=d.get("sample"),
                   screen=d.get("screen"))

    def format_table(self) -> str:
        """The paper's table: k, accuracy summary, p, and letters in detach order."""
        head = ["k", "acc_ave", "acc_min", "acc_max", "sd", "p"]
        rows = []
        for r in self.table:
            cells = [str(r.k)] + [_fmt(v) for v in (r.acc_ave, r.acc_min, r.acc_max, r.sd, r.p)]
            rows.append((cells, r.letters.split(" "), r.grouping == self.grouping))
        width = [max(len(h), *(len(c[0][i]) for c in rows)) for i, h in enumerate(head)]
        attr_w = [max(len(a), *(len(c[1][j]) for c in rows)) for j, a in enumerate(self.order)]
        lines = ["  " + "  ".join(h.rjust(w) for h, w in zip(head, width)) + "   " +
                 " ".join(a.center(w) for a, w in zip(self.order, attr_w))]
        for cells, toks, chosen in rows:
            lines.append(("* " if chosen else "  ") +
                         "  ".join(c.rjust(w) for c, w in zip(cells, width)) + "   " +
                         " ".join(t.center(w) for t, w in zip(toks, attr_w)))
        groups = ", ".join("{" + ", ".join(g) + "}" for g in self.grouping.groups)
        lines.append("")
        if self.is_learned_choice:
            lines.append(f"chosen grouping (k = {self.k}, highest k with p >= "
                         f"{self.alpha:g}): {groups}")
        else:  # an artefact's result after the privacy-aware choice picked another release
            lines.append(f"released grouping (k = {self.k}, chosen for privacy; ASTRID's "
                         f"choice was k = {self.learned_k}, the highest k with p >= "
                         f"{self.alpha:g}): {groups}")
        p_og = "n/a" if self.p_og is None else f"{self.p_og:.3f}"
        fits = f"{self.n_fits}"
        if self.adaptive is not None and self.n_fits_exact:
            fits += f" (adaptive; exact mode: {self.n_fits_exact})"
        lines.append(f"a0 = {self.baseline_accuracy:.3f}   p_OG = {p_og}   "
                     f"classifier = {self.classifier.get('preset') or 'custom'}   "
                     f"fits = {fits}   seconds = {self.seconds:.1f}")
        return "\n".join(lines)


def _fmt(v: float | None) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"
