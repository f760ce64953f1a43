"""The triple screen's error rates and cost: how often it merges a triple that has no
three-way interaction, how often it finds a pure parity triple, and its seconds.

Tables: ``make_planted(rows, width, n_parity=...)`` (pairs, the pairwise-visible triple,
two single signals and noise). For each seed the pair screen runs first and the triple
screen on its blocks, as in the search (``engine._screen``):

* null: ``n_parity=0``: every triple tested has no three-way term; a found triple is a
  false merge (the family-wise rate the Bonferroni threshold bounds at about 0.001);
* power: ``n_parity=1``: whether the parity triple is found, per number of rows.

Run ``python benchmarks/bench_triple_screen.py`` (about 3 minutes on 2 cores); it writes
``benchmarks/results/triple_screen.json`` and ``.md``. ``tests/project/test_bench_smoke.py``
runs it with ``--seeds 1 --rows 2000 --widths 8``.
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

from astrid_airflow import make_planted
from astrid_airflow.engine import blocks_of, screen_pairs, screen_triples

RESULTS = Path(__file__).resolve().parent / "results"


def one(rows: int, width: int, n_parity: int, seed: int) -> dict:
    """The pair and triple screens on one planted table: what the triples found."""
    table, planted = make_planted(rows, width, n_parity=n_parity, random_state=seed)
    X, y = table.drop(columns="class"), table["class"].to_numpy()
    started = time.perf_counter()
    out = screen_triples(X, y, blocks_of(screen_pairs(X, y)))
    seconds = time.perf_counter() - started
    found = [sorted(X.columns[[i, j, k]]) for _, i, j, k in out["found"]]
    parity = [sorted(g) for g in planted if g[0].startswith("q")]
    return {"rows": rows, "width": width, "n_parity": n_parity, "seed": seed,
            "tested": out["tested"], "found": found,
            "false": [f for f in found if f not in parity],
            "parity_found": all(g in found for g in parity), "seconds": seconds}


def summary(runs: list[dict]) -> list[dict]:
    """Per (rows, width, n_parity): the false-merge and detection rates, mean seconds."""
    keys = sorted({(r["rows"], r["width"], r["n_parity"]) for r in runs})
    out = []
    for rows, width, n_parity in keys:
        rs = [r for r in runs if (r["rows"], r["width"], r["n_parity"]) == (rows, width,
                                                                            n_parity)]
        out.append({"rows": rows, "width": width, "n_parity": n_parity, "seeds": len(rs),
                    "tested": rs[0]["tested"],
                    "runs_with_a_false_triple": sum(bool(r["false"]) for r in rs),
                    "parity_found": sum(r["parity_found"] for r in rs) if n_parity else None,
                    "seconds_mean": sum(r["seconds"] for r in rs) / len(rs)})
    return out


def _markdown(rows: list[dict], settings: dict) -> str:
    out = ["# The triple screen: false merges, power and cost", "",
           f"{settings['machine']}, Python {settings['python']}, {settings['date']}; "
           "`benchmarks/bench_triple_screen.py`. Null: no parity planted, a found triple "
           "is false. Power: one pure parity triple planted.", "",
           "| rows | width | parity planted | seeds | triples tested | runs with a false "
           "triple | parity found | s per screen |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        found = "-" if r["parity_found"] is None else f"{r['parity_found']}/{r['seeds']}"
        out.append(f"| {r['rows']:,} | {r['width']} | {r['n_parity']} | {r['seeds']} | "
                   f"{r['tested']:,} | {r['runs_with_a_false_triple']}/{r['seeds']} | "
                   f"{found} | {r['seconds_mean']:.2f} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[2_000, 5_000, 20_000])
    ap.add_argument("--widths", type=int, nargs="+", default=[20, 40])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", default=str(RESULTS / "triple_screen"))
    args = ap.parse_args(argv)
    runs = [one(rows, width, n_parity, seed) for rows in args.rows for width in args.widths
            for n_parity in (0, 1) for seed in range(args.seeds)]
    table = summary(runs)
    for r in table:
        print(json.dumps(r), flush=True)
    settings = {"machine": f"{platform.machine()} {os.cpu_count()} cpu",
                "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d"),
                "args": vars(args)}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(
        {"summary": table, "runs": runs, "settings": settings}, indent=2) + "\n")
    out.with_suffix(".md").write_text(_markdown(table, settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
