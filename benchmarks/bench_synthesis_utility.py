"""Accuracy of a whole table synthesised as one group (issue 51), with and without a
differential-privacy budget.

Each table of the paper (``benchmarks/uci.py``, cleaned) is treated as one group, every
column synthesised by the release recipe (``fit_recipe(method="synthesise")``, the
model refitted on each utility split's training part), and scored as the gate scores a
release (``surrogate_utility``: svm, held-out real rows). The second figure is with
epsilon 1 and delta min(1e-6, 0.1 / rows). It isolates the model from the grouping:
the release choice's own figures are what ``astrid learn --json`` reports.

Run: ``.venv/bin/python benchmarks/bench_synthesis_utility.py [--tables a,b]
[--repeats 5]``; prints one line per table and budget.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import uci

TABLES = ("credit-a", "diabetes", "kr-vs-kp", "balance-scale", "soybean", "vehicle",
          "segment", "vowel")


def drop(name: str, epsilon: float | None, repeats: int) -> tuple[float, list[str]]:
    from astrid_airflow import Grouping, fit_recipe
    from astrid_airflow.release import surrogate_utility

    table, target = uci.load(name)
    grouping = Grouping([[c for c in table.columns if c != target]])
    budget = None if epsilon is None else (epsilon, min(1e-6, 0.1 / len(table)))

    def fitter(rows):
        return fit_recipe(rows, target=target, grouping=grouping, method="synthesise",
                          random_state=1, synthesis_budget=budget)[0]

    recipe = fitter(table)
    u = surrogate_utility(table, grouping, target=target, classifier="svm",
                          random_state=0, n_repeats=repeats, recipe=recipe,
                          recipe_fitter=fitter)
    models = [s["model"] for s in recipe.steps if s["method"] == "synthesise"]
    return u.accuracy_original - u.accuracy_surrogate, models


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    for name in args.tables.split(","):
        for epsilon in (None, 1.0):
            loss, models = drop(name, epsilon, args.repeats)
            print(f"{name}: epsilon {epsilon}: accuracy drop {loss:.3f} ({models})",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
