"""Disclosure figures of GoldenEye releases of UCI tables against the gate's defaults.

For vehicle, credit-a and diabetes (the learned groupings of
``results/astrid_runs/adaptive_<name>_svm_j1.json``) and the synthetic data (true
grouping), four releases: the raw surrogate (seed 2), the original with the most
distinct column of the largest group shuffled within class (every other column
aligned), the original itself, and, for the synthetic data, a surrogate of the values
coarsened to two levels each. For each: the worst group's share below k = 5 and class
disclosure share (with the group), how many groups fail the defaults, and the worst
pair's linked share against its expectation and tolerance.

Writes ``results/disclosure_uci.json`` and ``.md``. Run:
``ASTRID_UCI_DIR=... python benchmarks/disclosure_uci.py`` (a few seconds).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uci

from astrid_airflow import GatePolicy, disclosure_risk, make_surrogate, make_synthetic

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = {"vehicle": "adaptive_vehicle_svm_j1", "credit-a": "adaptive_credit-a_svm_j1",
        "diabetes": "adaptive_diabetes_svm_j1"}


def one_column_shuffled(table, grouping, target, seed=0):
    large = max(grouping, key=len)
    column = max(large, key=lambda c: table[c].nunique())
    rng = np.random.default_rng(seed)
    out = table.copy()
    for idx in table.groupby(target, sort=False).indices.values():
        out.loc[out.index[idx], column] = table[column].to_numpy()[rng.permutation(idx)]
    return out, column


def row(name, release, table, released, grouping, target, policy):
    risk = disclosure_risk(table, released, target=target, grouping=grouping,
                           k=policy.disclosure_k)
    below = max(risk.groups, key=lambda g: g.share_below_k)
    disc = max(risk.groups, key=lambda g: g.class_disclosure_share)
    judged = [(p, max(policy.max_linkage_excess, 6.0 * p.sd_linked_share))
              for p in risk.pairs]
    failing_pairs = [p for p, tol in judged if p.excess > tol + 1e-9]
    worst = max(judged, key=lambda x: x[0].excess - x[1]) if judged else None
    return {
        "table": name, "release": release, "rows": len(table), "groups": len(risk.groups),
        "pairs": len(risk.pairs),
        "worst_share_below_k": below.share_below_k, "worst_below_group": below.columns,
        "worst_k_min": min(g.k_min for g in risk.groups),
        "groups_failing_below_k": sum(g.share_below_k > policy.max_share_below_k
                                      for g in risk.groups),
        "worst_class_disclosure": disc.class_disclosure_share,
        "worst_disclosure_group": disc.columns,
        "groups_failing_disclosure": sum(
            g.class_disclosure_share > policy.max_class_disclosure_share
            for g in risk.groups),
        "pairs_failing_linkage": len(failing_pairs),
        "worst_pair": worst[0].to_dict() if worst else None,
        "worst_pair_tolerance": worst[1] if worst else None,
        "groups_detail": [g.to_dict() for g in risk.groups],
    }


def short(cols, n=3):
    cols = list(cols)
    return ", ".join(cols[:n]) + (f" (+{len(cols) - n})" if len(cols) > n else "")


def main() -> None:
    policy = GatePolicy()
    rows = []
    for name, run in RUNS.items():
        table, target = uci.load(name)
        grouping = json.loads((RESULTS / "astrid_runs" / f"{run}.json").read_text()
                              )["result"]["grouping"]
        s = make_surrogate(table, grouping, target=target, random_state=2)
        rows.append(row(name, "raw surrogate, learned grouping", table, s, grouping, target,
                        policy))
        oc, col = one_column_shuffled(table, grouping, target)
        rows.append(row(name, f"original, only {col!r} shuffled", table, oc, grouping,
                        target, policy))
        rows.append(row(name, "original", table, table, grouping, target, policy))
    t = make_synthetic(500, random_state=0)
    g = [["a1", "a2"], ["a3"], ["a4"]]
    rows.append(row("synthetic", "raw surrogate, true grouping", t,
                    make_surrogate(t, g, target="class", random_state=2), g, "class", policy))
    c = t.assign(a1=np.sign(t["a1"]), a2=np.sign(t["a2"]), a3=np.sign(t["a3"]),
                 a4=(t["a4"] > 0.5).astype(float))
    rows.append(row("synthetic", "coarsened to 2 levels, true grouping", c,
                    make_surrogate(c, g, target="class", random_state=2), g, "class", policy))
    oc, col = one_column_shuffled(t, g, "class")
    rows.append(row("synthetic", f"original, only {col!r} shuffled", t, oc, g, "class",
                    policy))

    lines = ["# Disclosure of GoldenEye releases against the gate's defaults", "",
             f"Defaults: k = {policy.disclosure_k}, max share below k "
             f"{policy.max_share_below_k}, max class disclosure "
             f"{policy.max_class_disclosure_share}, linkage tolerance max("
             f"{policy.max_linkage_excess}, 6 sd). Groupings: the learned ones of "
             "`astrid_runs/adaptive_<table>_svm_j1.json`; raw surrogate seed 2.", "",
             "| table | release | groups | worst share below k (group) | groups failing | "
             "worst class disclosure (group) | groups failing | pairs failing linkage | "
             "worst pair: linked / expected / tolerance |",
             "|---|---|---:|---|---:|---|---:|---:|---|"]
    for r in rows:
        wp = r["worst_pair"]
        pair = (f"{wp['linked_share']:.3f} / {wp['expected_linked_share']:.3f} / "
                f"+{r['worst_pair_tolerance']:.3f}" if wp else "—")
        lines.append(
            f"| {r['table']} | {r['release']} | {r['groups']} | "
            f"{r['worst_share_below_k']:.3f} ({short(r['worst_below_group'])}) | "
            f"{r['groups_failing_below_k']} | {r['worst_class_disclosure']:.3f} "
            f"({short(r['worst_disclosure_group'])}) | {r['groups_failing_disclosure']} | "
            f"{r['pairs_failing_linkage']} of {r['pairs']} | {pair} |")
    md = "\n".join(lines) + "\n"
    print(md)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "disclosure_uci.json").write_text(
        json.dumps(rows, indent=2, default=list) + "\n")
    (RESULTS / "disclosure_uci.md").write_text(md)


if __name__ == "__main__":
    main()
