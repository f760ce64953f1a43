"""Classifier presets side by side: accuracy and one-core cost per fit (issue 19).

    .venv/bin/python benchmarks/bench_presets.py                  # the paper's UCI data
    .venv/bin/python benchmarks/bench_presets.py --datasets diabetes --seeds 3
    .venv/bin/python benchmarks/bench_presets.py --planted       # hgb on make_planted

For every dataset and seed the engine's own 50 / 25 / 25 stratified split is drawn and
each preset is fitted on the training half and scored on the test quarter: the
baseline a0 of an ASTRID run (``Task("valid", None, ...)``, one thread per fit). The
figures are the mean accuracy over seeds and the median fit + predict time. Written to
``benchmarks/results/presets.{json,md}``. Not a timed test: a benchmark for the record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from uci import DATASETS, load  # noqa: E402

from astrid_airflow.engine import (  # noqa: E402
    Task,
    prepare,
    prepare_fit_data,
    run_one,
    stratified_split,
)

RESULTS = HERE / "results"


def measure(name: str, presets: list[str], seeds: int) -> list[dict]:
    table, target = load(name)
    prep = prepare(table, target, min_rows_per_class=4)
    X = prep.table[prep.attributes]
    rows = []
    for preset in presets:
        acc, ms = [], []
        for seed in range(seeds):
            split_ss, split2_ss, fit_ss = np.random.SeedSequence(seed).spawn(3)
            train, rest = stratified_split(prep.codes, 0.5, split_ss)
            _, valid_pos = stratified_split(prep.codes[rest], 0.5, split2_ss)
            valid = rest[valid_pos]
            data = prepare_fit_data(preset, X.iloc[train], prep.codes[train],
                                    {"valid": (X.iloc[valid], prep.codes[valid])},
                                    scoring="accuracy", n_classes=len(prep.classes))
            with threadpool_limits(limits=1):
                t0 = time.perf_counter()
                acc.append(run_one(data, Task("valid", None, fit_ss)))
                ms.append(1e3 * (time.perf_counter() - t0))
        rows.append({"dataset": name, "rows": len(prep.codes), "m": len(prep.attributes),
                     "classes": len(prep.classes), "preset": preset,
                     "accuracy": float(np.mean(acc)), "accuracy_sd": float(np.std(acc)),
                     "ms_per_fit": float(np.median(ms)), "seeds": seeds})
        print(f"{name:14s} {preset:4s} acc {rows[-1]['accuracy']:.3f} "
              f"(sd {rows[-1]['accuracy_sd']:.3f})  {rows[-1]['ms_per_fit']:8.1f} ms/fit",
              flush=True)
    return rows


def planted(out: Path, cols: int = 100, seeds: int = 5) -> None:
    """hgb's accuracy over training draws on ``make_planted`` (issue 19's wide table):
    its spread is the noise every race and every a0 of a search on such a sample sees.
    Written to ``hgb_planted.{json,md}``."""
    from sklearn.base import clone

    from astrid_airflow.engine import make_planted

    load_start = os.getloadavg()
    table, _ = make_planted(200_000, cols, random_state=0)
    X, y = table.drop(columns="class"), table["class"].to_numpy()
    held = np.arange(150_000, 160_000)
    rows = []
    for n in (5_000, 20_000):
        for params in ({}, {"learning_rate": 0.3}):
            acc, sec = [], []
            for seed in range(seeds):
                train = np.random.default_rng(seed).choice(150_000, n, replace=False)
                data = prepare_fit_data("hgb", X.iloc[train], y[train],
                                        {"valid": (X.iloc[held], y[held])},
                                        scoring="accuracy", n_classes=2, params=None)
                with threadpool_limits(limits=1):
                    model = clone(data.model).set_params(random_state=seed, **params)
                    t0 = time.perf_counter()
                    model.fit(data.X_train, data.y_train)
                    sec.append(time.perf_counter() - t0)
                    X_eval, y_eval = data.eval_sets["valid"]
                    acc.append(float(np.mean(np.asarray(model.predict(X_eval)) == y_eval)))
            rows.append({"train_rows": n, "params": params, "accuracy": acc,
                         "mean": float(np.mean(acc)), "sd": float(np.std(acc)),
                         "seconds": float(np.mean(sec))})
            print(rows[-1], flush=True)
    meta = {"table": f"make_planted(200,000, {cols}), eval rows 150,000-160,000",
            "load_average_start": load_start, "load_average_end": os.getloadavg()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "hgb_planted.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = ["| training rows | hgb params | accuracy per training draw | mean | sd | s/fit |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['train_rows']:,} | {r['params'] or 'defaults'} | "
              f"{', '.join(f'{a:.3f}' for a in r['accuracy'])} | {r['mean']:.3f} | "
              f"{r['sd']:.3f} | {r['seconds']:.2f} |" for r in rows]
    (out / "hgb_planted.md").write_text(
        f"hgb on {meta['table']}, one thread, {seeds} training draws; load average "
        f"{load_start[0]:.1f} at the start, {meta['load_average_end'][0]:.1f} at the end."
        "\n\n" + "\n".join(lines) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--planted", action="store_true",
                   help="only hgb's spread over training draws on make_planted")
    p.add_argument("--datasets", nargs="+", default=[d for d in DATASETS
                                                     if d != "soybean-clean"])
    p.add_argument("--presets", nargs="+", default=["svm", "rf", "nb", "hgb"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    if args.planted:
        planted(args.out)
        return
    rows = [r for d in args.datasets for r in measure(d, args.presets, args.seeds)]
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"load_average": os.getloadavg(), "cpu_count": os.cpu_count()}
    (args.out / "presets.json").write_text(json.dumps({"meta": meta, "rows": rows},
                                                      indent=2))
    lines = ["| dataset (rows x m, classes) | " + " | ".join(args.presets) + " |",
             "|---|" + "---|" * len(args.presets)]
    for d in args.datasets:
        cells = {r["preset"]: r for r in rows if r["dataset"] == d}
        first = next(iter(cells.values()))
        lines.append(f"| {d} ({first['rows']} x {first['m']}, {first['classes']}) | " +
                     " | ".join(f"{cells[q]['accuracy']:.3f} / {cells[q]['ms_per_fit']:.0f} ms"
                                for q in args.presets) + " |")
    text = ("Accuracy on the test quarter (mean over seeds) / median ms per fit + predict, "
            f"one thread; load average {meta['load_average'][0]:.1f}.\n\n" + "\n".join(lines))
    (args.out / "presets.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
