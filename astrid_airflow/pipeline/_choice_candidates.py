"""The candidate groupings of the release choice and how they are derived (the per-k
table's groupings, a grouping with its unsafe groups split, along the table or into
singletons) and labelled; used by :mod:`._choice`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from astrid_airflow.engine import Grouping


def candidate_groupings(result: Mapping[str, Any], attrs: list[str], *, coarser: bool = True
                ) -> tuple[list[tuple[str, Grouping]], list[str]]:
    """The groupings tried, and the labels of those left out (``coarser=False``: the
    per-k table's groupings that merge learned groups)."""
    seen: dict[Grouping, str] = {}
    learned = Grouping(result["grouping"])
    seen[learned] = f"learned (k={learned.k})"
    skipped = []
    for row in result.get("table") or []:
        g = row.get("grouping")
        if g and len(g) > 1:
            gg = Grouping(g)
            if not coarser and gg != learned and merges(gg, learned):
                skipped.append(f"per-k table, k={gg.k}")
                continue
            seen.setdefault(gg, f"per-k table, k={gg.k}")
    seen.setdefault(Grouping.singletons(attrs), "all singletons")
    return [(label, g) for g, label in seen.items()], skipped


def merges(grouping: Grouping, learned: Grouping) -> bool:
    """Every learned group inside one group of ``grouping``: its groups are unions of
    learned ones, so each projection is at least as fine (its remedies at least as
    coarse), and the learned grouping already keeps every interaction found."""
    where = {c: i for i, g in enumerate(grouping.groups) for c in g}
    return all(len({where[c] for c in g}) == 1 for g in learned.groups)


def split_unsafe(grouping: Grouping, failing: list[tuple[str, ...]]) -> Grouping:
    groups: list[list[str]] = []
    for g in grouping.groups:
        groups.extend([[c] for c in g] if tuple(g) in failing else [list(g)])
    return Grouping(groups)


def split_along_table(grouping: Grouping, failing: list[tuple[str, ...]],
                       finer: list[Grouping]) -> Grouping | None:
    """Each failing group cut into its parts in the next finer grouping of the table.

    ASTRID's per-k table is a hierarchy of dependence: the first finer grouping that
    cuts a group into several parts is the split that keeps the most of the group's
    joint structure (the other groups are kept as they are). ``None``: no finer
    grouping cuts any failing group.
    """
    groups: list[list[str]] = []
    changed = False
    for g in grouping.groups:
        parts = [list(g)]
        if tuple(g) in failing:
            for f in finer:  # ordered by k, coarsest first
                cut = [[c for c in h if c in g] for h in f.groups]
                cut = [h for h in cut if h]
                if len(cut) > 1:
                    parts, changed = cut, True
                    break
        groups.extend(parts)
    return Grouping(groups) if changed else None


def partition_costs(cands: list[dict[str, Any]], split_for: dict[str, Grouping]) -> None:
    """Each partitioned candidate records what the partition costs or saves: its
    accuracy beside the same grouping's with the unsafe groups split instead
    (``without_partition``: that candidate's label and accuracy)."""
    for c in cands:
        # a fallback of a chosen partitioned release was not measured against a split
        if c["method"] != "partition" or c["label"] not in split_for:
            continue
        split = next((o for o in cands if o["method"] == "bins" and o["max_bins"] is None
                      and Grouping(o["grouping"]) == split_for[c["label"]]), None)
        c["without_partition"] = None if split is None else {
            "label": split["label"], "accuracy_surrogate": split["accuracy_surrogate"],
            "accuracy_drop": split["accuracy_drop"], "failed": list(split["failed"])}


def then(label: str, step: str) -> str:
    """``label, step``; a step repeated in a row is counted (``step ×3``), not restated.

    >>> then(then("per-k table, k=4", "split"), "split")
    'per-k table, k=4, split ×2'
    """
    m = re.fullmatch(rf"(.*), {re.escape(step)}(?: ×(\d+))?", label)
    if m is None:
        return f"{label}, {step}"
    return f"{m.group(1)}, {step} ×{int(m.group(2) or 1) + 1}"
