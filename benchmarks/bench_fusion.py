"""Fused training rows against original ones (the paper's Sec. 6.3), over many splits.

For each train/held-out split of a table (a third held out, stratified): learn the
grouping on the training rows, give each group's questionnaire to a different random
half of the training rows, fuse the parts by class (``fuse_parts``), train the svm
preset and score it on the held-out rows; compare with the same number of original
training rows per class. The negative control pairs rows across classes (the class from
one part, in turn), which the same criterion must tell apart: fusion keeps the accuracy
only if the grouping holds the interactions the class needs.

Recorded per table: the mean accuracy of fused, original and across-class rows, the
fused-minus-original difference with its standard error over the splits, and the
control's gap. ``tests/scale/test_fusion.py`` keeps the fusion's exact properties (per
class multisets, seeds, bad input); ``tests/project/test_bench_smoke.py`` runs this on
one split.

Run: ``.venv/bin/python benchmarks/bench_fusion.py [--tables credit-a] [--splits 10]
[--reps 6]``. Writes ``results/fusion.{json,md}``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from _benchlib import write_results  # noqa: E402


def _accuracy(train: pd.DataFrame, test: pd.DataFrame, target: str, seed: int) -> float:
    from astrid_airflow import make_classifier

    clf = make_classifier("svm", random_state=seed)
    clf.fit(train.drop(columns=target), train[target])
    return float(np.mean(clf.predict(test.drop(columns=target)) == test[target].to_numpy()))


def run_split(table: pd.DataFrame, target: str, split: int, seeds: np.random.SeedSequence,
              reps: int) -> dict[str, list]:
    """One split's accuracies of fused, original and across-class training rows, and
    each fusion's rows and whether it drew any with replacement."""
    from sklearn.model_selection import train_test_split

    from astrid_airflow import GroupingArtefact, astrid, fuse_parts

    tr, te = train_test_split(np.arange(len(table)), test_size=1 / 3,
                              stratify=table[target], random_state=split)
    train, test = table.iloc[tr].reset_index(drop=True), table.iloc[te]
    result = astrid(train, target=target, classifier="svm", n_search=2, n_test=20,
                    random_state=split, progress=False)
    art = GroupingArtefact.from_result(result, train)
    if art.k < 2:
        raise SystemExit(f"split {split}: a grouping of one group leaves nothing to fuse")
    rng = np.random.default_rng(seeds)
    y = train[target].to_numpy()
    scores: dict[str, list] = {"fused": [], "original": [], "across": [], "rows": [],
                               "replaced": []}
    for rep in range(reps):
        parts = [train.iloc[rng.choice(len(train), len(train) // 2, replace=False)]
                 [[*g, target]] for g in art.grouping.groups]
        fused, report = fuse_parts(parts, art, random_state=rng.integers(2**32))
        scores["rows"].append(report.rows)
        scores["replaced"].append(bool(report.any_replacement))
        original = train.iloc[np.concatenate([
            rng.choice(np.flatnonzero(y == c), n, replace=False)
            for c, n in report.rows_per_class.items()])]
        drawn = [p.iloc[rng.choice(len(p), report.rows, replace=False)] for p in parts]
        across = pd.concat([d.drop(columns=target).reset_index(drop=True) for d in drawn],
                           axis=1)
        across[target] = drawn[rep % art.k][target].to_numpy()
        for name, frame in (("fused", fused), ("original", original),
                            ("across", across[list(table.columns)])):
            scores[name].append(_accuracy(frame, test, target, rep))
    return scores


def run_table(name: str, splits: int, reps: int) -> dict:
    import uci

    table, target = uci.load(name)
    per_split = [run_split(table, target, s, seeds, reps)
                 for s, seeds in enumerate(np.random.SeedSequence(2024).spawn(splits))]
    mean = {k: float(np.mean([v for s in per_split for v in s[k]]))
            for k in ("fused", "original", "across")}
    diffs = [np.mean(s["fused"]) - np.mean(s["original"]) for s in per_split]
    se = float(np.std(diffs, ddof=1) / np.sqrt(len(diffs))) if len(diffs) > 1 else None
    return {"table": name, "rows": len(table), "splits": splits, "reps": reps,
            "accuracy": {k: round(v, 4) for k, v in mean.items()},
            "fused_minus_original": round(mean["fused"] - mean["original"], 4),
            "fused_minus_original_se": None if se is None else round(se, 4),
            "original_minus_across": round(mean["original"] - mean["across"], 4),
            "fused_rows_min": int(min(v for s in per_split for v in s["rows"])),
            "fusions_with_replacement": int(sum(v for s in per_split for v in s["replaced"]))}


def markdown(result: dict) -> str:
    lines = ["# Fused training rows against original ones (Sec. 6.3)", "",
             "`benchmarks/bench_fusion.py`: svm preset, a third held out, each group's "
             "part from a random half of the training rows.", "",
             "| table | rows | splits × reps | fused | original | across classes | "
             "fused − original (± se) | original − across |", "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        se = "" if r["fused_minus_original_se"] is None else \
            f" ± {r['fused_minus_original_se']:.3f}"
        a = r["accuracy"]
        lines.append(f"| {r['table']} | {r['rows']:,} | {r['splits']} × {r['reps']} | "
                     f"{a['fused']:.3f} | {a['original']:.3f} | {a['across']:.3f} | "
                     f"{r['fused_minus_original']:+.3f}{se} | "
                     f"{r['original_minus_across']:+.3f} |")
    lines += ["", f"{result['seconds']} s on {result['machine']}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="credit-a")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--out", default=str(RESULTS / "fusion"))
    a = ap.parse_args(argv)
    started = time.perf_counter()
    result = {"rows": [run_table(t, a.splits, a.reps) for t in a.tables.split(",")]}
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["machine"] = f"{platform.machine()}, {platform.python_version()}"
    write_results(a.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
