"""The cost estimate against the real time, on small runs (issue 19).

    .venv/bin/python benchmarks/bench_estimate.py

``astrid`` times a few fits before the search and estimates the run (fits x seconds per
fit / workers); every result records the estimate and the actual search time
(``estimate``). This runs a handful of small configurations (a few seconds each) and
writes ``benchmarks/results/estimate.{json,md}``: estimate, actual, ratio, with the load
average. Not a timed test.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from uci import load  # noqa: E402

from astrid_airflow import astrid, make_synthetic  # noqa: E402

RESULTS = HERE / "results"

CONFIGS = [  # (data, classifier, R', R, n_jobs, adaptive): ~2 minutes in all
    ("synthetic", "svm", 20, 40, 1, False),
    ("synthetic", "svm", 20, 40, 2, False),
    ("synthetic", "nb", 30, 60, 1, False),
    ("synthetic", "rf", 2, 3, 1, False),
    ("synthetic", "hgb", 2, 3, 1, False),
    ("synthetic", "hgb", 2, 3, 2, False),
    ("diabetes", "svm", 10, 25, 1, False),
    ("diabetes", "svm", 10, 25, 2, False),
    ("synthetic", "svm", 100, 250, 1, True),
    ("diabetes", "svm", 100, 250, 2, True),
]


def main() -> None:
    rows = []
    for name, clf, r_search, r_test, jobs, adaptive in CONFIGS:
        table, target = (make_synthetic(random_state=0), "class") if name == "synthetic" \
            else load(name)
        load_start = os.getloadavg()[0]
        r = astrid(table, target=target, classifier=clf, n_search=r_search, n_test=r_test,
                   n_jobs=jobs, adaptive=adaptive, random_state=0, progress=False)
        e = r.estimate
        rows.append({"data": name, "classifier": clf, "r_search": r_search,
                     "r_test": r_test, "n_jobs": jobs, "adaptive": adaptive,
                     "fits_estimated": e["fits"], "fits_kind": e["fits_kind"],
                     "fits_run": e["fits_run"], "ms_per_fit": 1e3 * e["seconds_per_fit"],
                     "calibration_fits": e["calibration_fits"],
                     "estimated_s": e["seconds"], "actual_s": e["actual_seconds"],
                     "ratio": e["ratio"], "load": [load_start, os.getloadavg()[0]]})
        print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "estimate.json").write_text(json.dumps(rows, indent=2))
    lines = ["| data | clf | R' / R | n_jobs | mode | fits est. / run | ms per fit | "
             "estimated s | actual s | actual / est. | load |", "|---" * 11 + "|"]
    for x in rows:
        lines.append(
            f"| {x['data']} | {x['classifier']} | {x['r_search']} / {x['r_test']} | "
            f"{x['n_jobs']} | {'adaptive' if x['adaptive'] else 'exact'} | "
            f"{x['fits_estimated']:,} / {x['fits_run']:,} | {x['ms_per_fit']:.1f} | "
            f"{x['estimated_s']:.1f} | {x['actual_s']:.1f} | {x['ratio']:.2f} | "
            f"{x['load'][0]:.1f}-{x['load'][1]:.1f} |")
    (RESULTS / "estimate.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
