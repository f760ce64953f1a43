"""Issue 32: would class-informed Mondrian cuts make the partition cheap enough?

The library's partition (``fit_partition``, ``cuts="median"``) cuts a cell at the
allowed cut nearest the median of its widest dimension (Mondrian, LeFevre et al., ICDE
2006). The variant measured here (``cuts="class-entropy"``) cuts where the class entropy
of the two sides is lowest, over every dimension (InfoGain Mondrian, LeFevre, DeWitt and
Ramakrishnan, "Workload-aware anonymization", KDD 2006), under exactly the same allowed
cuts (both sides with at least two classes and ``min_class_rows`` rows of each class
they hold), so the guarantee is the same and only the cost can differ.

Per table (UCI ARFF cleaned by ``uci.py``, 50/50 stratified split, seed 0, as
``bench_release.py``) and per grouping of the stored ASTRID run's per-k table
(``results/astrid_runs/adaptive_<table>_svm_j1.json``) with a multi-column group: each
multi-column group is partitioned on the release part as the release fit asks (k = 5
times ``BATCH_FACTOR`` 3, so 15 rows of each class per cell), every singleton is left raw
(this isolates the partition's cost), the release part is shuffled (GoldenEye, seeds 0 to
4) and an svm trained on it is scored on the control part in the same domain. Recorded:
the cells per partitioned group and the svm accuracy loss against the svm trained on the
raw release part, for both cut rules, and for median cuts without the batch margin
(5 rows of each class per cell: what the margin costs).

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_partition_cuts.py``
Writes ``results/partition_cuts.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TABLES = ("vehicle", "segment", "synthetic")
SEEDS = range(5)

sys.path.insert(0, str(HERE))
import bench_e2e  # noqa: E402  (the accuracy measure)
import bench_release  # noqa: E402  (the split)


def _loss(part, ctl, target: str, groups: list, cuts: str, base: float, factor: int) -> dict:
    from astrid_airflow import (
        Grouping,
        ProtectsNothingWarning,
        ReleaseRecipe,
        apply_recipe,
        make_surrogate,
    )
    from astrid_airflow.pipeline import fit_partition

    k = 5
    steps = [fit_partition(part[g], part[target], k, factor * k, cuts=cuts)
             for g in groups if len(g) > 1]
    recipe = ReleaseRecipe(k=k, steps=tuple(steps), target=target)
    part_d, ctl_d = apply_recipe(part, recipe), apply_recipe(ctl, recipe)
    accs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProtectsNothingWarning)
        for seed in SEEDS:
            sur = make_surrogate(part_d, Grouping(groups), target=target, random_state=seed)
            accs.append(bench_e2e._accuracy(sur, ctl_d, target, "svm"))
    return {"cells": [len(s["cells"]) for s in steps], "loss": base - float(np.mean(accs))}


def run_table(name: str) -> dict:
    from astrid_airflow.pipeline import BATCH_FACTOR

    _, target, part, ctl = bench_release._split(name)
    run = json.loads((RESULTS / "astrid_runs" / f"adaptive_{name}_svm_j1.json").read_text())
    base = bench_e2e._accuracy(part, ctl, target, "svm")
    rows = []
    for entry in run["result"]["table"]:
        groups = entry["grouping"]
        if all(len(g) == 1 for g in groups):
            continue
        rows.append({"k": entry["k"], "group_sizes": sorted(len(g) for g in groups
                                                            if len(g) > 1),
                     "median": _loss(part, ctl, target, groups, "median", base,
                                     BATCH_FACTOR),
                     "informed": _loss(part, ctl, target, groups, "class-entropy", base,
                                       BATCH_FACTOR),
                     # without the batch margin: k rows of each class per cell
                     "median_k": _loss(part, ctl, target, groups, "median", base, 1)})
    return {"table": name, "release_rows": len(part), "classes": int(part[target].nunique()),
            "svm_original": base, "groupings": rows}


def markdown(tables: list[dict]) -> str:
    lines = ["| table | per-k grouping | partitioned group sizes | cells, median cuts | svm "
             "loss, median cuts | cells, class-informed | svm loss, class-informed | "
             "cells, median, 5 rows | svm loss, median, 5 rows |", "|" + "---|" * 9]
    for t in tables:
        for r in t["groupings"]:
            m, i, f = r["median"], r["informed"], r["median_k"]
            lines.append(f"| {t['table']} | k={r['k']} | {r['group_sizes']} | {m['cells']} | "
                         f"{m['loss']:+.3f} | {i['cells']} | {i['loss']:+.3f} | "
                         f"{f['cells']} | {f['loss']:+.3f} |")
    lines += ["", "Best per table (the lowest loss over the groupings):", ""]
    for t in tables:
        for rule in ("median", "informed", "median_k"):
            best = min(t["groupings"], key=lambda r: r[rule]["loss"])
            lines.append(f"* {t['table']} ({t['release_rows']} rows, {t['classes']} "
                         f"classes), {rule} cuts: {best[rule]['loss']:+.3f} (per-k k="
                         f"{best['k']})")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    args = ap.parse_args()
    t0 = time.perf_counter()
    tables = []
    for name in args.tables.split(","):
        print(f"{name} ...", flush=True)
        tables.append(run_table(name))
    from astrid_airflow.io import atomic_write_text, plain

    RESULTS.mkdir(exist_ok=True)
    payload = {"tables": tables, "seeds": len(SEEDS), "k": 5, "seconds":
               round(time.perf_counter() - t0, 1)}
    atomic_write_text(RESULTS / "partition_cuts.json",
                      json.dumps(plain(payload), indent=1) + "\n", overwrite=True)
    text = ("# Median against class-informed Mondrian cuts (issue 32)\n\n"
            "Singletons raw; each multi-column group partitioned with >= 2 classes and "
            ">= 15 rows of each per cell (k = 5 times the batch margin 3, as the release fit "
            "asks), and without the margin (5 rows, median cuts, the last two columns; "
            "`median_k` below); svm loss on the control part, mean of "
            f"{len(SEEDS)} shuffles.\n\n" + markdown(tables))
    atomic_write_text(RESULTS / "partition_cuts.md", text, overwrite=True)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
