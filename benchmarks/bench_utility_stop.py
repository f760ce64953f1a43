"""How often the sequential utility stop refuses a candidate the full scoring would keep.

The release choice scores a candidate's accuracy on ``planned`` splits but stops at a
checkpoint once the mean drop over all of them is certain to exceed
``max_accuracy_drop`` (``surrogate_utility(refuse_above=)``). A **false stop** is a
stop where the full scoring's drop is at or below the threshold: the candidate would
have passed utility. The rule allows about 1e-4 per look under a normal approximation;
this measures it on real splits.

For each table, grouping and seed the full scoring runs once (``planned`` splits, no
stop); then the same call with ``refuse_above`` at thresholds around that drop
(``full + delta``). With ``delta >= 0`` every stop is false; with ``delta < 0`` a stop
is right and the splits it saves are counted. Groupings: every attribute alone (the
shuffle breaks every interaction: large drops), pairs of attributes in table order, and
the whole table in one group (no drop): the spread of drops a choice meets.

Run: ``nice -n 10 .venv/bin/python benchmarks/bench_utility_stop.py [--tables
credit-a,diabetes,people-2000] [--seeds 20]``. Writes ``results/utility_stop.{json,md}``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from _benchlib import write_results  # noqa: E402
from bench_choice_speed import table_by_name  # noqa: E402  (one loader per table name)

DELTAS = (-0.03, -0.01, 0.0, 0.005, 0.01)


def _groupings(attrs: list[str]) -> dict[str, list[list[str]]]:
    pairs = [attrs[i:i + 2] for i in range(0, len(attrs), 2)]
    return {"singletons": [[a] for a in attrs], "pairs": pairs, "whole": [list(attrs)]}


def run(tables: list[str], seeds: int, planned: int, classifier: str) -> dict:
    from astrid_airflow import surrogate_utility

    rows = []
    for name in tables:
        table, target = table_by_name(name)
        attrs = [c for c in table.columns if c != target]
        for label, grouping in _groupings(attrs).items():
            for seed in range(seeds):
                common = {"target": target, "classifier": classifier, "random_state": seed,
                          "n_repeats": planned, "remedies": False}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    full = surrogate_utility(table, grouping, **common)
                    drop = full.accuracy_original - full.accuracy_surrogate
                    for delta in DELTAS:
                        thr = drop + delta
                        u = surrogate_utility(table, grouping, refuse_above=thr, **common)
                        rows.append({"table": name, "grouping": label, "seed": seed,
                                     "full_drop": drop, "delta": delta, "threshold": thr,
                                     "splits": u.n_repeats,
                                     "stopped": u.n_repeats < planned})
            print(f"{name} {label}: done", file=sys.stderr, flush=True)
    return {"tables": tables, "seeds": seeds, "planned": planned, "classifier": classifier,
            "rows": rows}


def summary(result: dict) -> list[dict]:
    out = []
    for delta in DELTAS:
        sel = [r for r in result["rows"] if r["delta"] == delta]
        stops = [r for r in sel if r["stopped"]]
        out.append({"delta": delta, "runs": len(sel), "stops": len(stops),
                    "false_stops": sum(r["full_drop"] <= r["threshold"] for r in stops),
                    "mean_splits": sum(r["splits"] for r in sel) / max(len(sel), 1)})
    return out


def markdown(result: dict) -> str:
    lines = ["# The sequential utility stop: false stops and splits saved", "",
             f"`bench_utility_stop.py`: tables {', '.join(result['tables'])}; groupings "
             f"singletons, pairs, whole; {result['seeds']} seeds each; "
             f"{result['planned']} planned splits; classifier {result['classifier']}; "
             f"{result['seconds']} s on {result['machine']}.", "",
             "A run's threshold is its full scoring's drop plus delta. With delta >= 0 "
             "every stop is false (the full scoring keeps the candidate); with delta < 0 "
             "a stop is right.", "",
             "| delta | runs | stops | false stops | mean splits scored |",
             "|---:|---:|---:|---:|---:|"]
    for s in summary(result):
        lines.append(f"| {s['delta']:+.3f} | {s['runs']} | {s['stops']} | "
                     f"{s['false_stops']} | {s['mean_splits']:.1f} |")
    by = {}
    for r in result["rows"]:
        by.setdefault((r["table"], r["grouping"]), []).append(r["full_drop"])
    lines += ["", "Full drops per table and grouping (mean over seeds, range):", "",
              "| table | grouping | mean drop | min | max |", "|---|---|---:|---:|---:|"]
    for (t, g), d in by.items():
        lines.append(f"| {t} | {g} | {sum(d) / len(d):.3f} | {min(d):.3f} | {max(d):.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="credit-a,diabetes,people-2000")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--planned", type=int, default=12)
    ap.add_argument("--classifier", default="svm")
    ap.add_argument("--out", default=str(RESULTS / "utility_stop"))
    a = ap.parse_args(argv)
    started = time.perf_counter()
    result = run(a.tables.split(","), a.seeds, a.planned, a.classifier)
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["machine"] = f"{platform.machine()}, {platform.python_version()}"
    result["summary"] = summary(result)
    write_results(a.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
