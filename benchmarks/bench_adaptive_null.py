"""Validity of the adaptive (sequential) p-values under a true null grouping.

Datasets whose attributes are independent within each class (two classes of 30 rows,
``x1`` and ``x3`` carry a class-dependent mean, ``x2`` is noise), so the singleton
grouping ``x1;x2;x3`` is true. :func:`astrid_airflow.test_grouping` with
``adaptive=True`` and R = 250 on each: the rate of ``p <= 0.05`` must stay within
alpha + its Monte Carlo margin (three standard errors; the adaptive test's null
rejection rate is 0.048 in closed form), and the test must spend far fewer fits than
the exact test's 251 per p-value.

Run ``python benchmarks/bench_adaptive_null.py`` (1,200 datasets, about 1-2 minutes);
it writes ``benchmarks/results/adaptive_null.json`` and ``.md``.
``tests/engine/test_adaptive.py`` runs :func:`null_rejections` on fewer datasets with a
fixed seed, and ``tests/project/test_bench_smoke.py`` runs this script on a few.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from astrid_airflow import test_grouping

ALPHA = 0.05
RESULTS = Path(__file__).resolve().parent / "results"


def null_rejections(reps: int, *, seed: int = 2024, n_permutations: int = 250
                    ) -> dict:
    """``reps`` null datasets tested adaptively: rejections, rate, its bound and fits."""
    rng = np.random.default_rng(seed)
    rejections, fits = 0, 0
    for i in range(reps):
        y = np.repeat([0, 1], 30)
        t = pd.DataFrame({"x1": rng.normal(0.8 * y, 1.0), "x2": rng.normal(0.0, 1.0, 60),
                          "x3": rng.normal(-0.5 * y, 1.0), "class": y})
        r = test_grouping(t, target="class", grouping="x1;x2;x3",
                          n_permutations=n_permutations, adaptive=True, random_state=i)
        rejections += r.p_value <= ALPHA
        fits += r.n_fits
    return {"datasets": reps, "rejections": int(rejections), "rate": rejections / reps,
            "bound": ALPHA + 3 * float(np.sqrt(ALPHA * (1 - ALPHA) / reps)),
            "fits_per_test": fits / reps, "exact_fits_per_test": n_permutations + 1}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--out", default=str(RESULTS / "adaptive_null"))
    args = ap.parse_args(argv)
    started = time.perf_counter()
    row = null_rejections(args.datasets, seed=args.seed)
    row["ok"] = row["rate"] <= row["bound"]
    settings = {"machine": f"{platform.machine()} {os.cpu_count()} cpu",
                "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d"),
                "seconds": time.perf_counter() - started, "args": vars(args)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({**row, "settings": settings},
                                                   indent=2) + "\n")
    md = ["# Adaptive p-values under a true null grouping", "",
          f"{settings['machine']}, Python {settings['python']}, {settings['date']}, "
          f"{settings['seconds']:.0f} s.", "",
          "| datasets | rejections (p <= 0.05) | rate | bound (alpha + 3 se) | fits per test "
          "(exact: 251) |", "|---|---|---|---|---|",
          f"| {row['datasets']} | {row['rejections']} | {row['rate']:.4f} | "
          f"{row['bound']:.4f} | {row['fits_per_test']:.1f} |"]
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
